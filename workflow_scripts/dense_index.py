"""Rule dense_index: the corpus's dense_encode shards -> one FAISS index, in shard order."""

from cruxflow.retrieval.dense import gather_index
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
index = gather_index(list(sm.input), sm.output[0])
n = len((index / "docid").read_text().splitlines())
log.info("gathered %d passages from %d shards", n, sm.params.shards)

"""Rule corpus: the passages of the corpus's datasets -> one JsonCollection file."""

from cruxflow.retrieval.corpus import merge_passages, write_collection
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
texts = merge_passages(list(sm.input))
n = write_collection(texts, sm.output[0])
log.info("corpus %s: %d passages from %d datasets", sm.wildcards.corpus, n, len(sm.input))

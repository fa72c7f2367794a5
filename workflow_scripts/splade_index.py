"""Rule splade_index: the corpus's splade_encode shards -> one Lucene impact index."""

from cruxflow.retrieval.splade import index_shards
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
index_shards(list(sm.input), sm.output[0], threads=sm.threads)
log.info("indexed the SPLADE vectors of %d shards", sm.params.shards)

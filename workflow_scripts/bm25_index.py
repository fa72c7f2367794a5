"""Rule bm25_index: the corpus (a JsonCollection) -> a Lucene index."""

from pathlib import Path

from cruxflow.retrieval.bm25 import build_index
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
build_index(Path(sm.input[0]).parent, sm.output[0], threads=sm.threads)
log.info("indexed %s into %s", sm.input[0], sm.output[0])

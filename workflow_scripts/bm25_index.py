"""Rule bm25_index: the dataset's passages -> a Lucene index."""

from pathlib import Path

from cruxflow.retrieval.bm25 import build_index
from cruxflow.workflow import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
build_index(Path(sm.input.passages).parent, sm.output[0], threads=sm.threads)
log.info("indexed %s into %s", sm.input.passages, sm.output[0])

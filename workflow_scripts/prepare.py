"""Rule prepare: ingested corpus (+ the LLM stages' outputs) -> the dataset the metrics read."""

from pathlib import Path

from cruxflow.data.model import Dataset
from cruxflow.stages.prepare import assemble
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
ingested = Dataset.load(Path(sm.input.manifest).parent)
if "report_requests" in sm.input.keys():
    dataset = assemble(ingested, passage_files=sm.input.passages_shards,
                       report_requests=sm.input.report_requests,
                       subquestions=sm.input.subquestions,
                       rating_files=sm.input.ratings_shards,
                       reference_files=sm.input.reference_shards,
                       manifest={"generated": True})
else:
    dataset = ingested
counts = dataset.save(Path(sm.output.manifest).parent)
log.info("prepared %s", counts)

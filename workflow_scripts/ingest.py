"""Rule ingest: raw corpus -> dataset directory, with the options the format registry built
from the dataset's entry (rules/common.smk ingest_options)."""

from pathlib import Path

from cruxflow.data.ingest import IngestOptions, ingest_to
from cruxflow.workflow.job import setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
summary = ingest_to(p.format, snakemake.input[0], Path(snakemake.output.manifest).parent,  # noqa: F821
                    IngestOptions(**p.options), eta=None)
log.info("ingested %s", summary)
for note in summary.get("notes", []):
    log.info("note: %s", note)

"""Rule ingest: raw corpus -> dataset directory."""

from pathlib import Path

from cruxflow.data.ingest import IngestOptions, ingest_to
from cruxflow.workflow.job import setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
options = IngestOptions(prefix=p.prefix, id_scheme=p.id_scheme, min_docs=p.min_docs,
                        encoding=p.encoding, summary_length=p.summary_length,
                        reference=p.reference, count_empty_documents=p.count_empty_documents,
                        chunk_documents=p.chunk_documents,
                        max_document_words=p.max_document_words, chunk_words=p.chunk_words,
                        corpus=p.corpus)
summary = ingest_to(p.format, snakemake.input[0], Path(snakemake.output.manifest).parent,  # noqa: F821
                    options, distractors=p.distractors, eta=None,
                    max_topics=p.max_topics)
log.info("ingested %s", summary)

"""Readers that turn raw corpora into the CRUX data model (:class:`cruxflow.data.model.Dataset`),
one module per source format, and :func:`ingest_to`, which reads, validates and writes one
corpus as a dataset directory."""

from __future__ import annotations

import shutil
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions
from cruxflow.data.ingest.crux import crux_runs, read_crux
from cruxflow.data.ingest.distractors import read_distractors
from cruxflow.data.ingest.duc2004 import read_duc2004
from cruxflow.data.ingest.multinews import read_multinews, read_multinews_src
from cruxflow.data.io import read_run

READERS = {
    "multinews": read_multinews,
    "multinews-src": read_multinews_src,
    "duc2004": read_duc2004,
    "crux": read_crux,
}

__all__ = ["READERS", "IngestOptions", "read_distractors", "ingest", "ingest_to"]


def ingest(fmt: str, path, options: IngestOptions | None = None):
    """Read ``path`` in format ``fmt`` and return ``(Dataset, report)``."""
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(READERS)}")
    return READERS[fmt](path, options or IngestOptions())


def ingest_to(fmt: str, src, out, options: IngestOptions, *, distractors=None,
              eta: int | None = 3, alpha: float = 0.5, max_topics: int | None = None) -> dict:
    """Read, validate and write one corpus; return the summary printed by the CLI."""
    if distractors and fmt == "crux":
        raise DataError("--distractors does not apply to the crux format: its passages.jsonl "
                        "already holds the whole corpus", path=distractors)
    from cruxflow.stages.judgments import derive, write_judgments

    dataset, report = ingest(fmt, src, options)
    if max_topics is not None:
        dataset = dataset.head(max_topics)
    runs = crux_runs(src, options) if fmt == "crux" else []
    for run in runs:
        read_run(run)  # validate everything before writing anything
    if distractors:
        for doc in read_distractors(distractors, f"{options.prefix}-distractors",
                                    options.encoding):
            dataset.documents[doc.doc_id] = doc
    counts = dataset.save(out, extra_manifest={"ingest": report.to_json(),
                                               "prefix": options.prefix,
                                               "max_topics": max_topics})
    summary = {"output": str(out), **counts,
               "clusters_skipped": len(report.clusters_skipped),
               "empty_articles_skipped": report.empty_articles_skipped}
    if report.layout is not None:  # the CRUX reader says which published layout it read
        summary.update(layout=report.layout, notes=report.notes)
    if dataset.ratings and eta is not None:
        jdir = Path(out) / "judgments" / f"eta{eta}"
        summary["judgments"] = write_judgments(derive(dataset, eta, alpha), dataset, jdir, eta)
    if fmt == "crux":
        for run in runs:
            dest = Path(out) / "runs" / run.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run, dest)
        summary["runs"] = len(runs)
    return summary

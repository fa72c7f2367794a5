"""Readers that turn raw corpora into the CRUX data model (:class:`cruxflow.model.Dataset`)."""

from __future__ import annotations

from cruxflow.ingest.common import IngestOptions
from cruxflow.ingest.crux import read_crux
from cruxflow.ingest.distractors import read_distractors
from cruxflow.ingest.duc2004 import read_duc2004
from cruxflow.ingest.multinews import read_multinews, read_multinews_src

READERS = {
    "multinews": read_multinews,
    "multinews-src": read_multinews_src,
    "duc2004": read_duc2004,
    "crux": read_crux,
}

__all__ = ["READERS", "IngestOptions", "read_distractors", "ingest"]


def ingest(fmt: str, path, options: IngestOptions | None = None):
    """Read ``path`` in format ``fmt`` and return ``(Dataset, report)``."""
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(READERS)}")
    return READERS[fmt](path, options or IngestOptions())

"""Readers that turn raw corpora into the CRUX data model (:class:`cruxflow.data.model.Dataset`),
one module per source format, declared in the format registry (:mod:`.formats`), and
:func:`ingest_to` (:mod:`.write`), which reads, validates and writes one corpus as a dataset
directory. This package's faces: :func:`ingest`, :func:`ingest_to`, :class:`IngestOptions`,
:data:`READERS`, :func:`is_our_manifest` and, imported when first asked for,
:func:`read_distractors`.
"""

from __future__ import annotations

from cruxflow.data.ingest.formats import READERS, IngestOptions, ingest
from cruxflow.data.ingest.write import ingest_to, is_our_manifest


def __getattr__(name: str):
    if name == "read_distractors":
        from cruxflow.data.ingest.distractors import read_distractors

        return read_distractors
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["READERS", "IngestOptions", "ingest", "ingest_to", "is_our_manifest",
           "read_distractors"]

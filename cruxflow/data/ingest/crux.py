"""The files the CRUX authors released, so their data and ours interoperate.

A directory with:

* ``topics.jsonl``: ``{"qid", "topic" (the open-ended query), "questions", "docids", "report"}``
  (the release's loader also uses ``id`` / ``request`` / ``subtopics``; both spellings are read);
* ``passages.jsonl`` (or ``corpus.jsonl``): ``{"id", "contents"}``, ids ``<topic>:<doc>#<n>``;
* ``judgements.jsonl`` (optional): ``{"example_id", "pid", "rating": [one 0-5 per question]}``;
* ``runs/`` (optional): TREC run files, validated and copied by ``cruxflow ingest``.
"""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions, IngestReport
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import Dataset, Passage, Topic, parse_passage_id, parse_ratings

_ALIASES = {"qid": ("qid", "id"), "topic": ("topic", "request"),
            "questions": ("questions", "subtopics"), "report": ("report",),
            "docids": ("docids",)}


def _get(obj: dict, name: str, where: dict, *, required: bool = True):
    for key in _ALIASES[name]:
        if key in obj and obj[key] is not None:
            return obj[key]
    if required:
        raise DataError("missing (also looked for " + ", ".join(_ALIASES[name][1:]) + ")"
                        if len(_ALIASES[name]) > 1 else "missing", field=name, **where)
    return None


def _first_existing(root: Path, names: tuple[str, ...], required: bool):
    for n in names:
        if (root / n).is_file():
            return root / n
    if required:
        raise DataError(f"no {' or '.join(names)} in the CRUX directory", path=root)
    return None


def read_crux(path, options: IngestOptions) -> tuple:
    root = Path(path)
    if not root.is_dir():
        raise DataError("expected a directory with topics.jsonl and passages.jsonl", path=root)
    report = IngestReport("crux", str(root))
    tpath = _first_existing(root, ("topics.jsonl",), True)
    ppath = _first_existing(root, ("passages.jsonl", "corpus.jsonl"), True)
    jpath = _first_existing(root, ("judgements.jsonl", "judgments.jsonl"), False)

    passages: dict[str, Passage] = {}
    by_topic: dict[str, list[str]] = {}
    for lineno, obj in iter_jsonl(ppath, options.encoding):
        where = {"path": ppath, "record": f"line {lineno}"}
        pid, text = obj.get("id"), obj.get("contents")
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("missing or not a string", field="id", **where)
        if not isinstance(text, str) or not text.strip():
            raise DataError("missing or empty", field="contents", **where)
        if pid in passages:
            raise DataError(f"duplicate passage id {pid!r}", field="id", **where)
        try:
            tid, doc, _ = parse_passage_id(pid)
            did = f"{tid}:{doc}"
            by_topic.setdefault(tid, []).append(did)
        except ValueError:
            tid = did = None  # a corpus passage outside the <topic>:<doc>#<n> scheme
        passages[pid] = Passage(pid, text, tid, did)

    topics: dict[str, Topic] = {}
    for lineno, obj in iter_jsonl(tpath, options.encoding):
        where = {"path": tpath, "record": f"line {lineno}"}
        tid = _get(obj, "qid", where)
        if not isinstance(tid, str) or not tid.strip():
            raise DataError("not a non-empty string", field="qid", **where)
        if tid in topics:
            raise DataError(f"duplicate topic {tid!r}", field="qid", **where)
        questions = _get(obj, "questions", where)
        if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
            raise DataError("must be a list of strings", field="questions", **where)
        report_text = _get(obj, "report", where)
        if not isinstance(report_text, str) or not report_text.strip():
            raise DataError("missing or empty", field="report", **where)
        docids = _get(obj, "docids", where, required=False)
        if docids is not None and (not isinstance(docids, list)
                                   or not all(isinstance(d, str) for d in docids)):
            raise DataError("must be a list of strings", field="docids", **where)
        if docids is None:
            docids = list(dict.fromkeys(by_topic.get(tid, [])))
        topics[tid] = Topic(tid, report_text, list(docids), query=_get(obj, "topic", where),
                            questions=list(questions), source_id=tid)
        report.clusters_read += 1

    ratings: dict[tuple[str, str], list[int]] = {}
    if jpath is not None:
        for lineno, obj in iter_jsonl(jpath, options.encoding):
            where = {"path": jpath, "record": f"line {lineno}"}
            tid, pid = obj.get("example_id"), obj.get("pid")
            if not isinstance(tid, str) or tid not in topics:
                raise DataError(f"unknown topic {tid!r}", field="example_id", **where)
            if not isinstance(pid, str) or pid not in passages:
                raise DataError(f"unknown passage {pid!r}", field="pid", **where)
            if "rating" not in obj:
                raise DataError("missing", field="rating", **where)
            r = parse_ratings(obj["rating"], where, name="rating")
            n = len(topics[tid].questions)
            if len(r) != n:
                raise DataError(f"{len(r)} ratings but topic {tid} has {n} questions",
                                field="rating", **where)
            if (tid, pid) in ratings:
                raise DataError(f"passage {pid!r} judged twice", field="pid", **where)
            ratings[(tid, pid)] = r
    return Dataset(topics, {}, passages, ratings), report


def crux_runs(path) -> list[Path]:
    """The run files shipped in a CRUX directory's ``runs/`` folder, if any."""
    d = Path(path) / "runs"
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []

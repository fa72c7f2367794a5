"""KPR's data model (questions with their documents, key points and response; entailment
judgments) and the readers of its two input files, every error naming file, line and field."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl

log = logging.getLogger(__name__)


@dataclass
class SourceDocument:
    id: str
    text: str


@dataclass
class KeyPoint:
    """A key point. ``spans``: verbatim evidence given by the extractor; ``spans_found[i]``:
    whether ``spans[i]`` occurs in its source text (whitespace-normalised). ``sources``: ids of
    the documents it was extracted from (after deduplication, all of them). ``score``: the
    AutoDS score (Eq. 3) when the filter ran."""

    id: str
    text: str
    spans: list[str] = field(default_factory=list)
    spans_found: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    round: int | None = None
    score: float | None = None
    merged_from: list[str] = field(default_factory=list)

    @property
    def span_found(self) -> bool | None:
        """At least one span occurs verbatim in the source (``False`` for an extracted point
        without span); ``None`` for a given point whose spans were not checked."""
        if not self.spans:
            return None if self.round is None else False
        if len(self.spans_found) != len(self.spans):
            return None  # given with spans that were not checked
        return any(self.spans_found)

    def to_json(self) -> dict:
        out = {"id": self.id, "text": self.text, "spans": self.spans,
               "spans_found": self.spans_found, "span_found": self.span_found,
               "sources": self.sources, "round": self.round}
        if self.score is not None:
            out["score"] = self.score
        if self.merged_from:
            out["merged_from"] = self.merged_from
        return out


@dataclass
class KPRItem:
    """One question: its retrieved documents and/or key points, a response, other columns.

    ``key_points`` is ``None`` until extracted (or given); an empty list means the question has
    no key point. ``record`` says where the item came from (for error messages)."""

    id: str
    question: str
    documents: list[SourceDocument] = field(default_factory=list)
    key_points: list[KeyPoint] | None = None
    response: str | None = None
    extra: dict = field(default_factory=dict)
    record: str = ""
    extraction: dict = field(default_factory=dict)


@dataclass
class Judgment:
    """One entailment judgment. ``kind``: ``"recall"`` (key point vs the response) or
    ``"precision"`` (response point vs the reference). ``label``: ``yes``/``no``/``neutral``,
    ``None`` when unparseable or not asked (``note`` says why)."""

    item_id: str
    kind: str
    point_id: str
    point: str
    entailed: bool
    label: str | None
    raw: str | None
    note: str | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


_CORE_FIELDS = {"id", "question", "documents", "key_points", "response"}
# the columns of a key-points file that are not "other columns" of its questions
KP_FILE_FIELDS = {"id", "question", "key_points", "extraction"}


def _as_id(value, *, path, record, field_name) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise DataError(f"must be a non-empty string or integer, got {value!r}", path=path,
                        record=record, field=field_name)
    return str(value)


def _parse_key_point_list(value, *, path, record, item_id) -> list[KeyPoint]:
    if not isinstance(value, list):
        raise DataError(f"must be a list of strings or objects with 'text', got "
                        f"{type(value).__name__}", path=path, record=record, field="key_points")
    points = []
    for i, kp in enumerate(value):
        where = {"path": path, "record": record, "field": f"key_points[{i}]"}
        if isinstance(kp, str):
            text, spans, extra = kp, [], {}
        elif isinstance(kp, dict):
            text = kp.get("text", kp.get("point", kp.get("key_point")))
            spans = kp.get("spans") or []
            extra = kp
            if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
                raise DataError("'spans' must be a list of strings", **where)
        else:
            raise DataError(f"must be a string or an object with 'text', got "
                            f"{type(kp).__name__}", **where)
        if not isinstance(text, str) or not text.strip():
            raise DataError("a key point needs a non-empty text", **where)
        found = extra.get("spans_found")
        if not (isinstance(found, list) and len(found) == len(spans)):
            found = []
        kp_id = extra.get("id")
        points.append(KeyPoint(
            id=str(kp_id) if kp_id not in (None, "") else f"{item_id}-kp{i + 1}",
            text=" ".join(text.split()), spans=list(spans),
            spans_found=[bool(f) for f in found], sources=list(extra.get("sources") or []),
            round=extra.get("round"), score=extra.get("score"),
            merged_from=list(extra.get("merged_from") or [])))
    ids = [p.id for p in points]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise DataError(f"key point id {dup!r} occurs twice", path=path, record=record,
                        field="key_points")
    return points


def read_key_points_file(path) -> dict[str, tuple[str | None, list[KeyPoint], dict]]:
    """``{id: (question, key points, other columns)}`` from a JSONL file with one line per
    question, ``{"id", "key_points": [...], "question"?, ...}`` (what ``key_points.jsonl`` of
    an earlier run holds)."""
    out: dict[str, tuple[str | None, list[KeyPoint], dict]] = {}
    for lineno, obj in iter_jsonl(path):
        record = f"line {lineno}"
        if "id" not in obj:
            raise DataError("missing", path=path, record=record, field="id")
        item_id = _as_id(obj["id"], path=path, record=record, field_name="id")
        if item_id in out:
            raise DataError(f"id {item_id!r} occurs twice", path=path, record=record,
                            field="id")
        if "key_points" not in obj:
            raise DataError("missing", path=path, record=record, field="key_points")
        question = obj.get("question")
        if question is not None and not isinstance(question, str):
            raise DataError("must be a string", path=path, record=record, field="question")
        points = _parse_key_point_list(obj["key_points"], path=path, record=record,
                                       item_id=item_id)
        extra = {k: v for k, v in obj.items() if k not in KP_FILE_FIELDS}
        out[item_id] = (question, points, extra)
    return out


def read_items(path, *, key_points=None, group_by: Sequence[str] = (),
               need_response: bool = True, need_documents: bool = False) -> list[KPRItem]:
    """Read the input JSONL (one line per question) into items.

    ``key_points``: an optional JSONL file of key points per id (:func:`read_key_points_file`);
    its points replace the line's own, its question and other columns fill what the line
    lacks. ``need_response``: every line must have a ``response`` string (all but
    ``--extract-only``). ``need_documents``: every line must have documents (precision against
    the documents). Every error names the file, the line and the field.
    """
    given = read_key_points_file(key_points) if key_points is not None else {}
    items: list[KPRItem] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        record = f"line {lineno}"
        where = {"path": path, "record": record}
        if "id" not in obj:
            raise DataError("missing", field="id", **where)
        item_id = _as_id(obj["id"], path=path, record=record, field_name="id")
        if item_id in seen:
            raise DataError(f"id {item_id!r} occurs twice", field="id", **where)
        seen.add(item_id)
        from_file = given.get(item_id)
        question = obj.get("question", from_file[0] if from_file else None)
        if not isinstance(question, str) or not question.strip():
            raise DataError("missing or not a non-empty string (give it here or in the "
                            "--key-points file)", field="question", **where)
        docs_raw = obj.get("documents", [])
        if not isinstance(docs_raw, list):
            raise DataError(f"must be a list, got {type(docs_raw).__name__}",
                            field="documents", **where)
        documents = []
        for j, d in enumerate(docs_raw):
            if isinstance(d, str):
                d = {"text": d}
            if not isinstance(d, dict):
                raise DataError(f"must be an object with 'text' or a string, got "
                                f"{type(d).__name__}", field=f"documents[{j}]", **where)
            text = d.get("text")
            if not isinstance(text, str):
                raise DataError("missing or not a string", field=f"documents[{j}].text",
                                **where)
            doc_id = d.get("id", f"{item_id}-d{j + 1}")
            doc_id = _as_id(doc_id, path=path, record=record, field_name=f"documents[{j}].id")
            documents.append(SourceDocument(doc_id, text))
        if len({d.id for d in documents}) != len(documents):
            raise DataError("two documents have the same id", field="documents", **where)
        points = None
        if from_file is not None:
            points = from_file[1]
            if "key_points" in obj:
                log.warning("%s %s: key points of id %r come from %s, not from the line",
                            path, record, item_id, key_points)
        elif "key_points" in obj:
            points = _parse_key_point_list(obj["key_points"], path=path, record=record,
                                           item_id=item_id)
        if points is None and not documents:
            raise DataError("no documents to extract key points from and no key points "
                            "(give 'documents', 'key_points' or a --key-points file with this "
                            "id)", field="documents", **where)
        if need_documents and not documents:
            raise DataError("precision against the documents needs them", field="documents",
                            **where)
        response = obj.get("response")
        if need_response and not isinstance(response, str):
            raise DataError("missing or not a string (an empty string is an empty response)",
                            field="response", **where)
        if response is not None and not isinstance(response, str):
            raise DataError("must be a string", field="response", **where)
        extra = dict(from_file[2]) if from_file else {}
        extra.update({k: v for k, v in obj.items() if k not in _CORE_FIELDS})
        for col in group_by:
            if col not in extra:
                raise DataError(f"no column {col!r} to group by", field=col, **where)
            if isinstance(extra[col], (dict, list)):
                raise DataError("a grouping column must hold a string or number", field=col,
                                **where)
        items.append(KPRItem(item_id, question, documents, points, response, extra, record))
    if not items:
        raise DataError("no questions in the input", path=path)
    unused = [item_id for item_id in given if item_id not in seen]
    if unused:   # a typo in an id would otherwise lose its key points in silence
        log.warning("%s: %d key-point records not used (ids not in %s): %s%s", key_points,
                    len(unused), path, ", ".join(unused[:5]), ", ..." if len(unused) > 5 else "")
    return items



"""The CRUX data model: the records that flow between the workflow's rules.

A *dataset directory* holds one prepared corpus (see ``docs/data-model.md``)::

    topics.jsonl          one Topic per line
    documents.jsonl       one Document per line (source articles; distractors have topic_id null)
    passages/passages.jsonl   a pyserini JsonCollection: {"id", "contents", "topic_id", "doc_id"}
    answerability.jsonl   one RatingRow per judged (topic, passage): ratings 0-5, one per question
    reference_ratings.jsonl   one ReferenceRating per topic: the human summary y* rated the same way
    manifest.json         what was read, from where, and the counts

Identifiers follow the CRUX release: a document is ``<topic>:<i>`` (``i`` its position in the
cluster) and a passage ``<topic>:<i>#<n>`` (``n`` running over the whole topic), e.g.
``duc04-testb-3:9#27``; so our files and the authors' released files interoperate.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, paused_gc, read_json, write_json, write_jsonl
from cruxflow.data.names import (
    DOCUMENTS,
    MANIFEST,
    PASSAGES,
    RATINGS,
    REFERENCE_RATINGS,
    TOPICS,
)

RATING_MIN, RATING_MAX = 0, 5
# The CRUX authors' rating parser writes -1 where the judge gave no digit. It is kept as read
# (so an imported judge file round-trips) and answers nothing at any threshold eta >= 0.
RATING_UNRATED = -1
_PASSAGE_ID = re.compile(r"^(?P<topic>[^:#\s]+):(?P<doc>[^:#\s]+)#(?P<n>\d+)$")
_ID_OK = re.compile(r"^[^\s]+$")


def make_doc_id(topic_id: str, index: int) -> str:
    return f"{topic_id}:{index}"


def make_passage_id(topic_id: str, doc_index: int | str, n: int) -> str:
    return f"{topic_id}:{doc_index}#{n}"


# Placeholders for a sub-question an imported file leaves blank (null, or an empty string):
# ratings are vectors by position, so the question keeps its index; the placeholder says why
# it is there, and no rating stage asks a judge about it (it answers nothing).
NULL_QUESTION = "(no sub-question: null in the source file)"
EMPTY_QUESTION = "(no sub-question: empty in the source file)"
BLANK_QUESTIONS = frozenset((NULL_QUESTION, EMPTY_QUESTION))


def parse_passage_id(pid: str) -> tuple[str, str, int]:
    """Split ``<topic>:<doc>#<n>`` into its parts; raise ``ValueError`` if it is not one."""
    m = _PASSAGE_ID.match(pid)
    if not m:
        raise ValueError(f"passage id {pid!r} is not of the form <topic>:<doc>#<n>")
    return m["topic"], m["doc"], int(m["n"])


def passage_order(pid: str) -> tuple:
    """A topic's passages in their natural order, whatever order a file lists them in: by the
    running number n of ``<topic>:<doc>#<n>`` (the order the CRUX authors number a topic's
    passages in), then by id; an id that does not end in ``#<n>`` after a ``:``, after
    those, by id."""
    head, sep, n = pid.rpartition("#")
    if sep and n.isdigit() and ":" in head:
        return (0, int(n), pid)
    return (1, 0, pid)


def passage_order_arrays(pids: list[str]):
    """:func:`passage_order` of every id of ``pids`` as three arrays, to sort by with
    ``numpy.lexsort``: (0 or 1, the running number, the id's place in string order)."""
    import numpy as np

    keys = list(map(passage_order, pids))
    flag = np.fromiter((k[0] for k in keys), np.int64, len(keys))
    # a running number too long for 64 bits is ordered by its id among those (rare)
    running = np.fromiter((min(k[1], 1 << 62) for k in keys), np.int64, len(keys))
    by_id = np.empty(len(pids), dtype=np.int64)
    by_id[sorted(range(len(pids)), key=pids.__getitem__)] = np.arange(len(pids))
    return flag, running, by_id


@dataclass
class Reference:
    """One human-written reference summary (DUC has four per cluster, Multi-News one)."""

    id: str
    text: str


@dataclass
class Topic:
    """One information need: a document cluster with its human summary.

    ``reference`` is the oracle result y* (the first of ``references``); ``query`` (the open-ended
    report request x) and ``questions`` (the sub-questions Q) are filled by the LLM stages or come
    with imported CRUX data. A topic imported from a CRUX release without its summaries has
    ``reference`` None: it can be scored, not regenerated (:func:`require_reference`).
    """

    topic_id: str
    reference: str | None
    doc_ids: list[str]
    query: str | None = None
    questions: list[str] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    source_id: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Document:
    doc_id: str
    topic_id: str | None
    text: str
    title: str | None = None
    source_id: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Passage:
    """A retrieval unit; serialised as a pyserini JsonCollection record (``id``, ``contents``)."""

    id: str
    contents: str
    topic_id: str | None = None
    doc_id: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class RatingRow:
    """Answerability of one passage for every sub-question of its topic (0-5, paper Fig. 8).

    ``ratings`` are the greedy ratings the metrics use; ``expected`` (optional) holds, per
    question, the expected rating sum_k k p(k) from the judge's first-token distribution, or
    null where the backend gave no logprobs.
    """

    topic_id: str
    passage_id: str
    ratings: list[int]
    expected: list[float | None] | None = None

    def to_json(self) -> dict:
        return _rating_json(self)


@dataclass
class ReferenceRating:
    """The human summary y* of a topic rated against its sub-questions (Table 1, row #2)."""

    topic_id: str
    ratings: list[int]
    expected: list[float | None] | None = None

    def to_json(self) -> dict:
        return _rating_json(self)


def _rating_json(row) -> dict:
    """A rating record as JSON; ``expected`` only when there is one (older files lack it)."""
    out = asdict(row)
    if out["expected"] is None:
        del out["expected"]
    return out


# --- validation helpers -----------------------------------------------------------------------

def _field(obj: dict, name: str, types, where: dict, *, optional: bool = False):
    if name not in obj or obj[name] is None:
        if optional:
            return None
        raise DataError("missing", field=name, **where)
    value = obj[name]
    if not isinstance(value, types) or isinstance(value, bool):
        names = [types] if isinstance(types, type) else types
        expected = "/".join(t.__name__ for t in names)
        raise DataError(f"expected {expected}, got {type(value).__name__}", field=name, **where)
    return value


def _text(obj, name, where, *, optional=False, allow_empty=False):
    value = obj.get(name)
    if type(value) is str and (allow_empty or value and not value.isspace()):
        return value    # the common case at a glance (a dataset has 200,000 records)
    value = _field(obj, name, str, where, optional=optional)
    if value is not None and not allow_empty and not value.strip():
        raise DataError("is empty", field=name, **where)
    return value


def _ident(obj, name, where, *, optional=False):
    value = obj.get(name)
    if type(value) is str and _ID_OK.match(value):
        return value    # the common case at a glance
    value = _text(obj, name, where, optional=optional)
    if value is not None and not _ID_OK.match(value):
        raise DataError(f"identifier {value!r} contains whitespace", field=name, **where)
    return value


def _str_list(obj, name, where, *, optional=False):
    value = _field(obj, name, list, where, optional=optional)
    if value is None:
        return []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise DataError(f"item {i} must be a non-empty string", field=name, **where)
    return value


_RATINGS = frozenset(range(RATING_MIN, RATING_MAX + 1))
# every value a ratings list may hold where unrated values are allowed: 0..5 and -1
RATINGS_OR_UNRATED = _RATINGS | {RATING_UNRATED}


def parse_ratings(value, where: dict, name: str = "ratings", *,
                  unrated_ok: bool = False) -> list[int]:
    """Validate a list of 0-5 integer ratings (floats with integral values are accepted);
    with ``unrated_ok``, -1 (no rating: the judge gave no digit) is accepted too."""
    if not isinstance(value, list):
        raise DataError(f"expected a list of ratings, got {type(value).__name__}", field=name,
                        **where)
    # the common case at a glance (a release's judge folder holds 60,000 lists and more)
    if all(type(r) is int for r in value) and \
            set(value) <= (RATINGS_OR_UNRATED if unrated_ok else _RATINGS):
        return list(value)
    out = []
    for i, r in enumerate(value):
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) \
                or r != int(r):  # NaN and Infinity (Python's JSON reads them) are no ratings
            raise DataError(f"item {i} ({r!r}) is not an integer rating", field=name, **where)
        if not (RATING_MIN <= r <= RATING_MAX or (unrated_ok and r == RATING_UNRATED)):
            allowed = f"{RATING_MIN}..{RATING_MAX}" + (" or -1" if unrated_ok else "")
            raise DataError(f"item {i} ({r}) is outside {allowed}", field=name, **where)
        out.append(int(r))
    return out


def require_reference(topic: Topic, what: str) -> str:
    """The topic's reference summary y*; a clear error where the dataset has none."""
    if topic.reference is None:
        raise DataError(f"topic {topic.topic_id} has no reference summary (imported from a CRUX "
                        f"release without summaries): cannot {what}", field="reference")
    return topic.reference


def topic_from_json(obj: dict, where: dict) -> Topic:
    refs = []
    for i, r in enumerate(_field(obj, "references", list, where, optional=True) or []):
        if not isinstance(r, dict):
            raise DataError(f"item {i} must be an object with id and text", field="references",
                            **where)
        refs.append(Reference(_ident(r, "id", where), _text(r, "text", where)))
    return Topic(
        topic_id=_ident(obj, "topic_id", where),
        reference=_text(obj, "reference", where, optional=True),
        doc_ids=_str_list(obj, "doc_ids", where),
        query=_text(obj, "query", where, optional=True),
        questions=_str_list(obj, "questions", where, optional=True),
        references=refs,
        source_id=_text(obj, "source_id", where, optional=True),
    )


def document_from_json(obj: dict, where: dict) -> Document:
    return Document(
        doc_id=_ident(obj, "doc_id", where),
        topic_id=_ident(obj, "topic_id", where, optional=True),
        text=_text(obj, "text", where),
        title=_text(obj, "title", where, optional=True, allow_empty=True),
        source_id=_text(obj, "source_id", where, optional=True),
    )


def passage_from_json(obj: dict, where: dict) -> Passage:
    return Passage(
        id=_ident(obj, "id", where),
        contents=_text(obj, "contents", where),
        topic_id=_ident(obj, "topic_id", where, optional=True),
        doc_id=_ident(obj, "doc_id", where, optional=True),
    )


def parse_expected(value, n: int, where: dict) -> list[float | None] | None:
    """Validate optional expected ratings: ``n`` numbers in 0..5 or nulls."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        raise DataError(f"expected a list of {n} numbers or nulls", field="expected", **where)
    out: list[float | None] = []
    for i, v in enumerate(value):
        if v is None:
            out.append(None)
        elif isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not RATING_MIN <= v <= RATING_MAX:
            raise DataError(f"item {i} ({v!r}) is not a number in {RATING_MIN}..{RATING_MAX}",
                            field="expected", **where)
        else:
            out.append(float(v))
    return out


def rating_from_json(obj: dict, where: dict) -> RatingRow:
    ratings = parse_ratings(_field(obj, "ratings", list, where), where, unrated_ok=True)
    return RatingRow(
        topic_id=_ident(obj, "topic_id", where),
        passage_id=_ident(obj, "passage_id", where),
        ratings=ratings,
        expected=parse_expected(obj.get("expected"), len(ratings), where),
    )


def reference_rating_from_json(obj: dict, where: dict) -> ReferenceRating:
    ratings = parse_ratings(_field(obj, "ratings", list, where), where)
    return ReferenceRating(
        topic_id=_ident(obj, "topic_id", where),
        ratings=ratings,
        expected=parse_expected(obj.get("expected"), len(ratings), where),
    )


# --- the dataset directory ----------------------------------------------------------------------

def load_records(path: Path, parse, key) -> dict:
    """Validated records of a JSONL file by ``key(record)``; duplicate keys are an error."""
    out: dict = {}
    with paused_gc():   # records without cycles: the collector would only slow the read
        for lineno, obj in iter_jsonl(path):
            where = {"path": path, "record": f"line {lineno}"}
            rec = parse(obj, where)
            k = key(rec)
            if k in out:
                raise DataError(f"duplicate id {k!r}", **where)
            out[k] = rec
    return out


@dataclass
class Dataset:
    """A prepared corpus in memory; :meth:`load` validates ids, references and rating shapes."""

    topics: dict[str, Topic]
    documents: dict[str, Document] = field(default_factory=dict)
    passages: dict[str, Passage] = field(default_factory=dict)
    ratings: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    # Optional beside ``ratings``: expected ratings from logprobs, and y*'s own ratings.
    expected: dict[tuple[str, str], list[float | None]] = field(default_factory=dict)
    reference_ratings: dict[str, ReferenceRating] = field(default_factory=dict)

    @classmethod
    def load(cls, directory, *, with_passages: bool = True) -> Dataset:
        d = Path(directory)
        if not (d / TOPICS).exists():
            raise DataError(f"not a cruxflow dataset directory (no {TOPICS})", path=d)
        topics = load_records(d / TOPICS, topic_from_json, lambda t: t.topic_id)
        docs = load_records(d / DOCUMENTS, document_from_json, lambda x: x.doc_id) \
            if (d / DOCUMENTS).exists() else {}
        passages = load_records(d / PASSAGES, passage_from_json, lambda p: p.id) \
            if with_passages and (d / PASSAGES).exists() else {}
        ratings: dict[tuple[str, str], list[int]] = {}
        expected: dict[tuple[str, str], list[float | None]] = {}
        if (d / RATINGS).exists():
            for key, row in load_records(d / RATINGS, rating_from_json,
                                  lambda r: (r.topic_id, r.passage_id)).items():
                ratings[key] = row.ratings
                if row.expected is not None:
                    expected[key] = row.expected
        reference_ratings = load_records(d / REFERENCE_RATINGS, reference_rating_from_json,
                                  lambda r: r.topic_id) \
            if (d / REFERENCE_RATINGS).exists() else {}
        manifest = {}
        if (d / MANIFEST).exists():
            manifest = read_json(d / MANIFEST)
        ds = cls(topics, docs, passages, ratings, manifest, expected, reference_ratings)
        ds.check(d)
        return ds

    def check(self, directory=None) -> None:
        """Cross-file consistency: every reference resolves and every rating row fits its topic."""
        d = Path(directory) if directory is not None else None

        def where(name, rec):
            return {"path": d / name if d else name, "record": rec}

        if self.documents:
            for t in self.topics.values():
                for doc in t.doc_ids:
                    if doc not in self.documents:
                        raise DataError(f"unknown document {doc!r}", field="doc_ids",
                                        **where(TOPICS, f"topic {t.topic_id}"))
        for doc in self.documents.values():
            if doc.topic_id is not None and doc.topic_id not in self.topics:
                raise DataError(f"unknown topic {doc.topic_id!r}", field="topic_id",
                                **where(DOCUMENTS, f"document {doc.doc_id}"))
        # Passages may name topics outside this dataset: a knowledge corpus holds the passages
        # of other splits too (the paper's corpus mixes Multi-News train and test).
        # (the place named only for the row in error: a dataset has 200,000 rows)
        n_questions = {tid: len(t.questions) for tid, t in self.topics.items()}
        for (tid, pid), r in self.ratings.items():
            n = n_questions.get(tid)
            if n is None:
                problem = f"unknown topic {tid!r}", "topic_id"
            elif self.passages and pid not in self.passages:
                problem = f"unknown passage {pid!r}", "passage_id"
            elif len(r) != n:
                problem = f"{len(r)} ratings but topic {tid} has {n} questions", "ratings"
            else:
                continue
            raise DataError(problem[0], field=problem[1],
                            **where(RATINGS, f"topic {tid} passage {pid}"))
        for tid, row in self.reference_ratings.items():
            w = where(REFERENCE_RATINGS, f"topic {tid}")
            if tid not in self.topics:
                raise DataError(f"unknown topic {tid!r}", field="topic_id", **w)
            n = len(self.topics[tid].questions)
            if len(row.ratings) != n:
                raise DataError(f"{len(row.ratings)} ratings but topic {tid} has {n} questions",
                                field="ratings", **w)

    def head(self, n: int) -> Dataset:
        """The first ``n`` topics with their documents, passages and ratings; documents and
        passages of no topic (distractors) are all kept."""
        keep = dict(list(self.topics.items())[:n])
        return Dataset(
            topics=keep,
            documents={k: d for k, d in self.documents.items()
                       if d.topic_id is None or d.topic_id in keep},
            passages={k: p for k, p in self.passages.items()
                      if p.topic_id is None or p.topic_id in keep},
            ratings={k: r for k, r in self.ratings.items() if k[0] in keep},
            manifest=dict(self.manifest),
            expected={k: e for k, e in self.expected.items() if k[0] in keep},
            reference_ratings={k: r for k, r in self.reference_ratings.items() if k in keep},
        )

    def ratings_by_topic(self) -> dict[str, dict[str, list[int]]]:
        """``{topic_id: {passage_id: ratings}}``: the answerability matrix of each topic."""
        out: dict[str, dict[str, list[int]]] = {t: {} for t in self.topics}
        for (tid, pid), r in self.ratings.items():
            out[tid][pid] = r
        return out

    def save(self, directory, *, extra_manifest: dict | None = None) -> dict:
        """Write every non-empty part atomically and return the counts (also in manifest.json)."""
        d = Path(directory)
        self.check()
        counts = {
            "topics": write_jsonl(d / TOPICS, (t.to_json() for t in self.topics.values())),
            "documents": write_jsonl(d / DOCUMENTS, (x.to_json() for x in self.documents.values())),
            "summaries": sum(len(t.references) or int(t.reference is not None)
                             for t in self.topics.values()),
        }
        # Every part is written, possibly empty, so the directory always has the same files.
        counts["passages"] = write_jsonl(d / PASSAGES,
                                         (p.to_json() for p in self.passages.values()))
        counts["rated_passages"] = write_jsonl(
            d / RATINGS, (RatingRow(t, p, r, self.expected.get((t, p))).to_json()
                          for (t, p), r in self.ratings.items()))
        counts["rated_references"] = write_jsonl(
            d / REFERENCE_RATINGS, (r.to_json() for r in self.reference_ratings.values()))
        manifest = {**self.manifest, **(extra_manifest or {}), "counts": counts}
        write_json(d / MANIFEST, manifest)
        self.manifest = manifest
        return counts


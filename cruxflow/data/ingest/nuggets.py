"""Nuggets as CRUX sub-questions (``cruxflow ingest --format nuggets``; docs/nuggets.md), so
that the context metrics score a retrieval run against a track's nuggets.

The input is AutoNuggetizer's JSONL (castorini/nuggetizer), records of two kinds, in one file or
in a folder holding ``nuggets.jsonl`` and ``assignments.jsonl`` (what ``cruxflow export
--format autonuggetizer`` writes):

* ``{"query", "qid", "nuggets": [{"text", "importance"?}, ...]}`` -- the nuggets of a topic
  ("create" output): they become the topic's questions, ``query`` its report request;
* ``{"text", "qid", "candidate_text", "docid", "nuggets": [{"text", "importance"?,
  "assignment"}, ...]}`` -- one segment's assignments (retrieval-mode "assign" output): the
  segment becomes a passage (its text ``candidate_text``) and its assignments the ratings.

A nugget assigned ``support`` to a segment makes the segment answer it: rating 5;
``partial_support`` gives 2 (below every eta >= 3, so not answerable at the default eta, as the
export maps 2 back to ``partial_support``); ``not_support`` or no assignment gives 0. Odd
corners, each counted in the report: a topic whose nuggets come only with its assignments (no
"create" record) takes them from there in first-seen order; the same nugget text twice in one
topic is one question (its assignments merged, the strongest kept); a topic without nuggets is
kept without questions and scores as no topic (metrics skip it).

``--collection SEGMENTS.jsonl`` (MS MARCO v2.1 segmented: ``{"docid", "segment", ...}``) gives the
passage texts and checks every cited segment id against it: an unknown one is an error naming
the file, line and field.
"""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions, IngestReport
from cruxflow.data.io import iter_jsonl, regular_files, wrong_kind
from cruxflow.data.model import Dataset, Passage, Topic

RATING = {"support": 5, "partial_support": 2, "not_support": 0}
FOLDER_FILES = ("nuggets.jsonl", "assignments.jsonl")


def _str(obj: dict, name: str, where: dict) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataError("missing or not a non-empty string", field=name, **where)
    return value


def _nuggets(obj: dict, where: dict, *, assigned: bool) -> list[tuple[str, str | None]]:
    items = obj.get("nuggets")
    if not isinstance(items, list):
        raise DataError("missing or not a list", field="nuggets", **where)
    out = []
    for i, n in enumerate(items):
        field = f"nuggets[{i}]"
        if not isinstance(n, dict) or not isinstance(n.get("text"), str) \
                or not n["text"].strip():
            raise DataError("expected an object with a non-empty text", field=field, **where)
        label = n.get("assignment")
        if assigned and label not in RATING:
            raise DataError(f"assignment {label!r} is not one of {sorted(RATING)}",
                            field=f"{field}.assignment", **where)
        out.append((" ".join(n["text"].split()), label))
    return out


def _segments(path: Path, encoding: str) -> dict[str, str]:
    out = {}
    for lineno, obj in iter_jsonl(path, encoding):
        where = {"path": path, "record": f"line {lineno}"}
        docid = _str(obj, "docid", where)
        text = obj.get("segment", obj.get("contents"))
        if not isinstance(text, str):
            raise DataError("missing (MS MARCO v2.1 segments have 'segment')", field="segment",
                            **where)
        out[docid] = text
    return out


def read_nuggets(path, options: IngestOptions) -> tuple:
    path = Path(path)
    if path.is_dir():
        files = regular_files(path / name for name in FOLDER_FILES)
        if not files:
            raise DataError(f"holds neither of {', '.join(FOLDER_FILES)}", path=path)
        if files == [path / FOLDER_FILES[0]]:   # topics that no passage could ever answer
            raise DataError(f"holds {FOLDER_FILES[0]} but no {FOLDER_FILES[1]}: the topics "
                            "would have no passages and no ratings (give the assignments, "
                            "nuggetizer's assign output, beside it)", path=path)
    elif path.is_file():
        files = [path]
    else:
        raise wrong_kind(path, "nuggets.jsonl, assignments.jsonl or a folder of them")
    segments = _segments(Path(options.collection), options.encoding) if options.collection else None
    report = IngestReport("nuggets", str(path), layout="autonuggetizer")
    counts = report.counts
    counts.update(topics_without_nuggets=0, duplicate_nuggets=0,
                  nuggets_from_assignments_only=0, assignments=0, unassigned_nuggets=0)
    queries: dict[str, str] = {}
    questions: dict[str, list[str]] = {}
    created: set[str] = set()
    labels: dict[tuple[str, str], dict[str, int]] = {}
    texts: dict[str, str] = {}
    for file in files:
        for lineno, obj in iter_jsonl(file, options.encoding):
            where = {"path": file, "record": f"line {lineno}"}
            qid = _str(obj, "qid", where)
            if "docid" in obj or "candidate_text" in obj:   # one segment's assignments
                docid = _str(obj, "docid", where)
                if segments is not None and docid not in segments:
                    raise DataError(f"cites segment {docid!r}, which is not in the corpus "
                                    f"{options.collection}", field="docid", **where)
                if (qid, docid) in labels:
                    raise DataError(f"a second record of segment {docid!r} for topic {qid!r}",
                                    field="docid", **where)
                text = segments[docid] if segments is not None else obj.get("candidate_text")
                if not isinstance(text, str) or not text.strip():
                    raise DataError("missing or empty (give --collection with the segments)",
                                    field="candidate_text", **where)
                texts[docid] = text
                queries.setdefault(qid, obj.get("text") or "")
                got: dict[str, int] = {}
                for nugget, label in _nuggets(obj, where, assigned=True):
                    got[nugget] = max(got.get(nugget, 0), RATING[label])
                    if qid not in created and nugget not in questions.setdefault(qid, []):
                        questions[qid].append(nugget)
                        counts["nuggets_from_assignments_only"] += 1
                labels[qid, docid] = got
                counts["assignments"] += 1
            else:                                            # a topic's nuggets
                if qid in created:
                    raise DataError(f"a second nuggets record of topic {qid!r}", field="qid",
                                    **where)
                if not isinstance(obj.get("query"), str):
                    raise DataError("missing or not a string", field="query", **where)
                queries[qid] = obj["query"]
                kept: list[str] = []
                for nugget, _ in _nuggets(obj, where, assigned=False):
                    if nugget in kept:
                        counts["duplicate_nuggets"] += 1
                    else:
                        kept.append(nugget)
                earlier = questions.get(qid, [])
                counts["nuggets_from_assignments_only"] -= len(earlier)
                questions[qid] = kept + [q for q in earlier if q not in kept]
                counts["nuggets_from_assignments_only"] += len(questions[qid]) - len(kept)
                created.add(qid)
    topics, passages, ratings = {}, {}, {}
    for qid in dict.fromkeys([*queries, *questions]):
        qs = questions.get(qid, [])
        counts["topics_without_nuggets"] += not qs
        topics[qid] = Topic(qid, None, [], " ".join(queries.get(qid, "").split()) or None, qs)
    supported: dict[str, set[str]] = {}
    for (qid, docid), got in labels.items():
        passages.setdefault(docid, Passage(docid, texts[docid], qid))
        ratings[qid, docid] = [got.get(q, 0) for q in topics[qid].questions]
        supported.setdefault(qid, set()).update(q for q, r in got.items() if r == RATING["support"])
    counts["unassigned_nuggets"] = sum(len(set(t.questions) - supported.get(t.topic_id, set()))
                                       for t in topics.values())
    report.clusters_read = len(topics)
    only_assigned = [qid for qid in topics if qid not in created and qid in questions]
    if only_assigned and created:   # a typo in a qid would make such a topic: said, by name
        report.notes.append(f"{len(only_assigned)} topics have no nuggets record, only "
                            f"assignments (their nuggets taken from those): "
                            f"{', '.join(only_assigned[:5])}"
                            + (", ..." if len(only_assigned) > 5 else ""))
    if counts["duplicate_nuggets"]:
        report.notes.append(f"{counts['duplicate_nuggets']} repeated nuggets merged")
    if counts["topics_without_nuggets"]:
        report.notes.append(f"{counts['topics_without_nuggets']} topics without nuggets: kept, "
                            "the metrics skip them")
    if counts["unassigned_nuggets"]:
        report.notes.append(f"{counts['unassigned_nuggets']} nuggets no segment supports")
    return Dataset(topics, {}, passages, ratings), report

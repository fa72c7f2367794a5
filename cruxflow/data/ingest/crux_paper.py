"""The CRUX files of the paper era and cruxflow's own crux directory: flat JSONL files in one
folder, told apart by their records, not their names.

* topics: ``{"example_id" or "qid" (or "id"), "topic" (or "request"), "questions" (or
  "subtopics"), "docids" (optional), "report"}``; the labeling tool's records
  (DylanJoo/crux-labeling, ``crux_testb/*.jsonl``) also carry ``type`` (the retrieval context
  a RAG ``response`` was generated from) and ``k``, so one topic appears once per type;
* passages: ``{"id", "contents"}`` (``<split>_passages.jsonl``; ``_id``/``text``/``title``
  read too);
* judgements: ``{"example_id", "pid", "rating"}`` or any layout of
  :func:`cruxflow.data.ingest.crux_common.read_ratings`;
* TREC run files lying beside them (``qid Q0 docid rank score tag``), validated and copied by
  ``cruxflow ingest``; 4-column qrels files beside them are validated and summarised.

Our own crux directory (``topics.jsonl``, ``passages.jsonl`` or ``corpus.jsonl``, optional
``judgements.jsonl``, runs in ``runs/``) is the same records under fixed names.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions, IngestReport
from cruxflow.data.ingest.crux_common import (
    JudgeRatings,
    blank_question_notes,
    question_list,
    ratings_layout,
    read_collection,
    read_diversity_qrels,
    read_ratings,
    report_topics,
    split_report_id,
)
from cruxflow.data.ingest.crux_sources import sources_note
from cruxflow.data.io import TOO_DEEP, iter_jsonl, iter_lines, regular_files
from cruxflow.data.merge import describe
from cruxflow.data.model import Dataset, Passage, Topic, parse_passage_id

OWN, PAPER = "cruxflow crux directory", "paper-era files"
_ALIASES = {"qid": ("qid", "example_id", "id"), "topic": ("topic", "request"),
            "questions": ("questions", "subtopics"), "report": ("report",),
            "docids": ("docids",)}


@dataclass
class FlatFiles:
    """Which file of a folder holds what."""

    layout: str
    root: Path
    topics: list[Path] = field(default_factory=list)
    passages: list[Path] = field(default_factory=list)
    judgements: list[Path] = field(default_factory=list)
    runs: list[Path] = field(default_factory=list)
    qrels: list[Path] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)


def _first_record(path: Path, encoding: str):
    """The first JSON object of a JSONL file (None for an empty file), reading one line."""
    for lineno, line in iter_lines(path, encoding, errors="replace"):
        if line.strip():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path,
                                record=f"line {lineno}") from None
            except RecursionError:
                raise DataError(TOO_DEEP, path=path, record=f"line {lineno}") from None
            return obj if isinstance(obj, dict) else None
    return None


def _first_line_columns(path: Path) -> int:
    try:
        for _, line in iter_lines(path):
            if line.strip():
                parts = line.split()
                return 6 if len(parts) == 6 and parts[1] == "Q0" else len(parts)
    except DataError as exc:
        if "not valid utf-8" in exc.reason:
            return 0
        raise
    return 0


def classify(path: Path, encoding: str = "utf-8") -> str | None:
    """What a file of a paper-era folder holds: topics, passages, judgements, run, qrels."""
    if path.suffix == ".jsonl":
        obj = _first_record(path, encoding)
        if obj is None:
            return None
        if ratings_layout(obj) is not None:
            return "judgements"
        if any(k in obj for k in _ALIASES["questions"]) and any(k in obj for k in _ALIASES["qid"]):
            return "topics"
        if ("id" in obj or "_id" in obj) and ("contents" in obj or "text" in obj):
            return "passages"
        return None
    columns = _first_line_columns(path)
    return {6: "run", 4: "qrels"}.get(columns)


def paper_files(path, encoding: str = "utf-8") -> FlatFiles | None:
    """The paper-era files of a folder (or of the folder of a topics file); None if no topics."""
    p = Path(path)
    root = p.parent if p.is_file() else p
    found = FlatFiles(PAPER, root)
    entries = sorted(x for x in root.iterdir() if not x.name.startswith("."))
    found.ignored += [x for x in entries if x.is_dir()]   # a folder: not a file of the layout
    for f in regular_files(x for x in entries if not x.is_dir()):
        kind = classify(f, encoding)
        if kind == "topics" and p.is_file() and f != p:
            kind = None  # a topics file was named: the folder's other splits stay out
        {"topics": found.topics, "passages": found.passages, "judgements": found.judgements,
         "run": found.runs, "qrels": found.qrels}.get(kind, found.ignored).append(f)
    return found if found.topics else None


def own_files(root: Path) -> FlatFiles:
    found = FlatFiles(OWN, root, topics=[root / "topics.jsonl"])
    passages = regular_files(root / n for n in ("passages.jsonl", "corpus.jsonl"))
    if not passages:
        raise DataError("no passages.jsonl or corpus.jsonl in the CRUX directory", path=root)
    found.passages = passages[:1]
    found.judgements = regular_files(root / n for n in ("judgements.jsonl", "judgments.jsonl"))
    if len(found.judgements) > 1:
        raise DataError("holds both judgements.jsonl and judgments.jsonl: which are the "
                        "ratings? keep one", path=root)
    runs = root / "runs"
    found.runs = regular_files(sorted(f for f in runs.iterdir() if not f.name.startswith(".")
                                      )) if runs.is_dir() else []
    return found


# --- records ------------------------------------------------------------------------------------

def _get(obj: dict, name: str, where: dict, *, required: bool = True):
    for key in _ALIASES[name]:
        if key in obj and obj[key] is not None:
            return obj[key]
    if required:
        others = _ALIASES[name][1:]
        raise DataError("missing (also looked for " + ", ".join(others) + ")" if others
                        else "missing", field=name, **where)
    return None


def _string_list(value, name: str, where: dict) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise DataError("must be a list of strings", field=name, **where)
    return value


def _doc_of(entry: str) -> str:
    """A ``docids`` entry as a document id: labeling-tool records list passage ids there."""
    try:
        tid, doc, _ = parse_passage_id(entry)
    except ValueError:
        return entry
    return f"{tid}:{doc}"


@dataclass
class _TopicRecord:
    topic: Topic
    where: dict
    types: set
    docids: list[str]


def record_type(obj: dict, where: dict) -> tuple[str | None, int | None]:
    """The context a topic record was written for: (system, k). The labeling tool's folder
    writes ``"type": "oracle"`` beside ``"k": 5``; the authors' example files
    (``example/*oracle_k-1:3_n1024.jsonl``) and report files write ``"type": ["oracle", 5]``
    (or ``["vanilla", 10]``). Neither is needed to read the topic; they tell records apart."""
    value, k = obj.get("type"), obj.get("k")
    if isinstance(value, list):
        if len(value) != 2 or not isinstance(value[0], str) or isinstance(value[1], bool) \
                or not isinstance(value[1], int):
            raise DataError(f"expected a string or [system, k], got {value!r}", field="type",
                            **where)
        value, k = value
    elif value is not None and not isinstance(value, str):
        raise DataError(f"expected a string or [system, k], got {value!r}", field="type",
                        **where)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
        k = None  # the labeling tool's "k" is informative only
    return value, k


def read_topic_records(files: list[Path], encoding: str, report: IngestReport
                       ) -> dict[str, _TopicRecord]:
    """Topics from topic records. The labeling tool's folder repeats a topic in every file (and
    in one file once per ``type``) and names the record of a system's RAG response
    ``<system>_<topic>``: repeats must agree on query, questions and report, and a response
    record is not a topic. The same id twice in one file with the same ``type`` is an error."""
    records = []
    nulls: dict[str, list[int]] = {}
    empties: dict[str, list[int]] = {}
    for path in files:
        for lineno, obj in iter_jsonl(path, encoding):
            where = {"path": path, "record": f"line {lineno}"}
            tid = _get(obj, "qid", where)
            if not isinstance(tid, str) or not tid.strip():
                raise DataError("not a non-empty string", field="qid", **where)
            questions, null_at, empty_at = question_list(_get(obj, "questions", where),
                                                         "questions", where)
            if null_at:
                nulls.setdefault(tid, null_at)
            if empty_at:
                empties.setdefault(tid, empty_at)
            text = _get(obj, "report", where)
            if not isinstance(text, str) or not text.strip():
                raise DataError("missing or empty", field="report", **where)
            query = _get(obj, "topic", where)
            if not isinstance(query, str):
                raise DataError("must be a string", field="topic", **where)
            docids = _get(obj, "docids", where, required=False)
            docids = [] if docids is None else _string_list(docids, "docids", where)
            records.append((tid, query, questions, text, docids, record_type(obj, where), where,
                            isinstance(obj.get("response"), str)))
    topic_ids = report_topics([r[0] for r in records])
    out: dict[str, _TopicRecord] = {}
    seen_in_file: set[tuple] = set()
    responses = sum(r[7] for r in records)
    for tid, query, questions, text, docids, kind, where, _ in records:
        if tid not in topic_ids:  # <system>_<topic>: a system's RAG response to the topic
            tid = split_report_id(tid, topic_ids)[1]
        elif (tid, where["path"], kind[0]) in seen_in_file:
            raise DataError(f"duplicate topic {tid!r}", field="qid", **where)
        seen_in_file.add((tid, where["path"], kind[0]))
        if tid in out:
            seen = out[tid]
            t = seen.topic
            for name, mine, theirs in (("topic", query, t.query),
                                       ("questions", questions, t.questions),
                                       ("report", text, t.reference)):
                if mine != theirs:
                    raise DataError(f"topic {tid!r} differs from {seen.where['path']} "
                                    f"{seen.where['record']}", field=name, **where)
            seen.docids += docids
            continue
        out[tid] = _TopicRecord(Topic(tid, text, [], query=query, questions=list(questions),
                                      source_id=tid), where, {kind}, list(docids))
    kinds = Counter(f"{system}@{k}" if k is not None else str(system)
                    for _, _, _, _, _, (system, k), _, _ in records if system is not None)
    if kinds:
        report.counts["record_types"] = dict(sorted(kinds.items()))
    if responses:
        report.counts["rag_responses_not_imported"] = responses
        report.notes.append(f"{responses} RAG responses (the labeling tool's 'response' per "
                            "context) were read but are not part of the dataset")
    # a topic's records repeat its questions (they must agree): each blank one counts once,
    # under the topic's id (a <system>_<topic> record names the same topic)
    counts, notes = blank_question_notes(
        _by_topic(nulls, topic_ids), _by_topic(empties, topic_ids))
    report.counts.update(counts)
    report.notes += notes
    return out


def _by_topic(found: dict[str, list[int]], topic_ids) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tid, idx in found.items():
        out.setdefault(tid if tid in topic_ids else split_report_id(tid, topic_ids)[1], idx)
    return out


def read_passages(files: list[Path], encoding: str) -> dict[str, Passage]:
    passages: dict[str, Passage] = {}
    for path in files:
        texts, _ = read_collection(path, encoding)
        for pid, text in texts.items():
            if pid in passages:
                raise DataError(f"duplicate passage id {pid!r} (also in an earlier passages "
                                "file)", path=path, field="id")
            try:
                tid, doc, _ = parse_passage_id(pid)
                passages[pid] = Passage(pid, text, tid, f"{tid}:{doc}")
            except ValueError:  # a corpus passage outside the <topic>:<doc>#<n> scheme
                passages[pid] = Passage(pid, text)
    return passages


def attach_ratings(judge: JudgeRatings, topics: dict[str, Topic],
                   passages: dict[str, Passage], *, unknown_topics: str = "error",
                   placeholder: str | None = None
                   ) -> tuple[dict[tuple[str, str], list[int]], int]:
    """The ratings that fit the topics: every list as long as its topic's questions, every
    passage in the collection (when there is one). Ratings of unknown topics are an error, or
    with ``unknown_topics="skip"`` counted and left out (a release's judge folder may cover
    topics its topic folder does not). With ``placeholder`` (a text with ``{n}``), a rated
    topic without questions first gets one placeholder question per rating of its first
    list. Returns (ratings, skipped)."""
    ratings: dict[tuple[str, str], list[int]] = {}
    skipped = 0
    for (tid, pid), r in judge.ratings.items():
        where, (tkey, pkey, rkey) = judge.where[(tid, pid)], judge.field_names((tid, pid))
        if tid not in topics:
            if unknown_topics == "skip":
                skipped += 1
                continue
            raise DataError(f"unknown topic {tid!r}", field=tkey, **where)
        if placeholder is not None and not topics[tid].questions:
            topics[tid].questions = [placeholder.format(n=i + 1) for i in range(len(r))]
        if passages and pid not in passages:
            raise DataError(f"unknown passage {pid!r}", field=pkey, **where)
        n = len(topics[tid].questions)
        if len(r) != n:
            raise DataError(f"{len(r)} ratings but topic {tid} has {n} questions", field=rkey,
                            **where)
        ratings[(tid, pid)] = r
    return ratings, skipped


def read_flat(files: FlatFiles, options: IngestOptions) -> tuple[Dataset, IngestReport]:
    """Read an own crux directory or a paper-era folder into a dataset; ``options.collection``
    adds a passage collection, ``options.judge`` gives the ratings in place of the folder's."""
    report = IngestReport("crux", str(files.root), layout=files.layout)
    passage_files = files.passages + ([Path(options.collection)] if options.collection else [])
    passages = read_passages(passage_files, options.encoding)
    by_topic: dict[str, list[str]] = {}
    for p in passages.values():
        if p.topic_id is not None:
            by_topic.setdefault(p.topic_id, []).append(p.doc_id)
    records = read_topic_records(files.topics, options.encoding, report)
    if not records:   # else the ratings would be blamed for naming unknown topics
        raise DataError("no topic record in the topics file(s)", path=files.topics[0])
    topics: dict[str, Topic] = {}
    for tid, rec in records.items():
        docs = [_doc_of(d) for d in rec.docids] if rec.docids else by_topic.get(tid, [])
        rec.topic.doc_ids = list(dict.fromkeys(docs))
        topics[tid] = rec.topic
        report.clusters_read += 1
    judgements = [Path(p) for p in options.judge] or files.judgements
    if options.judge and files.judgements:
        report.notes.append(f"{len(files.judgements)} ratings files of the folder not used "
                            f"(--judge given): {', '.join(p.name for p in files.judgements)}")
    ratings = attach_judge(judgements, topics, passages, options, report) if judgements else {}
    for path in files.qrels:
        report.counts.setdefault("qrels", []).append(read_diversity_qrels(path).summary())
    report.counts["files"] = {
        "topics": [p.name for p in files.topics], "passages": [p.name for p in files.passages],
        "judgements": [p.name for p in files.judgements], "runs": [p.name for p in files.runs],
        "ignored": [p.name for p in files.ignored]}
    if files.ignored:   # said, not only listed in the manifest
        names = [p.name + ("/" if p.is_dir() else "") for p in files.ignored]
        report.notes.append(f"{len(names)} entries of the folder not used (no topics, passages, "
                            f"ratings or run inside): {', '.join(names[:5])}"
                            + (", ..." if len(names) > 5 else ""))
    if not passages and passage_files:  # a file that is there but empty is no layout
        raise DataError("no passage in the passages file (empty): the judgements and runs "
                        "would name passages without texts", path=passage_files[0])
    if not passages:
        report.notes.append("no passages file: the dataset has no passage texts")
    return Dataset(topics, {}, passages, ratings), report


def attach_judge(paths: list[Path], topics: dict[str, Topic], passages: dict[str, Passage],
                 options: IngestOptions, report: IngestReport, *, unknown_topics: str = "error",
                 placeholder: str | None = None) -> dict[tuple[str, str], list[int]]:
    """The ratings of ``paths`` (judge or the labeling tool's human ones) that fit the
    topics, with what was read counted and noted in ``report``."""
    judge = read_ratings(paths, options.encoding, merge=options.judge_merge,
                         n_questions={tid: len(t.questions) for tid, t in topics.items()
                                      if t.questions})
    ratings, skipped = attach_ratings(judge, topics, passages, unknown_topics=unknown_topics,
                                      placeholder=placeholder)
    report.counts.update(unrated_values=judge.unrated, judge=judge.summary())
    if skipped:
        report.counts["ratings_of_other_topics"] = skipped
    if judge.unrated:
        report.notes.append(f"{judge.unrated} ratings of -1 (no rating) read: they answer "
                            "no question")
    note = sources_note(judge.summary())
    if note:   # original ratings and added ones (cruxflow judge's): how many of each
        report.notes.append(note)
    if judge.repeated:  # the same ratings twice: kept once, but said (issue 31)
        report.notes.append(f"{judge.repeated} (topic, passage) pairs rated twice with the "
                            "same ratings: each kept once")
    human = judge.human
    if human is not None:
        report.notes.append(
            f"human ratings of {len(human['annotator_files'])} annotators (the labeling "
            f"tool's): {human['human_labels']} ratings of {len(ratings)} passages; "
            f"{human['questions_rated_by_several']} questions rated by several annotators, "
            f"{human['questions_rated_differently']} of them differently, "
            f"{describe(human['merge'])}; a question no annotator rated answers nothing")
    return ratings

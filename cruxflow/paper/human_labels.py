"""Human labels as the CRUX labeling tool exports them, read beside our own formats
(docs/human-labels.md), and the inputs of ``cruxflow agreement`` gathered from files.

The tool (DylanJoo/crux-labeling) writes one JSONL file per annotator and task:

* Task 1, report answerability (``qlabels*.jsonl``): ``{"id": "<topic>"`` for the oracle
  report or ``"<system>_<topic>"``, ``"answerability": [1, 0 or -2 per sub-question],
  "coverage": float, "question_based_nugget": {question: highlighted answer}}``; -2 marks a
  question the annotator was not asked (the tool filters unanswerable sub-questions out), not
  a label;
* Task 2, passage ratings (``qrels*.jsonl``): ``{"id": topic, "document": passage id,
  "relevances": {"<question index>": 0-5, or -1 for not labelled}, "rationales": {...}}``.

Both become the frames of :mod:`cruxflow.paper.agreement` (our own formats), with a ``file``
column so that every later error names the file and line a label came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import (
    JudgeRatings,
    read_ratings,
    report_topics,
    split_report_id,
)
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import RATING_MAX, RATING_MIN
from cruxflow.data.names import ORACLE, check_unique, input_name, split_name
from cruxflow.metrics.judged import JudgedIndex, RatingPairs, TopicArrays
from cruxflow.metrics.judgments import TopicJudgments
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.scorer import score_rated_texts
from cruxflow.paper.agreement import (
    T1_FIELDS,
    T2_FIELDS,
    read_passage_ratings,
    read_report_labels,
)

NOT_ASKED, NOT_LABELLED = -2, -1
_NAME = re.compile(r"^\S+$")


def label_files(specs) -> list[tuple[str | None, Path]]:
    """``[NAME=]PATH`` items (a folder stands for its ``*.jsonl`` files) as (name, file)."""
    out: list[tuple[str | None, Path]] = []
    for spec in specs:
        name, path = split_name(spec)
        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob("*.jsonl"))
            if not files:
                raise DataError("no *.jsonl label file in the folder", path=p)
            if name is not None:
                raise DataError("NAME= names one file, not a folder", path=p)
            out += [(None, f) for f in files]
        elif p.is_file():
            out.append((name, p))
        else:
            raise DataError("no such label file", path=p)
    return out


def annotator_names(files: list[tuple[str | None, Path]]) -> list[str]:
    """The annotator of each export: its NAME=, else the file's name without its last suffix
    (:func:`cruxflow.data.names.input_name`); two exports of one name (``annotator1/
    qlabels.jsonl``, ``annotator2/qlabels.jsonl``) are refused in one line naming both: name
    them (``a1=annotator1/qlabels.jsonl``)."""
    pairs = [(name or input_name(f), f) for name, f in files]
    check_unique(pairs, "annotators")
    for name, f in pairs:
        if not _NAME.match(name):
            raise DataError(f"annotator name {name!r} holds whitespace", path=f)
    return [name for name, _ in pairs]


def _tool_kind(path: Path) -> str | None:
    for _, obj in iter_jsonl(path):
        if "answerability" in obj:
            return "t1"
        if "relevances" in obj:
            return "t2"
        return None
    raise DataError("no labels in file", path=path)


def _int(value, where: dict, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise DataError(f"expected an integer, got {value!r}", field=name, **where)
    return int(value)


def read_tool_reports(path, annotator: str, topics: set[str]) -> pd.DataFrame:
    """Task 1 export -> one row per (topic, system, question) asked: T1 frame plus ``file``."""
    rows = []
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        rid = obj.get("id")
        if not isinstance(rid, str) or not rid.strip():
            raise DataError("missing or not a string", field="id", **where)
        parts = split_report_id(rid, topics)
        if parts is None:
            raise DataError(f"{rid!r} is neither a topic nor <system>_<topic> of a known topic",
                            field="id", **where)
        labels = obj.get("answerability")
        if not isinstance(labels, list):
            raise DataError("expected a list (1, 0 or -2 per sub-question)",
                            field="answerability", **where)
        for q, value in enumerate(labels):
            value = _int(value, where, "answerability")
            if value not in (0, 1, NOT_ASKED):
                raise DataError(f"item {q} ({value}) is not 1, 0 or -2", field="answerability",
                                **where)
            if value != NOT_ASKED:
                rows.append({"topic_id": parts[1], "system": parts[0], "annotator": annotator,
                             "question": q, "answerable": bool(value), "line": lineno,
                             "file": str(path)})
    return pd.DataFrame(rows, columns=[*T1_FIELDS, "line", "file"])


def read_tool_passages(path, annotator: str) -> tuple[pd.DataFrame, int]:
    """Task 2 export -> one row per (topic, passage, question) rated, and the -1 count."""
    rows, unlabelled = [], 0
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        tid, pid = obj.get("id"), obj.get("document")
        for name, value in (("id", tid), ("document", pid)):
            if not isinstance(value, str) or not _NAME.match(value):
                raise DataError("missing or not an identifier", field=name, **where)
        rel = obj.get("relevances")
        if not isinstance(rel, dict):
            raise DataError("expected an object {question index: rating}", field="relevances",
                            **where)
        for key, value in rel.items():
            if not str(key).isdigit():
                raise DataError(f"key {key!r} is not a question index", field="relevances",
                                **where)
            value = _int(value, where, "relevances")
            if value == NOT_LABELLED:
                unlabelled += 1
                continue
            if not RATING_MIN <= value <= RATING_MAX:
                raise DataError(f"question {key}: rating {value} is outside "
                                f"{RATING_MIN}..{RATING_MAX} (or -1)", field="relevances",
                                **where)
            rows.append({"topic_id": tid, "passage_id": pid, "question": int(key),
                         "annotator": annotator, "rating": value, "line": lineno,
                         "file": str(path)})
    return pd.DataFrame(rows, columns=[*T2_FIELDS, "line", "file"]), unlabelled


def _own(reader, path: Path, name: str | None) -> pd.DataFrame:
    if name is not None:
        raise DataError("this file names its annotators itself: drop NAME=", path=path)
    return reader(path).assign(file=str(path))


def _concat(frames: list[pd.DataFrame], what: str) -> pd.DataFrame:
    frame = pd.concat(frames, ignore_index=True)
    if frame.empty:
        raise DataError(f"no {what} in the label files")
    frame.attrs["path"] = ", ".join(dict.fromkeys(frame["file"]))
    return frame


def read_report_label_files(specs, topics=()) -> pd.DataFrame:
    """Task 1 labels from the tool's exports and/or our T1 files, as one frame."""
    files = label_files(specs)
    tool = [(n, f) for n, f in files if _tool_kind(f) == "t1"]
    ids = [obj.get("id") for _, f in tool for _, obj in iter_jsonl(f)]
    known = report_topics([i for i in ids if isinstance(i, str)], topics)
    names = dict(zip([f for _, f in tool], annotator_names(tool), strict=True))
    frames = [read_tool_reports(f, names[f], known) if f in names
              else _own(read_report_labels, f, n) for n, f in files]
    return _concat(frames, "report labels")


def read_passage_label_files(specs) -> tuple[pd.DataFrame, int]:
    """Task 2 ratings from the tool's exports and/or our T2 files; the -1 count."""
    files = label_files(specs)
    tool = [(n, f) for n, f in files if _tool_kind(f) == "t2"]
    names = dict(zip([f for _, f in tool], annotator_names(tool), strict=True))
    frames, unlabelled = [], 0
    for n, f in files:
        if f in names:
            frame, skipped = read_tool_passages(f, names[f])
            frames.append(frame)
            unlabelled += skipped
        else:
            frames.append(_own(read_passage_ratings, f, n))
    return _concat(frames, "passage ratings"), unlabelled


# --- the inputs of an agreement report ------------------------------------------------------------

@dataclass
class AgreementInputs:
    labels: pd.DataFrame | None = None            # T1
    kept: dict[str, list[int]] | None = None      # questions coverage counts, per topic
    kept_from: str | None = None
    llm_cov: pd.DataFrame | None = None           # the judge's Cov(y): topic, system, Cov_y
    human_ratings: pd.DataFrame | None = None     # T2
    llm_ratings: dict | None = None               # the judge's passage ratings
    counts: dict = field(default_factory=dict)


def _labelled_everywhere(labels: pd.DataFrame) -> dict[str, list[int]]:
    """Per topic, the questions every (report, annotator) of the topic has a label for."""
    out: dict[str, list[int]] = {}
    for tid, group in labels.groupby("topic_id", sort=True):
        sets = [set(g["question"]) for _, g in group.groupby(["system", "annotator"])]
        out[str(tid)] = sorted(set.intersection(*sets))
    return out


def split_report_ratings(judge: JudgeRatings, labels: pd.DataFrame | None
                         ) -> tuple[dict, dict]:
    """The judge's records split into ratings of Task 1 reports, ``{(topic, system):
    ratings}`` (the passage field names a report: ``<system>_<topic>``, the system, or the
    topic itself for the oracle report), and of passages, ``{(topic, passage): ratings}``."""
    names: dict[tuple[str, str], tuple[str, str]] = {}
    if labels is not None:
        for t, s in set(zip(labels["topic_id"], labels["system"], strict=True)):
            for name in {f"{s}_{t}", s} | ({t} if s == ORACLE else set()):
                names[(t, name)] = (t, s)
    reports, passages = {}, {}
    for key, ratings in judge.ratings.items():
        if key in names:
            reports[names[key]] = ratings
        else:
            passages[key] = ratings
    return reports, passages


def read_report_ratings(specs) -> dict[tuple[str, str], list[int]]:
    """cruxflow's ratings of generated reports (rule rag_judge: ``{"topic_id", "ratings"}``),
    one file per system: ``SYSTEM=FILE``, or the file name up to its first dot."""
    out: dict[tuple[str, str], list[int]] = {}
    files = [(name or path.name.split(".")[0], path) for name, path in label_files(specs)]
    check_unique(files, "systems")
    for system, path in files:
        for key, ratings in read_ratings_without_passage(path).items():
            out[(key, system)] = ratings
    return out


def read_ratings_without_passage(path) -> dict[str, list[int]]:
    from cruxflow.data.model import parse_ratings

    out = {}
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        tid = obj.get("topic_id")
        if not isinstance(tid, str) or not tid.strip():
            raise DataError("missing or not a string", field="topic_id", **where)
        out[tid] = parse_ratings(obj.get("ratings"), where, unrated_ok=True)
    return out


def gather(reports=(), passages=(), judge=(), judge_reports=(), eta: int = 3,
           topics=()) -> AgreementInputs:
    """Read what ``cruxflow agreement`` was given (``judge``: ratings files or folders, read
    as one). Coverage counts, per topic, the questions every annotator of the topic labelled
    (the tool asks only the answerable ones) and, with judge ratings, of those only the ones
    the judge's passage ratings answer: App. A.2 computes human coverage "using the same set
    of answerable sub-questions" as the judge's."""
    inputs = AgreementInputs()
    ratings = read_ratings(list(judge)) if judge else None
    known = set(topics) | ({t for t, _ in ratings.ratings} if ratings else set())
    labels = read_report_label_files(reports, known) if reports else None
    rated, by_passage = split_report_ratings(ratings, labels) if ratings else ({}, {})
    if ratings is not None:
        inputs.llm_ratings = by_passage
        inputs.counts["judge"] = {**ratings.summary(), "report_ratings": len(rated)}
    if labels is not None:
        inputs.labels = labels
        inputs.kept, inputs.kept_from = _labelled_everywhere(labels), "labelled questions"
        if by_passage:
            arrays = TopicArrays(JudgedIndex(RatingPairs.from_pairs(by_passage)), eta)
            answerable = dict(zip(arrays.topic_ids, arrays.kept, strict=True))
            inputs.counts["answerable_questions_without_labels"] = sum(
                len(set(answerable.get(t, [])) - set(qs)) for t, qs in inputs.kept.items())
            inputs.kept = {t: [q for q in qs if q in answerable.get(t, [])]
                           for t, qs in inputs.kept.items()}
            inputs.kept_from = "labelled questions the judge's passage ratings answer"
        if judge_reports:
            rated.update(read_report_ratings(judge_reports))
        if rated:
            # Cov(y) of each report over the topic's counted questions (the engine's Cov)
            judged = {t: TopicJudgments(t, len(r), inputs.kept.get(t, []), [], [], eta)
                      for (t, _), r in rated.items()}
            cov = score_rated_texts([(t, r) for (t, _), r in rated.items()], ["Cov@1"],
                                    judged, options=MetricOptions(eta=eta))["Cov@1"]
            inputs.llm_cov = pd.DataFrame(
                [(t, s, v) for ((t, s), _), v in zip(rated.items(), cov.tolist(), strict=True)],
                columns=["topic", "system", "Cov_y"])
    if passages:
        inputs.human_ratings, inputs.counts["t2_not_labelled"] = \
            read_passage_label_files(passages)
    return inputs

"""The CRUX release as users clone it from Hugging Face: one folder per subset under
``$CRUX_ROOT`` (``crux-mds-duc04``, ``crux-mds-multi_news``, ``crux-neuclir``), the layout the
authors' loaders read (DylanJoo/crux: ``crux/tools/mds/ir_utils.py``,
``crux/tools/neuclir/ir_utils.py``, ``crux/evaluation/rac_eval.py``)::

    crux-mds-<subset>/
      topic/*.jsonl          {"id", "request"}                 the open-ended report request
      subtopics/*.jsonl      {"id", "subquestions": [...]}     ("nuggets" in crux-neuclir)
      judge/*.jsonl          {"id", "docid", "rating": [...]}  e.g. ratings.<judge>.<tag>.jsonl
      qrels/*                ndeval diversity qrels (div_qrels-tau3.txt)
      report/ or data/       optional: the dataset's rows {"id", "summary"} (JSONL or parquet)
      run/                   optional: first-stage TREC runs
    crux-mds-corpus/         the passage collection (JSONL: id/_id, contents/text, title)

crux-neuclir's topics are NeuCLIR 2024 report requests (``request_id``, ``title``,
``problem_statement``; the authors' loader joins title and problem statement), its ratings are
human ones (``judge/ratings.human.jsonl``) and its passages come from the NeuCLIR collection,
which ``--collection`` may name.
"""

from __future__ import annotations

from pathlib import Path

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions, IngestReport
from cruxflow.data.ingest.crux_common import (
    blank_question_notes,
    jsonl_files,
    question_list,
    read_collection,
    read_diversity_qrels,
    read_id,
    regular_files,
)
from cruxflow.data.ingest.crux_paper import attach_judge
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import Dataset, Passage, Reference, Topic, parse_passage_id

RELEASE = "Hugging Face release clone"
MARKERS = ("topic", "subtopics", "judge", "qrels")
CORPUS_NAME = "crux-mds-corpus"
REFERENCE_DIRS = ("report", "data")


def is_release(root: Path) -> bool:
    return root.is_dir() and (root / "topic").is_dir() and \
        any((root / m).exists() for m in MARKERS[1:])


def _text(obj: dict, name: str, where: dict) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataError("missing or not a non-empty string", field=name, **where)
    return value


def read_requests(root: Path, encoding: str) -> tuple[dict[str, str], dict[str, dict], bool]:
    """Report requests by topic from ``topic/*.jsonl``; also where each was read and whether
    they are NeuCLIR requests."""
    requests: dict[str, str] = {}
    where_of: dict[str, dict] = {}
    neuclir = False
    for path in jsonl_files(root / "topic", "topic"):
        for lineno, obj in iter_jsonl(path, encoding):
            where = {"path": path, "record": f"line {lineno}"}
            if "request" in obj:
                tid, text = read_id(obj, ("id",), where), _text(obj, "request", where)
            else:  # NeuCLIR 2024 report request
                neuclir = True
                tid = read_id(obj, ("request_id", "id"), where)
                text = f"{_text(obj, 'title', where)} {_text(obj, 'problem_statement', where)}"
            if tid in requests:
                first = where_of[tid]
                raise DataError(f"duplicate topic {tid!r} (first at {first['path']} "
                                f"{first['record']})", field="id", **where)
            requests[tid], where_of[tid] = text, where
    return requests, where_of, neuclir


def read_subquestions(root: Path, encoding: str, report: IngestReport | None = None
                      ) -> dict[str, list[str]]:
    """Sub-questions by topic from ``subtopics/*.jsonl`` (``subquestions`` or ``nuggets``); a
    null or empty one keeps its index under a placeholder, counted and named in ``report``."""
    out: dict[str, list[str]] = {}
    nulls: dict[str, list[int]] = {}
    empties: dict[str, list[int]] = {}
    first: dict[str, str] = {}
    folder = root / "subtopics"
    if not folder.is_dir():
        return out
    for path in jsonl_files(folder, "subtopics"):
        for lineno, obj in iter_jsonl(path, encoding):
            where = {"path": path, "record": f"line {lineno}"}
            tid = read_id(obj, ("id",), where)
            key = "subquestions" if "subquestions" in obj else "nuggets"
            items = obj.get(key)
            if not isinstance(items, list):
                raise DataError("must be a list of strings (looked for subquestions, nuggets)",
                                field=key, **where)
            if tid in out:
                raise DataError(f"sub-questions of topic {tid!r} given twice (first at "
                                f"{first[tid]})", field="id", **where)
            questions, null_at, empty_at = question_list(items, key, where)
            if null_at:
                nulls[tid] = null_at
            if empty_at:
                empties[tid] = empty_at
            out[tid], first[tid] = questions, f"{path} line {lineno}"
    if report is not None:
        counts, notes = blank_question_notes(nulls, empties)
        report.counts.update(counts)
        report.notes += notes
    return out


def _reference_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for name in REFERENCE_DIRS:
        d = root / name
        if d.is_dir():
            files += sorted(f for f in d.rglob("*") if f.suffix in (".jsonl", ".parquet"))
    return files


def _rows(path: Path, encoding: str):
    if path.suffix == ".parquet":
        with extra(__name__, "parquet"):
            import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist(), 1):
            yield {"path": path, "record": f"row {i}"}, row
    else:
        for lineno, obj in iter_jsonl(path, encoding):
            yield {"path": path, "record": f"line {lineno}"}, obj


def read_summaries(root: Path, encoding: str) -> tuple[dict[str, list[str]], list[Path]]:
    """The reference summaries y* by topic: the dataset's rows (``id``, ``summary``: a text or a
    list of texts, DUC's four) found under ``report/`` or ``data/``."""
    out: dict[str, list[str]] = {}
    files = _reference_files(root)
    for path in files:
        for where, row in _rows(path, encoding):
            if "summary" not in row:
                raise DataError("missing (a reference row has id and summary)",
                                field="summary", **where)
            tid = read_id(row, ("id",), where)
            summary = row["summary"]
            texts = [summary] if isinstance(summary, str) else summary
            if not isinstance(texts, list) or not texts or \
                    not all(isinstance(t, str) and t.strip() for t in texts):
                raise DataError("expected a non-empty text or list of texts", field="summary",
                                **where)
            out[tid] = texts
    return out, files


def find_corpus(root: Path, options: IngestOptions) -> Path | None:
    if options.collection is not None:
        return Path(options.collection)
    # the MDS subsets share one collection; crux-neuclir's passages are NeuCLIR's documents
    sibling = root.resolve().parent / CORPUS_NAME
    return sibling if root.resolve().name.startswith("crux-mds-") and sibling.is_dir() else None


def release_runs(root: Path) -> list[Path]:
    for name in ("run", "runs"):
        d = root / name
        if d.is_dir():
            return regular_files(sorted(f for f in d.iterdir() if not f.name.startswith(".")))
    return []


def read_release(root: Path, options: IngestOptions) -> tuple[Dataset, IngestReport]:
    report = IngestReport("crux", str(root), layout=RELEASE)
    enc = options.encoding
    requests, _, neuclir = read_requests(root, enc)
    if neuclir:
        report.layout = f"{RELEASE} (crux-neuclir)"
    subquestions = read_subquestions(root, enc, report)
    summaries, summary_files = read_summaries(root, enc)

    passages: dict[str, Passage] = {}
    corpus = find_corpus(root, options)
    if corpus is not None:
        texts, files = read_collection(corpus, enc)
        for pid, text in texts.items():
            try:
                tid, doc, _ = parse_passage_id(pid)
                passages[pid] = Passage(pid, text, tid, f"{tid}:{doc}")
            except ValueError:  # NeuCLIR document ids
                passages[pid] = Passage(pid, text)
        report.counts["corpus_files"] = [str(f) for f in files]
    else:
        looked = "--collection" + (f" and ../{CORPUS_NAME}" if root.resolve().name.startswith(
            "crux-mds-") else "")
        report.notes.append(f"no passage collection (looked for {looked}): the dataset has no "
                            "passage texts")

    docs_of: dict[str, list[str]] = {}
    for p in passages.values():
        if p.topic_id in requests:
            docs_of.setdefault(p.topic_id, []).append(p.doc_id)
    topics: dict[str, Topic] = {}
    no_questions = []
    for tid, request in requests.items():
        texts = summaries.get(tid)
        refs = [Reference(f"{tid}.{i}", t) for i, t in enumerate(texts)] \
            if texts and len(texts) > 1 else []
        reference = None if not texts else "\n\n".join(texts)
        questions = subquestions.get(tid, [])
        if not questions:
            no_questions.append(tid)
        topics[tid] = Topic(tid, reference, list(dict.fromkeys(docs_of.get(tid, []))),
                            query=request, questions=questions, references=refs,
                            source_id=tid)
        report.clusters_read += 1

    ratings: dict[tuple[str, str], list[int]] = {}
    judge_path = root / "judge"
    if options.judge:
        if judge_path.exists():
            report.notes.append("the folder's judge/ not used (--judge given)")
        ratings = attach_judge([Path(p) for p in options.judge], topics, passages, options,
                               report, unknown_topics="skip")
    elif judge_path.exists():
        ratings = attach_judge([judge_path], topics, passages, options, report,
                               unknown_topics="skip")
        report.counts.setdefault("ratings_of_other_topics", 0)
        if neuclir:
            report.notes.append("the ratings are human ones (crux-neuclir)")
    else:
        report.notes.append("no judge/ folder: the dataset has no ratings")
    qrels = [read_diversity_qrels(f).summary() for f in regular_files(sorted(
        f for f in (root / "qrels").glob("*") if not f.name.startswith(".")))] \
        if (root / "qrels").is_dir() else []
    report.counts.update(qrels=qrels, topics_without_subquestions=no_questions,
                         subquestions_of_other_topics=len(set(subquestions) - set(topics)),
                         reference_files=[str(f) for f in summary_files])
    missing_refs = [t for t, topic in topics.items() if topic.reference is None]
    if missing_refs:
        report.notes.append(
            f"{len(missing_refs)} of {len(topics)} topics have no reference summary (looked in "
            f"{' and '.join(d + '/' for d in REFERENCE_DIRS)}): the dataset can be scored but "
            "not regenerated")
    return Dataset(topics, {}, passages, ratings), report

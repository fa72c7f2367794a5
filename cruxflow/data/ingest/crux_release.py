"""The CRUX release as users clone it from Hugging Face: one folder per subset under
``$CRUX_ROOT`` (``crux-mds-duc04``, ``crux-mds-multi_news``, ``crux-neuclir``, and the newer
``crux-ragtime``, ``crux-researchy``, ``crux-biogen``), the layout the authors' loaders read
(DylanJoo/crux: ``crux/tools/{mds,neuclir,ragtime,researchy,biogen}/ir_utils.py``,
``crux/evaluation/rac_eval.py``; docs/released-data.md lists what each subset holds)::

    crux-<subset>/
      topic/*.jsonl          one request per line, in any of :data:`REQUEST_KINDS`' spellings
      subtopics/*.jsonl      {"id", "subquestions": [...]}, or {"id", "nuggets": [...]}: the
                             rated units of crux-neuclir, each a question or a
                             [question, answer] / [question, [answers]] pair
      judge/*.jsonl          {"id", "docid", "rating": [...]}  e.g. ratings.<judge>.<tag>.jsonl
      qrels/*                ndeval diversity qrels (div_qrels-tau3.txt,
                             neuclir24-test-request.qrel)
      report/ or data/       optional: the dataset's rows {"id", "summary"} (JSONL or parquet)
      run/ or runs/          optional: first-stage TREC runs
      docs/ or corpus/       optional: the subset's own passages (crux-researchy's ClueWeb22
                             subset); else ``--collection`` or ../crux-mds-corpus
    crux-mds-corpus/         the passage collection (JSONL: id/_id, contents/text, title)

crux-neuclir's topics are NeuCLIR 2024 report requests (``request_id``, ``title``,
``problem_statement``; the authors' loader joins title and problem statement), its ratings are
human ones (``judge/ratings.human.jsonl``), one per nugget (the sub-questions' answers, an AND
question split into one nugget per answer), and its passages come from the NeuCLIR collection,
which ``--collection`` may name (the translated ``*.jsonl.gz`` files read as they are).
"""

from __future__ import annotations

import json
import re
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
)
from cruxflow.data.ingest.crux_paper import attach_judge
from cruxflow.data.io import iter_jsonl, regular_files
from cruxflow.data.model import Dataset, Passage, Reference, Topic, parse_passage_id

RELEASE = "Hugging Face release clone"
# topic/ and one of these make a release subset (crux-biogen ships runs without ratings)
MARKERS = ("topic", "subtopics", "judge", "qrels", "run", "runs")
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


# The spellings of a request the authors' loaders read, as (kind, how to tell it): the text is
# what each loader builds for the request.
REQUEST_KINDS = (
    ("crux", "id + request (crux/tools/mds)"),
    ("neuclir", "request_id + title + problem_statement, joined (crux/tools/neuclir, "
                "crux/tools/ragtime load_query: NeuCLIR 2024 and RAGTIME report requests)"),
    ("neuclir-ir", "topic_id + topics[0].topic_title + topic_description, joined "
                   "(crux/tools/neuclir load_topic: NeuCLIR ad hoc topics)"),
    ("researchy", "id + question, gpt4_decomposition.subquestions as sub-questions "
                  "(crux/tools/researchy: the Researchy Questions records)"),
    ("biogen", "id + topic + question + narrative, joined (crux/tools/biogen load_query: "
               "TREC BioGen 2025 task B)"),
)
# the subset each kind of request belongs to, as the layout line names it
SUBSET_OF = {"neuclir": "crux-neuclir", "neuclir-ir": "crux-neuclir",
             "researchy": "crux-researchy", "biogen": "crux-biogen"}
# the subsets beyond the MDS ones, as their folders are named
NEWER_SUBSETS = ("crux-neuclir", "crux-ragtime", "crux-researchy", "crux-biogen")
# Researchy's loader strips the "- " bullets of GPT-4's sub-questions (text_utils.remove_header)
_BULLET = re.compile(r"(\s)*-\s")


def _request(obj: dict, where: dict) -> tuple[str, str, str, list[str] | None]:
    """(topic, request text, kind, sub-questions the record carries) of a topic record."""
    if "request" in obj:
        return read_id(obj, ("id",), where), _text(obj, "request", where), "crux", None
    if "problem_statement" in obj:
        tid = read_id(obj, ("request_id", "id"), where)
        return (tid, f"{_text(obj, 'title', where)} {_text(obj, 'problem_statement', where)}",
                "neuclir", None)
    if "topics" in obj and "topic_id" in obj:
        topics = obj["topics"]
        if not isinstance(topics, list) or not topics or not isinstance(topics[0], dict):
            raise DataError("expected a list of topic objects", field="topics", **where)
        first = topics[0]
        where1 = {**where, "record": f"{where['record']}, topics[0]"}
        text = f"{_text(first, 'topic_title', where1)} {_text(first, 'topic_description', where1)}"
        return read_id(obj, ("topic_id",), where), text, "neuclir-ir", None
    if "gpt4_decomposition" in obj:
        decomposition = obj["gpt4_decomposition"]
        items = decomposition.get("subquestions") if isinstance(decomposition, dict) else None
        if not isinstance(items, list) or not all(isinstance(q, str) for q in items):
            raise DataError("expected an object whose subquestions are a list of strings",
                            field="gpt4_decomposition", **where)
        questions = [_BULLET.sub("", q).strip() for q in items]
        return read_id(obj, ("id",), where), _text(obj, "question", where), "researchy", questions
    if "narrative" in obj and "question" in obj:
        text = " ".join(_text(obj, f, where) for f in ("topic", "question", "narrative"))
        return read_id(obj, ("id",), where), text, "biogen", None
    raise DataError("not a topic record: expected one of " + "; ".join(
        f"{kind}: {how}" for kind, how in REQUEST_KINDS), **where)


def read_requests(root: Path, encoding: str) -> tuple[dict[str, str], dict[str, dict], set[str],
                                                       dict[str, list[str]]]:
    """Report requests by topic from ``topic/*.jsonl``; also where each was read, the kinds of
    record read (:data:`REQUEST_KINDS`) and the sub-questions the records carry (Researchy)."""
    requests: dict[str, str] = {}
    where_of: dict[str, dict] = {}
    kinds: set[str] = set()
    carried: dict[str, list[str]] = {}
    for path in jsonl_files(root / "topic", "topic"):
        for lineno, obj in iter_jsonl(path, encoding):
            where = {"path": path, "record": f"line {lineno}"}
            tid, text, kind, questions = _request(obj, where)
            if tid in requests:
                first = where_of[tid]
                raise DataError(f"duplicate topic {tid!r} (first at {first['path']} "
                                f"{first['record']})", field="id", **where)
            requests[tid], where_of[tid] = text, where
            kinds.add(kind)
            if questions is not None:
                carried[tid] = questions
    return requests, where_of, kinds, carried


def nugget_text(item, where: dict, i: int) -> str | None:
    """One nugget of crux-neuclir's ``nuggets`` as a sub-question's text: a question alone, or
    a ``[question, answer]`` pair (an AND question's answer, one nugget each) or a
    ``[question, [answers]]`` pair (an OR question, any answer will do), written
    "question Answer: a" / "question Answer: a or b" (the authors' convert_official_data_to_crux
    writes the pairs). None for a null item (a placeholder)."""
    if item is None or isinstance(item, str):
        return item
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
        question, answers = item
        if isinstance(answers, str):
            answers = [answers]
        if isinstance(answers, list) and all(isinstance(a, str) for a in answers):
            shown = " or ".join(a.strip() for a in answers if a.strip())
            return f"{question.strip()} Answer: {shown}" if shown else question
    raise DataError(f"item {i} must be a question or a [question, answer(s)] pair, got "
                    f"{json.dumps(item)[:80]}", field="nuggets", **where)


def read_subquestions(root: Path, encoding: str, report: IngestReport | None = None
                      ) -> dict[str, list[str]]:
    """Sub-questions by topic from ``subtopics/*.jsonl``: ``subquestions`` records, and
    ``nuggets`` records (crux-neuclir: the units its ratings and qrels index, see
    :func:`nugget_text`), which win where a topic has both, since its ratings are per nugget;
    a null or empty one keeps its index under a placeholder, counted and named in ``report``."""
    found: dict[str, dict[str, tuple[list[str], list[int], list[int]]]] = {
        "subquestions": {}, "nuggets": {}}
    first: dict[tuple[str, str], str] = {}
    folder = root / "subtopics"
    if not folder.is_dir():
        return {}
    for path in jsonl_files(folder, "subtopics"):
        for lineno, obj in iter_jsonl(path, encoding):
            where = {"path": path, "record": f"line {lineno}"}
            tid = read_id(obj, ("id",), where)
            key = "subquestions" if "subquestions" in obj else "nuggets"
            items = obj.get(key)
            if not isinstance(items, list):
                raise DataError("must be a list (looked for subquestions, nuggets)",
                                field=key, **where)
            if (key, tid) in first:
                raise DataError(f"{key} of topic {tid!r} given twice (first at "
                                f"{first[key, tid]})", field="id", **where)
            if key == "nuggets":
                items = [nugget_text(item, where, i) for i, item in enumerate(items)]
            found[key][tid] = question_list(items, key, where)
            first[key, tid] = f"{path} line {lineno}"
    chosen = {**found["subquestions"], **found["nuggets"]}
    out = {tid: questions for tid, (questions, _, _) in chosen.items()}
    if report is not None:
        nulls = {tid: v[1] for tid, v in chosen.items() if v[1]}
        empties = {tid: v[2] for tid, v in chosen.items() if v[2]}
        counts, notes = blank_question_notes(nulls, empties)
        report.counts.update(counts)
        report.notes += notes
        both = sorted(set(found["nuggets"]) & set(found["subquestions"]))
        if found["nuggets"]:
            report.counts["nugget_topics"] = len(found["nuggets"])
        if both:
            report.notes.append(
                f"{len(both)} topics have both sub-questions and nuggets in subtopics/: their "
                "nuggets are the questions (the ratings and qrels index nuggets; an AND "
                "question is one nugget per answer)")
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


# folders of a subset that hold its own passages (crux-researchy's ClueWeb22-B subset, docs/)
OWN_CORPUS_DIRS = ("docs", "corpus")


def find_corpus(root: Path, options: IngestOptions) -> Path | None:
    if options.collection is not None:
        return Path(options.collection)
    for name in OWN_CORPUS_DIRS:
        if (root / name).is_dir():
            return root / name
    # the MDS subsets share one collection; crux-neuclir's passages are NeuCLIR's documents
    sibling = root.resolve().parent / CORPUS_NAME
    return sibling if root.resolve().name.startswith("crux-mds-") and sibling.is_dir() else None


def release_runs(root: Path) -> list[Path]:
    for name in ("run", "runs"):
        d = root / name
        if d.is_dir():
            return regular_files(sorted(f for f in d.iterdir() if not f.name.startswith(".")))
    return []


# the text of a sub-question a subset rates but whose text it does not ship
UNSHIPPED_QUESTION = "(sub-question {n}: its text is not in the release folder)"


def _placeholder_note(topics: dict[str, Topic], report: IngestReport) -> None:
    """Count and say which topics got placeholder questions (:data:`UNSHIPPED_QUESTION`): a
    topic rated without sub-questions (crux-neuclir's judge/ without its subtopics/) gets one
    per rating, so that it can be scored as rated; there is no text to rate anything new
    against."""
    filled = [tid for tid, t in topics.items()
              if t.questions and t.questions[0] == UNSHIPPED_QUESTION.format(n=1)]
    if filled:
        report.counts["topics_with_placeholder_questions"] = filled
        report.notes.append(
            f"{len(filled)} rated topics have no sub-questions in subtopics/: each gets one "
            "placeholder per rating (scored as rated; no text to rate anything new against)")


def read_release(root: Path, options: IngestOptions) -> tuple[Dataset, IngestReport]:
    report = IngestReport("crux", str(root), layout=RELEASE)
    enc = options.encoding
    requests, _, kinds, carried = read_requests(root, enc)
    # the folder's own name where it is one (crux-ragtime's requests are spelled as NeuCLIR's)
    subsets = [root.resolve().name] if root.resolve().name in NEWER_SUBSETS \
        else sorted({SUBSET_OF[k] for k in kinds if k in SUBSET_OF})
    if subsets:
        report.layout = f"{RELEASE} ({', '.join(subsets)})"
    neuclir = bool(kinds & {"neuclir", "neuclir-ir"})
    subquestions = {**carried, **read_subquestions(root, enc, report)}
    if carried:
        report.notes.append(f"{len(carried)} topic records carry their sub-questions (the "
                            "Researchy Questions' GPT-4 decomposition, bullets removed as the "
                            "authors' loader does); subtopics/ overrides them")
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
        looked = "--collection, " + "/, ".join(OWN_CORPUS_DIRS) + "/" + (
            f" and ../{CORPUS_NAME}" if root.resolve().name.startswith("crux-mds-") else "")
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
                               report, unknown_topics="skip", placeholder=UNSHIPPED_QUESTION)
    elif judge_path.exists():
        ratings = attach_judge([judge_path], topics, passages, options, report,
                               unknown_topics="skip", placeholder=UNSHIPPED_QUESTION)
        report.counts.setdefault("ratings_of_other_topics", 0)
        if neuclir:
            report.notes.append("the ratings are human ones (crux-neuclir)")
    else:
        report.notes.append("no judge/ folder: the dataset has no ratings")
    _placeholder_note(topics, report)
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

"""The questions of a topic (paper Sec. 3.2): the open-ended report request x (Fig. 9) and the
sub-questions Q (Fig. 6), both generated from the human summary y*.

A topic of one's own (``cruxflow ingest --format documents``) may bring its request or its
questions: :func:`to_generate` leaves it out of that stage. One without a reference summary gets
them from its documents instead (``*_DOCUMENTS`` prompts: cruxflow's, not the paper's method).
A dataset whose topics all have a summary and bring nothing gets exactly the paper's prompts, in
the same order, so its cached calls are unchanged. With ``questions_from="request"`` (the CRUX
authors' Researchy way) every topic's questions come from its report request, with their query
generator (:data:`~cruxflow.stages.prompts.SUBQUESTIONS_REQUEST`: ten queries or questions, one
per line)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cruxflow.data.model import Document, Topic, require_reference
from cruxflow.data.text import clip_words
from cruxflow.llm import GENERATION, LLMRunner, Sampling
from cruxflow.llm.parsing import (
    REPORT_REQUEST_TEXT,
    SUBQUESTION_TEXT,
    extract_tagged,
    instructions_of,
    line_items,
)
from cruxflow.llm.retry import Checked, ask_with_retries
from cruxflow.stages.prompts import (
    REPORT_REQUEST,
    REPORT_REQUEST_DOCUMENTS,
    SUBQUESTIONS,
    SUBQUESTIONS_DOCUMENTS,
    SUBQUESTIONS_REQUEST,
)

QUESTIONS_FROM = ("documents", "request")

# The words of a topic's documents that a *_DOCUMENTS prompt shows, shared evenly between them:
# room for the answer in SmolLM2's 4,096-token window.
DOCUMENTS_MAX_WORDS = 1500


def to_generate(topics: Sequence[Topic], given: str) -> tuple[list[Topic], dict]:
    """``(topics to generate for, {topic_id: given value})``, ``given`` being the Topic field
    (``query`` or ``questions``) that a topic of one's own may bring."""
    have = {t.topic_id: getattr(t, given) for t in topics if getattr(t, given)}
    return [t for t in topics if t.topic_id not in have], have


def with_queries(topics: Sequence[Topic], queries: dict[str, str]) -> list[Topic]:
    """``topics`` with the report requests of ``queries`` where they bring none (the report
    request stage's output: given ones are in it too)."""
    import dataclasses

    return [t if t.query else dataclasses.replace(t, query=queries[t.topic_id])
            for t in topics]


def documents_text(topic: Topic, documents: dict[str, Document] | None,
                   max_words: int = DOCUMENTS_MAX_WORDS) -> str:
    """A topic's documents for a *_DOCUMENTS prompt: numbered, each clipped to its share of
    ``max_words``."""
    if not documents:
        raise ValueError(f"topic {topic.topic_id} has no reference summary and no documents "
                         "were given to generate from")
    share = max(1, max_words // max(1, len(topic.doc_ids)))
    parts = []
    for i, did in enumerate(topic.doc_ids, 1):
        doc = documents[did]
        head = f"Document {i}" + (f" ({doc.title})" if doc.title else "")
        parts.append(f"{head}: {clip_words(' '.join(doc.text.split()), share)}")
    return "\n\n".join(parts)


def _instructions(prompt: str, paper, own) -> str:
    """The instructions of whichever of the two templates ``prompt`` was made from."""
    pieces = re.split(r"\{(?:" + "|".join(own.fields) + r")\}", own.text)
    template = own if re.fullmatch(".*?".join(map(re.escape, pieces)), prompt, re.S) else paper
    n = re.search(r"Write (\d+) diverse", prompt)
    return instructions_of(template).replace("Write  diverse", f"Write {n.group(1)} diverse") \
        if n else instructions_of(template)


def report_request_parser(prompt: str, checked: Checked):
    """How the report request stage reads an output of ``prompt``: the first ``<r>`` item (the
    whole text when untagged), kept when it is text of the kind asked for."""
    instructions = _instructions(prompt, REPORT_REQUEST, REPORT_REQUEST_DOCUMENTS)

    def parse(text: str) -> str | None:
        if "<r>" not in text.lower() and "</r>" not in text.lower():
            items = [" ".join(text.split())]
        else:
            items = extract_tagged(text, "r")[:1]
        kept = checked.keep([i for i in items if i], instructions)
        return kept[0] if kept else None
    return parse


def subquestion_parser(prompt: str, checked: Checked):
    """How the sub-question stage reads an output of ``prompt``: its ``<q>`` items that are
    text of the kind asked for (``None`` when none is)."""
    instructions = _instructions(prompt, SUBQUESTIONS, SUBQUESTIONS_DOCUMENTS)
    return lambda text: checked.keep(extract_tagged(text, "q"), instructions) or None


def report_request_prompts(topics: Sequence[Topic],
                           documents: dict[str, Document] | None = None) -> list[str]:
    """Fig. 9's prompt for each topic, from its human summary; ours from its documents where
    it has none and ``documents`` are given."""
    return [REPORT_REQUEST.render(report=require_reference(t, "write its report request"))
            if t.reference is not None or documents is None
            else REPORT_REQUEST_DOCUMENTS.render(documents=documents_text(t, documents))
            for t in topics]


def subquestion_prompts(topics: Sequence[Topic], n: int,
                        documents: dict[str, Document] | None = None,
                        questions_from: str = "documents") -> list[str]:
    """Fig. 6's prompt asking for ``n`` sub-questions of each topic's human summary; ours from
    its documents where it has none and ``documents`` are given; with ``questions_from=
    "request"``, the authors' query generator on each topic's request (it asks for ten)."""
    if questions_from not in QUESTIONS_FROM:
        raise ValueError(f"questions_from must be one of {QUESTIONS_FROM}, got "
                         f"{questions_from!r}")
    if questions_from == "request":
        for t in topics:
            if not t.query:
                raise ValueError(f"topic {t.topic_id} has no report request to write its "
                                 "sub-questions from")
        return [SUBQUESTIONS_REQUEST.render(request=t.query) for t in topics]
    return [SUBQUESTIONS.render(n=n, document=require_reference(t, "write its sub-questions"))
            if t.reference is not None or documents is None
            else SUBQUESTIONS_DOCUMENTS.render(n=n, documents=documents_text(t, documents))
            for t in topics]


def request_questions(text: str) -> list[str]:
    """The questions of the query generator's answer: one per line (its instruction says so,
    without numbering; numbers, outline numbers such as "1.1.1:", bullets and "Question:"
    labels are taken off all the same, as :func:`~cruxflow.llm.parsing.line_items` cleans a
    line), blank lines, headings (a line that ends with ':') and repeats left out."""
    return [q for q in line_items(text) if not q.endswith(":")]


def report_requests(topics: Sequence[Topic], runner: LLMRunner, *,
                    sampling: Sampling = GENERATION, attempts: int = 3,
                    documents: dict[str, Document] | None = None) -> dict[str, str]:
    """The open-ended query x of each topic, generated from its human summary y*.

    An output without any ``<r>`` tag is taken whole (whitespace collapsed). One with tags but
    no item, or whose request is not text of the kind asked for (``REPORT_REQUEST_TEXT``: no
    words, a timestamp, a copy of the prompt, far from Fig. 9's 50 words), is retried; after
    ``attempts`` it falls back to its text with the tags removed (kept, and counted as a parse
    failure), and a topic still without a query is an error (it cannot be retrieved for).
    """
    checked = Checked(REPORT_REQUEST_TEXT, runner)
    prompts = report_request_prompts(topics, documents)

    def untagged(text: str) -> str:
        return " ".join(re.sub(r"</?r>", " ", text, flags=re.IGNORECASE).split())

    answers = ask_with_retries(runner, prompts, sampling,
                               [report_request_parser(p, checked) for p in prompts],
                               attempts=attempts, fallback=untagged)
    checked.log(sum(a.failed for a in answers), "their last output kept")
    out = {}
    for t, answer in zip(topics, answers, strict=True):
        if not answer.value:
            raise ValueError(f"topic {t.topic_id}: the LLM gave no report request in "
                             f"{attempts} attempts")
        out[t.topic_id] = answer.value
    return out


def subquestions(topics: Sequence[Topic], runner: LLMRunner, n: int, *,
                 sampling: Sampling = GENERATION, attempts: int = 3, min_words: int = 3,
                 documents: dict[str, Document] | None = None,
                 questions_from: str = "documents") -> dict[str, list[str]]:
    """Up to ``n`` sub-questions per topic from its human summary (the first ``n`` parsed items
    of at least ``min_words`` words; shorter ones are fragments such as "Question:"); with
    ``questions_from="request"``, from its request (:func:`request_questions`: one per line,
    search keywords being allowed two words).

    A question that is not text of the kind asked for (``SUBQUESTION_TEXT``: no words, a
    timestamp, a copy of the prompt, far too long) is dropped and counted; an output left with
    none is asked again. A topic left with no question after ``attempts`` tries gets none
    (counted); it then has no answerable question and drops out of every metric, as a topic
    whose questions are all filtered would.
    """
    prompts = subquestion_prompts(topics, n, documents, questions_from)
    if questions_from == "request":   # one question a line; search keywords may be two words
        checked = Checked(SUBQUESTION_TEXT.with_min_words(2), runner)
        instructions = instructions_of(SUBQUESTIONS_REQUEST)
        parsers = [lambda text: checked.keep(request_questions(text), instructions) or None
                   for _ in prompts]
    else:
        checked = Checked(SUBQUESTION_TEXT.with_min_words(min_words), runner)
        parsers = [subquestion_parser(p, checked) for p in prompts]
    answers = ask_with_retries(runner, prompts, sampling, parsers, attempts=attempts,
                               fallback=[])
    checked.log(sum(a.failed for a in answers), "those topics have no sub-question")
    return {t.topic_id: kept_questions(a.value, n) for t, a in zip(topics, answers, strict=True)}


def kept_questions(parsed: list[str] | None, n: int) -> list[str]:
    """The sub-questions a topic keeps of those its output was parsed into: the first ``n``
    (none when every output was refused)."""
    return (parsed or [])[:n]

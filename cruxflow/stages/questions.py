"""The questions of a topic (paper Sec. 3.2): the open-ended report request x (Fig. 9) and the
sub-questions Q (Fig. 6), both generated from the human summary y*."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cruxflow.data.model import Topic, require_reference
from cruxflow.data.text import count_words
from cruxflow.llm import GENERATION, LLMRunner, Sampling
from cruxflow.llm.parsing import extract_tagged
from cruxflow.llm.retry import ask_with_retries
from cruxflow.stages.prompts import REPORT_REQUEST, SUBQUESTIONS


def report_request_prompts(topics: Sequence[Topic]) -> list[str]:
    """Fig. 9's prompt for each topic, from its human summary."""
    return [REPORT_REQUEST.render(report=require_reference(t, "write its report request"))
            for t in topics]


def subquestion_prompts(topics: Sequence[Topic], n: int) -> list[str]:
    """Fig. 6's prompt asking for ``n`` sub-questions of each topic's human summary."""
    return [SUBQUESTIONS.render(n=n, document=require_reference(t, "write its sub-questions"))
            for t in topics]


def report_requests(topics: Sequence[Topic], runner: LLMRunner, *,
                    sampling: Sampling = GENERATION, attempts: int = 3) -> dict[str, str]:
    """The open-ended query x of each topic, generated from its human summary y*.

    An output without any ``<r>`` tag is taken whole (whitespace collapsed). One with tags but
    no item is retried; after ``attempts`` it falls back to its text with the tags removed, and
    a topic still without a query is an error (it cannot be retrieved for).
    """
    def parse(text: str) -> str | None:
        if "<r>" not in text.lower() and "</r>" not in text.lower():
            return " ".join(text.split()) or None
        items = extract_tagged(text, "r")
        return items[0] if items else None

    def untagged(text: str) -> str:
        return " ".join(re.sub(r"</?r>", " ", text, flags=re.IGNORECASE).split())

    answers = ask_with_retries(runner, report_request_prompts(topics),
                               sampling, parse, attempts=attempts, fallback=untagged)
    out = {}
    for t, answer in zip(topics, answers, strict=True):
        if not answer.value:
            raise ValueError(f"topic {t.topic_id}: the LLM gave no report request in "
                             f"{attempts} attempts")
        out[t.topic_id] = answer.value
    return out


def subquestions(topics: Sequence[Topic], runner: LLMRunner, n: int, *,
                 sampling: Sampling = GENERATION, attempts: int = 3,
                 min_words: int = 3) -> dict[str, list[str]]:
    """Up to ``n`` sub-questions per topic from its human summary (the first ``n`` parsed items
    of at least ``min_words`` words; shorter ones are fragments such as "Question:").

    A topic left with no question after ``attempts`` tries gets none (counted); it then has no
    answerable question and drops out of every metric, as a topic whose questions are all
    filtered would.
    """
    def parse(text: str) -> list[str] | None:
        return [q for q in extract_tagged(text, "q") if count_words(q) >= min_words] or None

    answers = ask_with_retries(runner, subquestion_prompts(topics, n), sampling, parse,
                               attempts=attempts, fallback=[])
    return {t.topic_id: a.value[:n] for t, a in zip(topics, answers, strict=True)}

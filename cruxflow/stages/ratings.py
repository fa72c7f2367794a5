"""Answerability ratings (paper Sec. 3.2, Fig. 8): every passage of a topic, and its human
summary, rated 0-5 against every sub-question by the LLM judge."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from cruxflow.data.model import Passage, RatingRow, ReferenceRating, Topic, require_reference
from cruxflow.data.text import clip_words
from cruxflow.llm import JUDGMENT, LLMRunner, Request, Sampling
from cruxflow.llm.logprobs import expected_rating
from cruxflow.llm.parsing import parse_rating
from cruxflow.stages.prompts import RATING


@dataclasses.dataclass
class Ratings:
    passages: list[RatingRow]
    references: list[ReferenceRating]


def rate_texts(items: Sequence[tuple[Sequence[str], str]], runner: LLMRunner, *,
               sampling: Sampling = JUDGMENT, max_context_words: int = 2048,
               ) -> list[tuple[list[int], list[float | None]]]:
    """Rate each ``(questions, text)`` item against each of its questions with Fig. 8's prompt.

    One request per pair, greedy, one generated token; the rating is the parsed output (0 when
    it cannot be parsed, as in the paper) and the expected rating comes from the first token's
    logprobs when the backend returns them. Returns ``(ratings, expected)`` per item. Requests
    go question by question, so consecutive prompts share their prefix (llama.cpp and vLLM
    reuse its KV cache).
    """
    requests, slots = [], []
    by_question: dict[str, list[int]] = defaultdict(list)
    for i, (questions, _) in enumerate(items):
        for qi, q in enumerate(questions):
            by_question[q].append((i, qi))
    for q, pairs in by_question.items():
        for i, qi in pairs:
            context = clip_words(items[i][1], max_context_words)
            requests.append(Request(RATING.render(question=q, context=context), sampling))
            slots.append((i, qi))
    outs = runner.generate(requests)
    ratings = [[0] * len(qs) for qs, _ in items]
    expected: list[list[float | None]] = [[None] * len(qs) for qs, _ in items]
    for (i, qi), out in zip(slots, outs, strict=True):
        r = parse_rating(out.text)
        if r is None:
            runner.stats.parse_failures += 1
            r = 0
        ratings[i][qi] = r
        expected[i][qi] = expected_rating(out.top_logprobs)[0]
    return list(zip(ratings, expected, strict=True))


def rate(topics: Sequence[Topic], passages_by_topic: dict[str, list[Passage]],
         runner: LLMRunner, *, sampling: Sampling = JUDGMENT,
         max_context_words: int = 2048) -> Ratings:
    """Rate every (passage of the topic, sub-question) pair and the human summary itself."""
    targets: list[tuple[str, str | None]] = []  # (topic, passage id or None for y*)
    items: list[tuple[list[str], str]] = []
    for t in topics:
        for p in passages_by_topic.get(t.topic_id, []):
            targets.append((t.topic_id, p.id))
            items.append((t.questions, p.contents))
        targets.append((t.topic_id, None))
        items.append((t.questions, require_reference(t, "rate its summary")))
    rated = rate_texts(items, runner, sampling=sampling, max_context_words=max_context_words)
    result = Ratings([], [])
    for (tid, pid), (r, e) in zip(targets, rated, strict=True):
        e = e if any(v is not None for v in e) else None
        if pid is None:
            result.references.append(ReferenceRating(tid, r, e))
        else:
            result.passages.append(RatingRow(tid, pid, r, e))
    return result

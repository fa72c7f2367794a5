"""Answerability ratings (paper Sec. 3.2, Fig. 8): every passage of a topic, and its human
summary, rated 0-5 against every sub-question by the LLM judge.

Two ways to decode a rating (``llm.ratings.decoding``, docs/paper-parity.md point 5):

* ``constrained`` (ours, the default): one token restricted to 0-5, with its logprobs for the
  expected rating; an output that does not parse is 0, as the paper says (Fig. 8 caption).
* ``free`` (the CRUX authors' code): up to ``free_max_tokens`` tokens of free text, the first
  digit taken, -1 when there is none (:func:`cruxflow.llm.parsing.parse_free_rating`). A -1
  answers no question at any threshold. The authors sent raw completions, no chat template:
  pair it with ``endpoint: completion`` on the backend.

Two layouts of the prompt (``llm.ratings.layout``, docs/ratings.md):

* ``paper`` (the default): Fig. 8 as printed, the question before the context. Requests go
  question by question, so consecutive prompts share the instruction and the question.
* ``passage_first`` (ours): the same text with the context before the question
  (:data:`~cruxflow.stages.prompts.RATING_PASSAGE_FIRST`). Requests go passage by passage, so
  the 10-15 prompts that rate one passage share everything but the question, and a backend
  that reuses a prompt's KV prefix (``prompt_cache``) computes each passage once.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from cruxflow.data.model import BLANK_QUESTIONS, Passage, RatingRow, ReferenceRating, Topic
from cruxflow.data.text import clip_words
from cruxflow.llm import JUDGMENT, LLMRunner, Request, Sampling
from cruxflow.llm.logprobs import expected_rating
from cruxflow.llm.parsing import UNRATED, parse_free_rating, parse_rating
from cruxflow.llm.prompts import PromptTemplate
from cruxflow.stages.prompts import RATING, RATING_PASSAGE_FIRST


@dataclasses.dataclass
class Ratings:
    passages: list[RatingRow]
    references: list[ReferenceRating]


DECODINGS = ("constrained", "free")
LAYOUTS: dict[str, PromptTemplate] = {"paper": RATING, "passage_first": RATING_PASSAGE_FIRST}


def rating_prompt(layout: str = "paper") -> PromptTemplate:
    """The rating prompt of a layout (see the module's docstring)."""
    if layout not in LAYOUTS:
        raise ValueError(f"rating layout must be one of {tuple(LAYOUTS)}, got {layout!r}")
    return LAYOUTS[layout]


def rating_options(llm_config: dict) -> dict:
    """The keyword arguments of :func:`rate`, :func:`rate_texts` and
    :func:`cruxflow.rag.reports.judge_reports` from a resolved config's ``llm`` section
    (``llm.ratings``): the one place the workflow's passage ratings and report judging read
    them, so both rate the same way."""
    options = llm_config["ratings"]
    return {k: options[k] for k in ("max_context_words", "decoding", "free_max_tokens", "layout")}


def request_order(items: Sequence[tuple[Sequence[str], str]], layout: str = "paper",
                  ) -> list[tuple[int, int]]:
    """The ``(item, question index)`` pairs in the order their requests are sent, chosen so that
    consecutive prompts share the longest prefix the layout allows; it depends only on
    ``items``, so a re-run sends the same requests in the same order.

    ``paper``: question by question, in order of each question text's first appearance (items
    that share a question, such as a topic's passages, are rated for it in a row).
    ``passage_first``: item by item as given, each item's questions in order.
    """
    rating_prompt(layout)  # an unknown layout fails here
    # a blank question of an imported topic (a placeholder) is asked nothing: it stays 0
    if layout == "passage_first":
        return [(i, qi) for i, (questions, _) in enumerate(items)
                for qi, q in enumerate(questions) if q not in BLANK_QUESTIONS]
    by_question: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, (questions, _) in enumerate(items):
        for qi, q in enumerate(questions):
            if q not in BLANK_QUESTIONS:
                by_question[q].append((i, qi))
    return [pair for pairs in by_question.values() for pair in pairs]


def rating_sampling(sampling: Sampling, decoding: str = "constrained",
                    free_max_tokens: int = 5) -> Sampling:
    """The judge's sampling for a decoding mode: as given (constrained), or the same without
    the choice constraint and with ``free_max_tokens`` tokens to write (free)."""
    if decoding not in DECODINGS:
        raise ValueError(f"rating decoding must be one of {DECODINGS}, got {decoding!r}")
    if decoding == "free":
        return dataclasses.replace(sampling, max_tokens=free_max_tokens, choices=None)
    return sampling


def rating_requests(items: Sequence[tuple[Sequence[str], str]], *,
                    sampling: Sampling = JUDGMENT, max_context_words: int = 2048,
                    decoding: str = "constrained", free_max_tokens: int = 5,
                    layout: str = "paper", template: PromptTemplate | None = None,
                    ) -> tuple[list[Request], list[tuple[int, int]]]:
    """The requests of :func:`rate_texts`, in :func:`request_order`, and the
    ``(item, question)`` slot each answers; ``template`` (fields ``question``, ``context``)
    in place of the layout's prompt, the layout then giving the order only."""
    sampling = rating_sampling(sampling, decoding, free_max_tokens)
    template = template or rating_prompt(layout)
    slots = request_order(items, layout)
    contexts = [clip_words(text, max_context_words) for _, text in items]
    requests = [Request(template.render(question=items[i][0][qi], context=contexts[i]), sampling)
                for i, qi in slots]
    return requests, slots


def rate_texts(items: Sequence[tuple[Sequence[str], str]], runner: LLMRunner, *,
               sampling: Sampling = JUDGMENT, max_context_words: int = 2048,
               decoding: str = "constrained", free_max_tokens: int = 5,
               layout: str = "paper", template: PromptTemplate | None = None,
               ) -> list[tuple[list[int], list[float | None]]]:
    """Rate each ``(questions, text)`` item against each of its questions with Fig. 8's prompt
    in ``layout`` (see the module's docstring).

    One request per pair, greedy, decoded as ``decoding`` says: the rating is the parsed output
    (constrained: 0 when it cannot be parsed, as in the paper; free: -1) and the expected rating
    comes from the first token's logprobs when the backend returns them. Returns
    ``(ratings, expected)`` per item, in the items' order. Requests are sent in
    :func:`request_order`, so that consecutive prompts share their prefix. ``template``: another
    rating prompt (:func:`rating_requests`).
    """
    requests, slots = rating_requests(items, sampling=sampling,
                                      max_context_words=max_context_words, decoding=decoding,
                                      free_max_tokens=free_max_tokens, layout=layout,
                                      template=template)
    outs = runner.generate(requests)
    ratings = [[0] * len(qs) for qs, _ in items]
    expected: list[list[float | None]] = [[None] * len(qs) for qs, _ in items]
    for (i, qi), out in zip(slots, outs, strict=True):
        r = parse_free_rating(out.text) if decoding == "free" else parse_rating(out.text)
        if r is None or r == UNRATED:
            runner.stats.parse_failures += 1
            r = UNRATED if decoding == "free" else 0
        ratings[i][qi] = r
        expected[i][qi] = expected_rating(out.top_logprobs)[0]
    return list(zip(ratings, expected, strict=True))


def rating_items(topics: Sequence[Topic], passages_by_topic: dict[str, list[Passage]],
                 ) -> tuple[list[tuple[str, str | None]], list[tuple[list[str], str]]]:
    """What :func:`rate` rates: ``(topic, passage id, or None for the human summary y*)`` and
    the ``(questions, text)`` item of each, the topic's passages first, then y* (where the
    topic has one)."""
    targets: list[tuple[str, str | None]] = []
    items: list[tuple[list[str], str]] = []
    for t in topics:
        for p in passages_by_topic.get(t.topic_id, []):
            targets.append((t.topic_id, p.id))
            items.append((t.questions, p.contents))
        if t.reference is None:  # a topic of one's own without a summary: nothing to rate
            continue
        targets.append((t.topic_id, None))
        items.append((t.questions, t.reference))
    return targets, items


def rate(topics: Sequence[Topic], passages_by_topic: dict[str, list[Passage]],
         runner: LLMRunner, *, sampling: Sampling = JUDGMENT,
         max_context_words: int = 2048, decoding: str = "constrained",
         free_max_tokens: int = 5, layout: str = "paper") -> Ratings:
    """Rate every (passage of the topic, sub-question) pair and the human summary itself."""
    targets, items = rating_items(topics, passages_by_topic)
    rated = rate_texts(items, runner, sampling=sampling, max_context_words=max_context_words,
                       decoding=decoding, free_max_tokens=free_max_tokens, layout=layout)
    result = Ratings([], [])
    for (tid, pid), (r, e) in zip(targets, rated, strict=True):
        e = e if any(v is not None for v in e) else None
        if pid is None:
            result.references.append(ReferenceRating(tid, r, e))
        else:
            result.passages.append(RatingRow(tid, pid, r, e))
    return result

"""The LLM steps of UDCG, each through :class:`~cruxflow.llm.LLMRunner` (cached, counted):

- :func:`abstention_probabilities` -- p(NO-RESPONSE | q, p) per (question, passage): the
  probability of the first token of ``NO-RESPONSE`` with the authors' prompt layout (one
  forward step, greedy, ``max_tokens=1``; the default), the summed mass of the first tokens
  that begin it with Fig. 4's prompt, or, for backends without logprobs, the share of ``n``
  sampled answers that abstain (App. D; seeds 0..n-1);
- :func:`judge_relevance` -- R(q, p) with Fig. 5's prompt;
- :func:`generate_answers` -- the RAG answer for a whole context with Fig. 4's prompt (greedy,
  as in Sec. 6.1);
- :func:`grade_answers` -- CORRECT / INCORRECT / ABSTAINED with Fig. 6's prompt.

Judgments are greedy. An output that cannot be parsed is asked again ``attempts - 1`` times at
``retry_temperature`` with seeds 1, 2, ... (a greedy request asked again would answer the same);
what still fails takes the documented fallback and is counted in
``runner.stats.parse_failures``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from cruxflow.beyond.udcg.metric import (
    abstention_frequency,
    first_token_probability,
    is_abstention_text,
    is_bare_abstention,
    no_response_probability,
)
from cruxflow.beyond.udcg.prompts import (
    ANSWER,
    AUTHORS_SYSTEM,
    AUTHORS_UTILITY,
    GRADING,
    RELEVANCE,
    format_answers,
    format_documents,
)
from cruxflow.llm import LLMError, LLMRunner, Request, Sampling
from cruxflow.llm.labels import LabelSet, parse_label
from cruxflow.llm.retry import ask_with_retries

GREEDY = Sampling(temperature=0.0, top_p=1.0, max_tokens=256, seed=0)
CORRECT, INCORRECT, ABSTAINED = "CORRECT", "INCORRECT", "ABSTAINED"


@dataclass
class Abstention:
    p_no_response: float
    detail: dict          # logprobs: {"first_token"}; sampling: {"samples", "abstained"}


def answer_prompt(question: str, passages: Sequence[str]) -> str:
    return ANSWER.render(documents=format_documents(list(passages)), question=question)


def abstention_probabilities(runner: LLMRunner, pairs: Sequence[tuple[str, str]], *,
                             mode: str = "first-token", logprobs: int = 20,
                             no_response_token: str = "NO", samples: int = 10,
                             temperature: float = 1.0, max_tokens: int = 16) -> list[Abstention]:
    """p(NO-RESPONSE | q, p) for each ``(question, passage text)``.

    ``mode="first-token"`` (the authors' code): the instruction as the system message and
    ``Document: <passage>\nQuestion: <question>\nAnswer:`` as the user message
    (:data:`~cruxflow.beyond.udcg.prompts.AUTHORS_UTILITY`), one greedy step with ``logprobs``
    top alternatives; p is the probability of the single token ``no_response_token``
    (:func:`~cruxflow.beyond.udcg.metric.first_token_probability`).
    ``mode="logprobs"``: Fig. 4's prompt as one user message, the same step; p is the summed
    probability of the listed tokens that begin ``NO-RESPONSE``
    (:func:`~cruxflow.beyond.udcg.metric.no_response_probability`).
    A backend that returns no logprobs is an error for both (use ``mode="sampling"``).
    ``mode="sampling"``: Fig. 4's prompt, ``samples`` requests per pair at ``temperature``
    (top-p 1, seeds 0..samples-1, ``max_tokens`` tokens); p is the share that abstains.
    """
    if mode in ("first-token", "logprobs"):
        s = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=0, logprobs=logprobs)
        if mode == "first-token":
            requests = [Request(AUTHORS_UTILITY.render(document=text, question=q), s,
                                system=AUTHORS_SYSTEM) for q, text in pairs]
        else:
            requests = [Request(answer_prompt(q, [text]), s) for q, text in pairs]
        result = []
        for out in runner.generate(requests):
            p = (first_token_probability(out.top_logprobs, no_response_token)
                 if mode == "first-token" else no_response_probability(out.top_logprobs))
            if p is None:
                raise LLMError(f"the backend ({runner.backend.kind} {runner.backend.model}) "
                               "returned no logprobs; estimate p(NO-RESPONSE) by sampling "
                               "instead (--utility sampling)")
            result.append(Abstention(p, {"first_token": out.text}))
        return result
    prompts = [answer_prompt(q, [text]) for q, text in pairs]
    if mode == "sampling":
        if samples < 1:
            raise ValueError("samples must be at least 1")
        requests = [Request(p, Sampling(temperature=temperature, top_p=1.0,
                                        max_tokens=max_tokens, seed=i))
                    for p in prompts for i in range(samples)]
        outs = runner.generate(requests)
        result = []
        for n in range(len(prompts)):
            texts = [o.text for o in outs[n * samples:(n + 1) * samples]]
            result.append(Abstention(abstention_frequency(texts),
                                     {"samples": samples,
                                      "abstained": sum(map(is_abstention_text, texts))}))
        return result
    raise ValueError(f"unknown utility mode {mode!r} (first-token, logprobs or sampling)")


# --- the judges' answers (Fig. 5, 6): JSON with a motivation and a grade letter ---------------

RELEVANCE_LABELS = LabelSet(
    phrases={"relevant": "RELEVANT", "irrelevant": "IRRELEVANT"},
    negations={"RELEVANT": "IRRELEVANT", "IRRELEVANT": "RELEVANT"},
    letters={"A": "RELEVANT", "B": "IRRELEVANT"}, json_keys=("grade",),
    stages=("json", "letter", "anywhere"), pick="only")
GRADE_LABELS = LabelSet(
    phrases={"correct": CORRECT, "incorrect": INCORRECT,
             "abstain(?:ed|s|ing)?|abstention": ABSTAINED},
    negations={CORRECT: INCORRECT, INCORRECT: CORRECT},
    letters={"A": CORRECT, "B": INCORRECT, "C": ABSTAINED}, json_keys=("grade",),
    stages=("json", "letter", "anywhere"), pick="only")


def parse_relevance(text: str | None) -> bool | None:
    """Fig. 5's answer as a bool (A: RELEVANT -> True), ``None`` when unparseable; "not
    relevant" is IRRELEVANT (:func:`cruxflow.llm.labels.parse_label`)."""
    label = parse_label(text, RELEVANCE_LABELS)
    return None if label is None else label == "RELEVANT"


def parse_grade(text: str | None) -> str | None:
    """Fig. 6's answer: ``CORRECT``, ``INCORRECT``, ``ABSTAINED`` or ``None``; "not correct"
    is INCORRECT."""
    return parse_label(text, GRADE_LABELS)


# Retries of a greedy judgment are sampled at this temperature (seed + 1, + 2, ...).
RETRY_TEMPERATURE = 0.7


def judge_relevance(runner: LLMRunner, triples: Sequence[tuple[str, Sequence[str], str]], *,
                    sampling: Sampling = GREEDY, attempts: int = 3) -> list[tuple[bool, str]]:
    """R(q, p) for each ``(question, acceptable answers, passage text)`` with Fig. 5's prompt:
    ``(relevant, source)``, source ``"judge"`` or ``"judge_failed"`` (unparseable after every
    attempt: taken as irrelevant)."""
    prompts = [RELEVANCE.render(question=q, answers=format_answers(list(a)), document=d)
               for q, a, d in triples]
    answers = ask_with_retries(runner, prompts, sampling, parse_relevance, attempts=attempts,
                               retry_temperature=RETRY_TEMPERATURE)
    return [(False, "judge_failed") if a.failed else (bool(a.value), "judge") for a in answers]


def generate_answers(runner: LLMRunner, contexts: Sequence[tuple[str, Sequence[str]]], *,
                     max_tokens: int = 64) -> list[str]:
    """The LLM's answer for each ``(question, passage texts)`` with Fig. 4's prompt, greedy."""
    s = dataclasses.replace(GREEDY, max_tokens=max_tokens)
    outs = runner.generate([Request(answer_prompt(q, ps), s) for q, ps in contexts])
    return [o.text.strip() for o in outs]


def grade_answers(runner: LLMRunner, triples: Sequence[tuple[str, Sequence[str], str]], *,
                  sampling: Sampling = GREEDY, attempts: int = 3) -> list[tuple[str, str, str]]:
    """Grade each ``(question, acceptable answers, predicted answer)``: ``(grade, source,
    judge output)`` with source ``"rule"`` (a bare NO-RESPONSE or an empty answer: ABSTAINED,
    no call), ``"judge"`` (Fig. 6's prompt) or ``"judge_failed"`` (unparseable after every
    attempt: INCORRECT, the lowest rank)."""
    results: list[tuple[str, str, str] | None] = [None] * len(triples)
    todo = []
    for i, (_, _, answer) in enumerate(triples):
        if is_bare_abstention(answer):
            results[i] = (ABSTAINED, "rule", "")
        else:
            todo.append(i)
    prompts = [GRADING.render(question=triples[i][0], target=format_answers(list(triples[i][1])),
                              predicted_answer=triples[i][2]) for i in todo]
    answers = ask_with_retries(runner, prompts, sampling, parse_grade, attempts=attempts,
                               retry_temperature=RETRY_TEMPERATURE)
    for i, a in zip(todo, answers, strict=True):
        results[i] = (INCORRECT, "judge_failed", a.text) if a.failed else (a.value, "judge", a.text)
    return results  # type: ignore[return-value]

"""One way to ask an LLM for something parseable: ask, parse, ask again what failed.

Every stage that parses free text (passages, report requests, sub-questions, reports, UDCG's
relevance and grading judgments, KPR's extraction, entailment and aggregation, support labels)
goes through :func:`ask_with_retries`, so all of them retry, seed, count and fall back alike:

- attempt 1 sends ``sampling`` as given; attempt ``a`` (2, 3, ...) sends it with seed
  ``(seed or 0) + a - 1`` and, when ``sampling`` is greedy, ``retry_temperature``;
- a greedy request with no ``retry_temperature`` is asked once: the same request would give
  the same output (and the cache would answer it);
- ``parse`` returns the parsed value or ``None`` for an output it cannot use (``False``, ``0``
  and ``""`` are values); give a sequence of parsers, one per prompt, where what counts as
  parseable depends on the prompt; an item still unparsed after the last attempt gets ``fallback``
  (a value, or a function of the last output text), is marked ``failed`` and is counted in
  ``runner.stats.parse_failures``.

Every attempt is a cached request, so a re-run pays for none of them again.

:class:`Checked` drops the items of an output that are not text of the kind asked for
(:class:`cruxflow.llm.parsing.TextCheck`), so that a parser built on it fails, and is asked
again, when none is left; it counts them in ``runner.stats.malformed`` and says why in the log.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cruxflow.data.limits import check_count
from cruxflow.llm.base import Request, Sampling
from cruxflow.llm.parsing import TextCheck

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """The outcome of one prompt: the parsed value (or the fallback), the last output text,
    how many attempts were made and whether every one failed to parse."""

    value: T | None
    text: str
    attempts: int
    failed: bool


def retry_sampling(sampling: Sampling, attempt: int,
                   retry_temperature: float | None = None) -> Sampling | None:
    """The sampling of attempt ``attempt`` (1-based), or ``None`` when a retry cannot give a
    different output (greedy decoding and no ``retry_temperature``)."""
    if attempt == 1:
        return sampling
    temperature = sampling.temperature or retry_temperature
    if not temperature:
        return None
    return dataclasses.replace(sampling, seed=(sampling.seed or 0) + attempt - 1,
                               temperature=temperature)


def ask_with_retries(runner, prompts: Sequence[str], sampling: Sampling,
                     parse: Callable[[str], T | None] | Sequence[Callable[[str], T | None]], *,
                     attempts: int = 3,
                     retry_temperature: float | None = None,
                     fallback: Any = None, system: str | None = None) -> list[Answer[T]]:
    """One :class:`Answer` per prompt, in order (see the module docstring). No prompt, no use of
    ``runner`` (a lazy runner then loads no model). ``system``: the system message of every
    request."""
    check_count("attempts", attempts)
    if not prompts:
        return []
    parsers = list(parse) if not callable(parse) else [parse] * len(prompts)
    if len(parsers) != len(prompts):
        raise ValueError(f"{len(parsers)} parsers for {len(prompts)} prompts")
    answers: list[Answer[T] | None] = [None] * len(prompts)
    todo = list(range(len(prompts)))
    for attempt in range(1, attempts + 1):
        s = retry_sampling(sampling, attempt, retry_temperature)
        if not todo or s is None:
            break
        outs = runner.generate([Request(prompts[i], s, system=system) for i in todo])
        still = []
        for i, out in zip(todo, outs, strict=True):
            value = parsers[i](out.text)
            answers[i] = Answer(value, out.text, attempt, value is None)
            if value is None:
                still.append(i)
        todo = still
    runner.stats.parse_failures += len(todo)
    for i in todo:
        last = answers[i]
        value = fallback(last.text) if callable(fallback) else fallback
        answers[i] = dataclasses.replace(last, value=value, failed=True)
    return answers  # type: ignore[return-value]


class Checked:
    """Items of one stage checked against their :class:`TextCheck`: those that are not text of
    the kind asked for are dropped, counted in the runner's ``malformed`` and by reason, and
    said in the log (the stage's parse fails when none is left, and asks again)."""

    def __init__(self, check: TextCheck, runner=None):
        self.check, self.runner, self.reasons = check, runner, Counter()

    def keep(self, items: list[str], instructions: str) -> list[str]:
        kept = []
        for item in items:
            problem = self.check.problem(item, instructions)
            if problem is None:
                kept.append(item)
                continue
            self.reasons[problem.split(" (")[0]] += 1
            if self.runner is not None:
                self.runner.stats.malformed += 1
        return kept

    def log(self, failures: int, fallback: str) -> None:
        if self.reasons:
            log.info("%d %ss not text of the kind asked for (%s): dropped (an output left "
                     "with none is asked again)",
                     sum(self.reasons.values()), self.check.kind,
                     ", ".join(f"{why}: {n}" for why, n in self.reasons.most_common()))
        if failures:
            log.info("%d %s prompts without a usable output after every attempt: %s",
                     failures, self.check.kind, fallback)

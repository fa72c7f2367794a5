"""Probability mass over the first generated token's top logprobs, in one place.

Three measures read the judge's first-token distribution: CRUX's expected rating
sum_k k p(k) (:func:`expected_rating`), UDCG's p(NO-RESPONSE) and KPR's AutoDS filter score
p(YES) / (p(YES) + p(NO)). Each groups the listed tokens into classes (a digit, the start of
``NO-RESPONSE``, YES/NO) and sums the probability of each class; :func:`class_log_mass` does
that once, in log space (so probabilities far below float range still compare correctly).

Tokens are compared after stripping whitespace and tokenizer space markers
(:func:`strip_token`), so ``" 3"``, ``"▁3"`` and ``"3"`` are the same class and their
probabilities add up. Tokens outside the top N are unknown and count as 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

# Whitespace, SentencePiece's "▁" and byte-level BPE's "Ġ" (space) and "Ċ" (newline).
TOKEN_MARKERS = " \t\r\n\u2581\u0120\u010a"
_INTEGER = re.compile(r"-?[0-9]+")

K = TypeVar("K", bound=Hashable)


def strip_token(token: object) -> str:
    """A token's text without surrounding whitespace or tokenizer space markers."""
    return str(token).strip(TOKEN_MARKERS)


def class_log_mass(top_logprobs: Mapping[str, float] | None,
                   classify: Callable[[str], K | None]) -> dict[K, float]:
    """``{class: log of the summed probability}`` of the listed tokens that ``classify`` (given
    the stripped token) puts in a class; tokens it maps to ``None``, NaN and -inf are skipped.
    Classes with no listed token are absent."""
    grouped: dict[K, list[float]] = {}
    for token, logp in (top_logprobs or {}).items():
        if logp is None:
            continue
        lp = float(logp)
        if math.isnan(lp) or lp == -math.inf:
            continue
        key = classify(strip_token(token))
        if key is not None:
            grouped.setdefault(key, []).append(lp)
    return {key: _log_sum_exp(lps) for key, lps in grouped.items()}


def mass(log_mass: float | None) -> float:
    """A class's probability from its log mass, clipped to 1 (the listed alternatives of a
    rounded distribution can sum to slightly more); 0 for an absent class (``None``)."""
    return 0.0 if log_mass is None else min(1.0, math.exp(log_mass))


def share(log_mass: Mapping[K, float], key: K, others: Iterable[K]) -> float | None:
    """p(key) / (p(key) + sum p(other)) among the listed classes; ``None`` when none of them
    is listed."""
    present = [log_mass[k] for k in (key, *others) if k in log_mass]
    if not present:
        return None
    if key not in log_mass:
        return 0.0
    return math.exp(log_mass[key] - _log_sum_exp(present))


def expected_rating(top_logprobs: Mapping[str, float] | None,
                    scale: Iterable[int] = range(0, 6)) -> tuple[float | None, float]:
    """Expected rating under the first generated token's top logprobs (CRUX ratings, Fig. 8).

    Returns ``(sum_k k * p(k) / mass, mass)``, where ``mass`` is the total probability of the
    scale's tokens (clipped to 1); ``(None, 0.0)`` when none of them is listed.
    """
    allowed = set(scale)

    def rating(token: str) -> int | None:
        if not _INTEGER.fullmatch(token):
            return None
        k = int(token)
        return k if k in allowed else None

    by_rating = class_log_mass(top_logprobs, rating)
    if not by_rating:
        return None, 0.0
    top = max(by_rating.values())
    weights = {k: math.exp(lm - top) for k, lm in by_rating.items()}  # each in (0, 1]
    total = math.fsum(weights.values())
    expected = math.fsum(k * w for k, w in weights.items()) / total
    return float(expected), float(mass(top + math.log(total)))


def _log_sum_exp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))

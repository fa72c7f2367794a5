"""The paired tests between runs and their multiple-testing corrections, under the paired-test
policy (:mod:`cruxflow.metrics.policy`); exported by :mod:`cruxflow.metrics.stats`, the home of
every statistic cruxflow reports (docs/evaluate.md, "Several runs at once").

Undefined is ``None``, as everywhere in :mod:`cruxflow.metrics.stats`: a test over fewer than
two topics has no p-value, and a correction leaves it out of the family.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

import numpy as np

from cruxflow.metrics.policy import CORRECTIONS, POLICY, Policy

# --- paired tests -----------------------------------------------------------------------------

SIGN_BLOCK = 1024   # resamples per block of random signs (a multiple of 64)
_MAX_CELLS = 1 << 23  # differences held at once (64 MB of float64); more go in column chunks
_TIE = 100 * np.finfo(float).eps


def _sign_block(seed: int, block: int, n: int) -> np.ndarray:
    """Block ``block`` of the shared random signs: ``SIGN_BLOCK`` x ``n`` of +-1.0.

    Drawn from ``default_rng([seed, block])``, topic position by topic position (64 signs per
    raw 64-bit draw), so that the signs of the first n positions do not depend on how many
    positions the call needs: a test's p-value depends on its own differences, the seed and
    the number of resamples only, not on the other tests of the call.
    """
    raw = np.random.default_rng([seed, block]).bit_generator.random_raw((n, SIGN_BLOCK // 64))
    bits = np.unpackbits(raw.astype("<u8").view(np.uint8), axis=1, bitorder="little")
    signs = bits.T.astype(float)      # one allocation: 0/1 -> +1/-1 in place
    signs *= -2.0
    signs += 1.0
    return signs


def _all_signs(n: int) -> np.ndarray:
    """Every one of the 2^n sign patterns of n pairs, as a 2^n x n array of +-1.0."""
    codes = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n)[None, :]
    return 1.0 - 2.0 * (codes & 1)


def _counts(null: np.ndarray, observed: np.ndarray, tol: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    return ((null <= observed + tol).sum(axis=0), (null >= observed - tol).sum(axis=0))


def _p_from_counts(less, greater, total: int, adjustment: int, alternative: str) -> np.ndarray:
    p_less = (less + adjustment) / (total + adjustment)
    p_greater = (greater + adjustment) / (total + adjustment)
    p = {"less": p_less, "greater": p_greater,
         "two-sided": 2 * np.minimum(p_less, p_greater)}[alternative]
    return np.clip(p, 0.0, 1.0)


def randomization_p_values(diffs: Sequence[np.ndarray], *, resamples: int = POLICY.resamples,
                           seed: int = POLICY.seed, alternative: str = POLICY.alternative
                           ) -> list[float | None]:
    """p-values of the paired randomization (sign-flip) test of the mean difference, one per
    vector of paired differences (``x - y`` over the topics both runs define, in a fixed topic
    order); ``None`` with fewer than two pairs.

    The statistic and p-values are scipy's ``permutation_test(..., permutation_type="samples")``
    of ``mean(x - y)``: with 2^n <= ``resamples`` every sign pattern is enumerated (exact,
    p = count / 2^n, equal to scipy's); otherwise ``resamples`` random sign patterns and
    p = (count + 1) / (resamples + 1). Two-sided is twice the smaller one-sided p, capped at 1.
    A resample whose statistic lies within 100 machine epsilons of the observed one counts as
    reaching it (scipy's tolerance for values that are equal but rounded differently; scaled
    here by the sum of |differences|, the size of any rounding error, where scipy scales by
    the observed value, which can itself be a rounding error away from 0).

    **Shared draws.** Every sampled test of one call uses the same matrix of random signs,
    generated from ``seed`` in blocks of :data:`SIGN_BLOCK` resamples (:func:`_sign_block`),
    and the statistics of all the tests of a block come from one matrix product: 840 tests
    over 5,000 topics take seconds, in tens of MB. The same seed gives the same p-values;
    they differ from scipy's sampled ones, whose generator draws other signs.
    """
    out: list[float | None] = [None] * len(diffs)
    exact: dict[int, list[int]] = {}
    sampled: list[int] = []
    for i, d in enumerate(diffs):
        if len(d) < 2:
            continue
        (exact.setdefault(len(d), []) if 2 ** min(len(d), 62) <= resamples
         else sampled).append(i)
    for n, idx in exact.items():
        d = np.stack([np.asarray(diffs[i], float) for i in idx], axis=1)   # n x tests
        null = _all_signs(n) @ d
        observed = null[0]                       # the pattern of no flip, computed alike
        less, greater = _counts(null, observed, _TIE * np.abs(d).sum(axis=0))
        for i, p in zip(idx, _p_from_counts(less, greater, 2 ** n, 0, alternative).tolist(),
                        strict=True):
            out[i] = p
    if sampled:
        n_max = max(len(diffs[i]) for i in sampled)
        per_chunk = max(1, _MAX_CELLS // n_max)
        for start in range(0, len(sampled), per_chunk):
            idx = sampled[start:start + per_chunk]
            d = np.zeros((n_max, len(idx)))
            for j, i in enumerate(idx):
                d[:len(diffs[i]), j] = diffs[i]
            observed = d.sum(axis=0)
            tol = _TIE * np.abs(d).sum(axis=0)
            less = np.zeros(len(idx), dtype=np.int64)
            greater = np.zeros(len(idx), dtype=np.int64)
            for block in range(-(-resamples // SIGN_BLOCK)):
                rows = min(SIGN_BLOCK, resamples - block * SIGN_BLOCK)
                null = _sign_block(seed, block, n_max)[:rows] @ d
                lo, hi = _counts(null, observed, tol)
                less += lo
                greater += hi
            for i, p in zip(idx, _p_from_counts(less, greater, resamples, 1,
                                                alternative).tolist(), strict=True):
                out[i] = p
    return out


def t_test_p_value(x: Sequence[float], y: Sequence[float],
                   alternative: str = POLICY.alternative) -> float | None:
    """p-value of a paired t-test (scipy.stats.ttest_rel); 1.0 when every difference is 0
    (scipy: NaN), ``None`` with fewer than two pairs."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return None
    if np.all(x == y):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # constant differences: t infinite
        return float(stats.ttest_rel(x, y, alternative=alternative).pvalue)


def wilcoxon_p_value(x: Sequence[float], y: Sequence[float],
                     alternative: str = POLICY.alternative) -> float | None:
    """p-value of the Wilcoxon signed-rank test of the differences x - y
    (scipy.stats.wilcoxon, zero differences dropped: ``zero_method="wilcox"``); 1.0 when
    every difference is 0, ``None`` with fewer than two pairs."""
    from scipy import stats

    d = np.asarray(x, float) - np.asarray(y, float)
    if len(d) < 2:
        return None
    if np.all(d == 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (RuntimeWarning, UserWarning))
        return float(stats.wilcoxon(d, zero_method="wilcox", alternative=alternative).pvalue)


def paired_p_values(pairs: Sequence[tuple[np.ndarray, np.ndarray]], policy: Policy = POLICY
                    ) -> list[float | None]:
    """The raw p-value of ``policy``'s test for each (x, y) of paired scores (aligned arrays
    over the topics both runs define, in one fixed topic order); ``None`` where undefined."""
    if policy.test == "randomization":
        return randomization_p_values([np.asarray(x, float) - np.asarray(y, float)
                                       for x, y in pairs], resamples=policy.resamples,
                                      seed=policy.seed, alternative=policy.alternative)
    one = t_test_p_value if policy.test == "t-test" else wilcoxon_p_value
    return [one(x, y, policy.alternative) for x, y in pairs]


# --- corrections ------------------------------------------------------------------------------

def _adjust(p_values: Sequence[float | None], method) -> list[float | None]:
    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if idx:
        adjusted = method(np.asarray([p_values[i] for i in idx], dtype=float))
        for i, value in zip(idx, adjusted.tolist(), strict=True):
            out[i] = value
    return out


def _holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    steps = len(p) - np.arange(len(p))
    adjusted = np.empty(len(p))
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(steps * p[order]))
    return adjusted


def _bh(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    m = len(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted


def _bonferroni(p: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, p * len(p))


_CORRECT = {"holm": _holm, "bh": _bh, "bonferroni": _bonferroni, "none": lambda p: p}


def adjust(p_values: Sequence[float | None], correction: str = POLICY.correction
           ) -> list[float | None]:
    """p-values adjusted by ``correction`` over the defined ones (the family), ``None`` staying
    ``None``: ``holm`` (step-down: the i-th smallest of m times m - i + 1, made
    non-decreasing), ``bh`` (Benjamini-Hochberg step-up: the i-th smallest times m / i, made
    non-decreasing from the top), ``bonferroni`` (m times), each capped at 1, or ``none``.
    The values equal statsmodels' ``multipletests`` (holm, fdr_bh, bonferroni;
    tests/test_stats.py), which is not called: it runs a full ``gc.collect()`` every time,
    0.2 s in a large process."""
    if correction not in _CORRECT:
        raise ValueError(f"unknown correction {correction!r} ({', '.join(CORRECTIONS)})")
    return _adjust(p_values, _CORRECT[correction])


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (:func:`adjust`)."""
    return adjust(p_values, "holm")


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (:func:`adjust`)."""
    return adjust(p_values, "bh")


# --- many runs --------------------------------------------------------------------------------

Scores = Mapping[str, Mapping[str, "float | None"]]   # system -> topic -> value


def pairwise_tests(families: Iterable[tuple[Mapping, Scores]], policy: Policy = POLICY
                   ) -> list[dict]:
    """Every pair of systems of every family compared by ``policy``'s paired test, the
    p-values adjusted by its correction within each family.

    A family is ``(key, {system: {topic: value}})``: one measure (at one k, in one group),
    ``None`` or NaN for an undefined value. Its pairs are (a, b) with a before b in the
    mapping's order; each is tested over the topics both define, in sorted topic order (so a
    pair's p-value does not depend on the order in which a door lists topics). One dict per
    pair, families in the order given: ``**key, a, b, topics, mean_a, mean_b, diff`` (the mean
    of a - b over those topics), ``test``, ``p``, ``correction``, ``p_adjusted``. All the
    families of a call share the randomization test's signs (:func:`randomization_p_values`).
    """
    rows: list[dict] = []
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    spans: list[tuple[int, int]] = []
    for key, scores in families:
        systems = list(scores)
        topics = sorted({t for s in systems for t in scores[s]})
        table = np.array([[_value(scores[s].get(t)) for s in systems] for t in topics],
                         dtype=float).reshape(len(topics), len(systems))
        start = len(rows)
        for i, j in combinations(range(len(systems)), 2):
            both = ~np.isnan(table[:, i]) & ~np.isnan(table[:, j])
            x, y = table[both, i], table[both, j]
            pairs.append((x, y))
            rows.append({**key, "a": systems[i], "b": systems[j], "topics": int(both.sum()),
                         "mean_a": float(x.mean()) if len(x) else None,
                         "mean_b": float(y.mean()) if len(y) else None,
                         "diff": float((x - y).mean()) if len(x) else None,
                         "test": policy.test})
        spans.append((start, len(rows)))
    raw = paired_p_values(pairs, policy)
    for start, stop in spans:
        for row, p, q in zip(rows[start:stop], raw[start:stop],
                             adjust(raw[start:stop], policy.correction), strict=True):
            row.update(p=p, correction=policy.correction, p_adjusted=q)
    return rows


def _value(v) -> float:
    return math.nan if v is None else float(v)     # NaN stays NaN


def pairwise(per_topic: Mapping[str, Mapping[str, Mapping[str, float | None]]],
             measures: Sequence[str] | None = None, policy: Policy = POLICY,
             key: Mapping | None = None) -> list[dict]:
    """:func:`pairwise_tests` on ``{run: {topic: {measure: value}}}``, one family per measure
    (default: the first run's measures, in its order); each row starts with ``measure`` (and
    ``key``'s fields before it)."""
    if measures is None:
        first = next(iter(per_topic.values()), {})
        measures = list(dict.fromkeys(m for row in first.values() for m in row))
    families = [({**(key or {}), "measure": m},
                 {run: {t: row.get(m) for t, row in topics.items()}
                  for run, topics in per_topic.items()}) for m in measures]
    return pairwise_tests(families, policy)

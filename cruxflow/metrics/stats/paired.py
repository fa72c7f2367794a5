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
_MAX_CELLS = 1 << 23  # values held at once (64 MB of float64); more go in column chunks
_TIE = 100 * np.finfo(float).eps
# byte -> its 8 bits, least significant first, as signs: bit 0 -> +1.0, bit 1 -> -1.0
_BYTE_SIGNS = 1.0 - 2.0 * ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1)


def _sign_block(seed: int, block: int, n: int) -> np.ndarray:
    """Block ``block`` of the shared random signs: ``n`` x ``SIGN_BLOCK`` of +-1.0, a topic
    position per row (the matrix multiplied is its transpose, a view).

    Drawn from ``default_rng([seed, block])``, topic position by topic position (64 signs per
    raw 64-bit draw, least significant bit first), so that the signs of the first n positions
    do not depend on how many positions the call needs: a test's p-value depends on its own
    values, the seed and the number of resamples only, not on the other tests of the call.
    """
    raw = np.random.default_rng([seed, block]).bit_generator.random_raw((n, SIGN_BLOCK // 64))
    return _BYTE_SIGNS[raw.astype("<u8").view(np.uint8)].reshape(n, SIGN_BLOCK)


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


def _split_exponents(rows_bits: int, exponent: int) -> tuple[int, int]:
    """(e, f) of :func:`_integer_parts`: ``hi`` below 2^(51 - rows_bits), so that a signed sum
    of fewer than 2^rows_bits of them is below 2^51, and ``lo`` likewise."""
    return 51 - rows_bits - exponent, 51 - rows_bits


def _integer_parts(v: np.ndarray, rows_bits: int, exponent: int
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """``v`` (a vector with every ``|value| < 2^exponent``) as ``(hi + lo * 2^-f) * 2^-e``
    with ``hi`` and ``lo`` integer-valued floats small enough that any signed sum of up to
    ``2^rows_bits`` of them, and the difference of two such sums, is exact in float64
    (below 2^53), whatever order a matrix product adds them in; ``None`` where ``v`` is
    not exactly so (a value with bits below 2^-(e+f): far below any measure's values)."""
    e, f = _split_exponents(rows_bits, exponent)
    scaled = np.ldexp(v, e)                      # exact: a power of two
    hi = np.rint(scaled)
    rest = np.ldexp(scaled - hi, f)              # |scaled - hi| <= 1/2, the subtraction exact
    lo = np.rint(rest)
    if not np.array_equal(lo, rest):
        return None
    return hi, lo


def _sampled_counts(vectors: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]],
                    resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (a, b) of ``vectors`` (aligned, of one length each; b = -1: zeros), how
    many of ``resamples`` random sign patterns give a sum of ``s * (x - y)`` at most, and at
    least, the observed sum (within the tie tolerance).

    The sums are those of the exact differences: each vector, split into integer-valued
    parts (:func:`_integer_parts`), is multiplied by the signs once, however many pairs it is
    in (21 runs give 210 pairs from 21 vectors a measure), and a pair's sums are the exact
    differences of its vectors' sums, rounded once. A pair whose values cannot be split so
    is multiplied as its vector of differences, rounded as a matrix product rounds."""
    n_max = max(len(vectors[i]) for pair in pairs for i in pair if i >= 0)
    rows_bits = max(n_max, 2).bit_length()
    zero = np.zeros(n_max)

    def padded(i: int) -> np.ndarray:
        if i < 0:
            return zero
        v = vectors[i]
        return v if len(v) == n_max else np.concatenate((v, np.zeros(n_max - len(v))))

    top = [math.frexp(float(np.abs(v).max(initial=0.0)))[1] for v in vectors]
    columns: list[np.ndarray] = [zero, zero]     # the zero vector's hi and lo
    split: dict[tuple[int, int], int] = {}     # (vector, exponent) -> hi column, -1: none
    exact: list[tuple[int, int, int, int]] = []  # pair, hi/lo column of a, of b, exponent
    plain: list[tuple[int, np.ndarray]] = []     # pair, differences
    tol = np.empty(len(pairs))
    for k, (a, b) in enumerate(pairs):
        d = padded(a) - padded(b)
        tol[k] = _TIE * np.abs(d).sum()
        exponent = max(top[i] for i in (a, b) if i >= 0)
        if not np.isfinite(d).all():
            plain.append((k, d))
            continue
        at = []
        for i in (a, b):
            if i >= 0 and (i, exponent) not in split:
                parts = _integer_parts(padded(i), rows_bits, exponent)
                split[(i, exponent)] = -1 if parts is None else len(columns)
                if parts is not None:
                    columns.extend(parts)
            at.append(split[(i, exponent)] if i >= 0 else 0)   # 0: the zero vector's
        if min(at) < 0:
            plain.append((k, d))
        else:
            exact.append((k, at[0], at[1], exponent))
    matrix = np.stack(columns + [d for _, d in plain], axis=1)
    less = np.zeros(len(pairs), dtype=np.int64)
    greater = np.zeros(len(pairs), dtype=np.int64)
    ex = np.array([k for k, *_ in exact], dtype=np.intp)
    ha, hb = (np.array([x[i] for x in exact], dtype=np.intp) for i in (1, 2))
    f = _split_exponents(rows_bits, 0)[1]
    unit = np.ldexp(1.0, -np.array([_split_exponents(rows_bits, x[3])[0] for x in exact],
                                   dtype=int))
    pl = np.array([k for k, _ in plain], dtype=np.intp)
    pc = len(columns) + np.arange(len(plain))

    def sums(product: np.ndarray) -> np.ndarray:
        out = np.empty((product.shape[0], len(pairs)))
        # hi and lo differences exact; one rounding in adding them; the scale exact
        out[:, ex] = ((product[:, ha] - product[:, hb])
                      + np.ldexp(product[:, ha + 1] - product[:, hb + 1], -f)) * unit
        out[:, pl] = product[:, pc]
        return out

    observed = sums(matrix.sum(axis=0)[None, :])[0]   # exact for the integer parts
    for block in range(-(-resamples // SIGN_BLOCK)):
        rows = min(SIGN_BLOCK, resamples - block * SIGN_BLOCK)
        lo, hi = _counts(sums(_sign_block(seed, block, n_max)[:, :rows].T @ matrix),
                         observed, tol)
        less += lo
        greater += hi
    return less, greater


def _randomization(vectors: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]], *,
                   resamples: int, seed: int, alternative: str) -> list[float | None]:
    """:func:`randomization_p_values` of ``vectors[a] - vectors[b]`` for each (a, b) of
    ``pairs`` (b = -1: the vector itself)."""
    out: list[float | None] = [None] * len(pairs)
    exact: dict[int, list[int]] = {}
    sampled: list[int] = []
    for k, (a, _) in enumerate(pairs):
        n = len(vectors[a])
        if n < 2:
            continue
        (exact.setdefault(n, []) if 2 ** min(n, 62) <= resamples else sampled).append(k)

    def difference(k: int) -> np.ndarray:
        a, b = pairs[k]
        return vectors[a] - vectors[b] if b >= 0 else vectors[a]

    for n, idx in exact.items():
        d = np.stack([difference(k) for k in idx], axis=1)   # n x tests
        null = _all_signs(n) @ d
        observed = null[0]                       # the pattern of no flip, computed alike
        less, greater = _counts(null, observed, _TIE * np.abs(d).sum(axis=0))
        for k, p in zip(idx, _p_from_counts(less, greater, 2 ** n, 0, alternative).tolist(),
                        strict=True):
            out[k] = p
    if sampled:
        n_max = max(len(vectors[pairs[k][0]]) for k in sampled)
        per_chunk = max(1, _MAX_CELLS // n_max)
        for start in range(0, len(sampled), per_chunk):
            idx = sampled[start:start + per_chunk]
            less, greater = _sampled_counts(vectors, [pairs[k] for k in idx], resamples, seed)
            for k, p in zip(idx, _p_from_counts(less, greater, resamples, 1,
                                                alternative).tolist(), strict=True):
                out[k] = p
    return out


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
    and the statistics of all the tests of a block come from one matrix product, in which
    each sampled statistic is an exact sum rounded once (:func:`_sampled_counts`): 1,050
    tests over 5,000 topics take under a second, in tens of MB. The same seed gives the same
    p-values; they differ from scipy's sampled ones, whose generator draws other signs.
    :func:`paired_p_values` gives the same p-values from the pairs of scores.
    """
    vectors = [np.asarray(d, float) for d in diffs]
    return _randomization(vectors, [(i, -1) for i in range(len(vectors))],
                          resamples=resamples, seed=seed, alternative=alternative)


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
    over the topics both runs define, in one fixed topic order); ``None`` where undefined.
    The randomization test multiplies each distinct array object by the signs once, however
    many pairs hold it (:func:`pairwise_tests` passes a run's column to each of its pairs
    where they share their topics)."""
    if policy.test == "randomization":
        vectors: list[np.ndarray] = []
        seen: dict[int, int] = {}
        held = []                      # the arrays given, alive while their ids are keys

        def number(v) -> int:
            held.append(v)
            if id(v) not in seen:
                seen[id(v)] = len(vectors)
                vectors.append(np.asarray(v, float))
            return seen[id(v)]

        at = [(number(x), number(y)) for x, y in pairs]
        for a, b in at:
            if len(vectors[a]) != len(vectors[b]):
                raise ValueError(f"paired scores of different lengths: {len(vectors[a])} "
                                 f"and {len(vectors[b])}")
        return _randomization(vectors, at, resamples=policy.resamples, seed=policy.seed,
                              alternative=policy.alternative)
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
        table = np.empty((len(topics), len(systems)))
        for i, s in enumerate(systems):    # None (or a topic not there) -> NaN, NaN stays NaN
            table[:, i] = np.array(list(map(scores[s].get, topics)), dtype=float)
        start = len(rows)
        defined = ~np.isnan(table)
        # a run's column, one object for each of its pairs over every topic: the
        # randomization test multiplies it by the signs once (paired_p_values)
        columns = [np.ascontiguousarray(table[:, i]) for i in range(len(systems))]
        for i, j in combinations(range(len(systems)), 2):
            both = defined[:, i] & defined[:, j]
            if both.all():
                x, y = columns[i], columns[j]
            else:
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

"""Statistics shared by every report: means, rank correlations (Kendall's tau, Spearman's rho,
tau_AP), agreement coefficients (Cohen's and Fleiss' kappa, Krippendorff's alpha), bootstrap
intervals over topics, and the paired tests between runs with their multiple-testing
corrections. This module is their one home: the paper tables, ``meta-eval``, ``evaluate``,
``crux-eval``, the workflow's significance table and ``cruxflow.compare`` call it.

**Undefined is ``None``.** A statistic that has no value (a mean of nothing, a correlation with
fewer than two finite pairs or a constant side, a kappa whose chance agreement is 1, a paired
test over fewer than two topics) is returned as ``None``, never as NaN and never silently
dropped; the caller decides whether to leave it out and reports how many it left out. Code that
puts statistics into a pandas frame turns ``None`` into NaN there (:func:`nan_if_none`).

**One paired-test policy.** :data:`POLICY` declares the default paired test, its resamples and
seed, and the multiple-testing correction; every door takes its defaults from it
(docs/evaluate.md, "Several runs at once").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from cruxflow.metrics.policy import ALTERNATIVES, CORRECTIONS, POLICY, TESTS, Policy

if TYPE_CHECKING:
    import pandas as pd

# scipy and pandas are imported where they are used: a command that only averages (crux-eval
# on one run) would otherwise spend about a second importing them.
METHODS = {"kendall": "kendalltau", "spearman": "spearmanr"}


def _correlation(method: str):
    from scipy import stats

    return getattr(stats, METHODS[method])


def defined(values: Iterable[float | None]) -> list[float]:
    """The values that are defined (not ``None``, not NaN), as floats."""
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def mean_of_defined(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are defined; ``None`` when none is. Per-item scores that are
    undefined (0/0) are left out of an average, not counted as 0."""
    vals = defined(values)
    return math.fsum(vals) / len(vals) if vals else None


def nan_if_none(value: float | None) -> float:
    """A statistic as a frame cell: NaN for ``None``."""
    return math.nan if value is None else float(value)


def _is_defined(value) -> bool:
    return value is not None and not math.isnan(float(value))


# --- rank correlation -------------------------------------------------------------------------

@dataclass(frozen=True)
class RankCorrelation:
    value: float | None
    p_value: float | None
    n: int                 # pairs used (both sides defined)


def rank_correlation(x: Sequence[float | None], y: Sequence[float | None],
                     method: str = "kendall") -> RankCorrelation:
    """Kendall's tau-b or Spearman's rho (scipy) over the pairs where both values are defined.
    Undefined (``None``) with fewer than two such pairs or when either side is constant."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}")
    pairs = [(float(a), float(b)) for a, b in zip(x, y, strict=True)
             if _is_defined(a) and _is_defined(b)]
    if len(pairs) < 2:
        return RankCorrelation(None, None, len(pairs))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return RankCorrelation(None, None, len(pairs))
    res = _correlation(method)(a, b)
    return RankCorrelation(float(res.statistic), float(res.pvalue), len(pairs))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two lists of scores (scipy.stats.kendalltau); ``None`` with fewer
    than two values or a constant side."""
    return rank_correlation(x, y, "kendall").value


def tau_ap(reference: Sequence[float], estimate: Sequence[float]) -> float | None:
    """Yilmaz, Aslam and Robertson's AP rank correlation (SIGIR 2008) of ``estimate``'s ranking
    of systems against ``reference``'s (higher scores first):
    tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1, where C(i) counts the systems that
    ``estimate`` ranks above its i-th one and ``reference`` ranks above it too.

    **Ties**: the expected tau_AP over every way of breaking them, each tied group of either
    ranking ordered uniformly at random and independently. A pair tied in ``reference`` is
    then concordant with probability 1/2; a system in a tie group of ``estimate`` of size g,
    with p systems strictly above it, sits at each of ranks p + 1 .. p + g with probability
    1/g and has each other member of its group above it with probability (rank - p - 1) /
    (g - 1). Without ties this is Yilmaz et al.'s tau_AP; with ties in ``estimate`` only it is
    Urbano and Marrero's tau_AP,a (ICTIR 2017), which is this expectation.

    ``None`` (undefined) with fewer than two systems or when either side is constant (every
    system tied: no ranking to compare, as for Kendall's tau-b).
    """
    ref = np.asarray(reference, dtype=float)
    est = np.asarray(estimate, dtype=float)
    n = len(ref)
    if n != len(est):
        raise ValueError(f"{n} reference values against {len(est)}")
    if n < 2 or np.isnan(ref).any() or np.isnan(est).any() or np.ptp(ref) == 0 \
            or np.ptp(est) == 0:
        return None
    # concordance of s above t in the reference: 1, 1/2 on a reference tie, 0
    above = (ref[:, None] > ref[None, :]) + 0.5 * (ref[:, None] == ref[None, :])
    np.fill_diagonal(above, 0.0)
    total = 0.0
    for t in range(n):
        higher = est > est[t]
        group = (est == est[t])
        group[t] = False
        p, g = int(higher.sum()), int(group.sum()) + 1
        a_t = float(above[higher, t].sum())       # systems surely above t
        b_t = float(above[group, t].sum())        # t's group: above t with some probability
        for m in range(1, g + 1):                 # t at rank p + m, with probability 1/g
            if p + m == 1:
                continue                          # the top rank has no one above it
            share = (m - 1) / (g - 1) if g > 1 else 0.0
            total += (a_t + share * b_t) / (p + m - 1) / g
    return 2.0 * total / (n - 1) - 1.0


# --- bootstrap over topics --------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval and what it rests on: ``topics`` resampled with
    replacement ``resamples`` times; ``undefined`` of those resamples gave no value (a side
    constant in the resample, a system without a value in it) and were left out."""

    low: float | None
    high: float | None
    confidence: float
    topics: int
    resamples: int
    undefined: int

    def describe(self) -> str:
        """What was resampled: ``95% percentile bootstrap, 1000 resamples of the 4 topics
        with replacement``."""
        return (f"{self.confidence:.0%} percentile bootstrap, {self.resamples} resamples of "
                f"the {self.topics} topic{'s' if self.topics != 1 else ''} with replacement")


def topic_bootstrap(tables: Sequence[np.ndarray], statistic: Callable[..., float | None], *,
                    n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
                    min_topics: int = 2) -> Interval:
    """A percentile bootstrap interval of ``statistic`` over topics.

    ``tables`` are topics x systems arrays (NaN: no value), one per side; a resample draws
    topics (rows) with replacement, ``rng.integers(0, n, (n_resamples, n))`` as
    ``scipy.stats.bootstrap`` draws them, and passes each table's per-system mean over the
    drawn rows to ``statistic``. A resample whose statistic is undefined (``None`` or NaN, or
    a system without a value among the drawn rows) is left out and counted; the interval is
    the percentiles of the others (``None`` when none is left, with fewer than ``min_topics``
    topics or no resamples). Where every resample is defined this equals
    ``scipy.stats.bootstrap(method="percentile")`` with the same generator (tests/test_stats.py).
    """
    n = tables[0].shape[0] if tables else 0
    if n < min_topics or n_resamples < 1:
        return Interval(None, None, confidence, n, 0, 0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, (n_resamples, n))
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a system with no value: NaN
        for idx in draws:
            means = [np.nanmean(t[idx], axis=0) for t in tables]
            if any(np.isnan(m).any() for m in means):
                continue
            value = statistic(*means)
            if value is not None and not math.isnan(value):
                values.append(float(value))
    undefined = n_resamples - len(values)
    if not values:
        return Interval(None, None, confidence, n, n_resamples, undefined)
    tail = (1 - confidence) / 2
    low, high = np.percentile(values, [100 * tail, 100 * (1 - tail)])
    return Interval(float(low), float(high), confidence, n, n_resamples, undefined)


@dataclass
class Correlation:
    x: str
    y: str
    method: str
    value: float | None
    low: float | None
    high: float | None
    n_systems: int
    n_topics: int
    interval: Interval | None = None


def _tau_statistic(method: str):
    def statistic(a, b):
        return rank_correlation(list(a), list(b), method).value
    return statistic


def system_correlation(per_query: pd.DataFrame, x: str, y: str, method: str = "kendall",
                       n_resamples: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> Correlation:
    """Correlate two metrics at the system level: means over topics, then tau (or rho).

    ``per_query`` has columns ``topic``, ``system`` and the metric columns. The interval is a
    percentile bootstrap that resamples topics with replacement (:func:`topic_bootstrap`), so
    it reflects how much the system ranking depends on the topic sample; ``None`` where it is
    undefined (one topic, fewer than three systems, or no resample with a defined value).
    """
    # topics x systems tables, pivoted once: a resample is then a row selection
    tables = {col: per_query.pivot_table(index="topic", columns="system", values=col,
                                         aggfunc="mean", dropna=False).sort_index()
                                                                      .sort_index(axis=1)
              for col in (x, y)}
    systems = per_query["system"].nunique()
    means = per_query.groupby("system")[[x, y]].mean().sort_index()
    value = rank_correlation(means[x].tolist(), means[y].tolist(), method).value
    n_topics = len(tables[x].index)
    interval = None
    if systems > 2:
        interval = topic_bootstrap([tables[x].to_numpy(float), tables[y].to_numpy(float)],
                                   _tau_statistic(method), n_resamples=n_resamples,
                                   confidence=confidence, seed=seed)
    low, high = (interval.low, interval.high) if interval else (None, None)
    return Correlation(x, y, method, value, low, high, systems, n_topics, interval)


def mean_interval(values: Sequence[float], n_resamples: int = 1000, confidence: float = 0.95,
                  seed: int = 0) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of the mean of ``values`` (resampling the values with
    replacement, :func:`topic_bootstrap`); ``(None, None)`` with fewer than two values or no
    resamples, the value itself twice when every value is the same."""
    x = np.asarray(defined(values), dtype=float)
    if len(x) < 2 or n_resamples < 1:
        return None, None
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    res = topic_bootstrap([x[:, None]], lambda m: float(m[0]), n_resamples=n_resamples,
                          confidence=confidence, seed=seed)
    return res.low, res.high


@dataclass(frozen=True)
class RankAgreement:
    """Two rankings of the same systems from two sources of scores over the same topics:
    Kendall's tau-b and tau_AP (``reference`` as the truth) of the systems' means, each with
    its bootstrap interval over those topics."""

    n_systems: int
    n_topics: int
    tau: float | None
    tau_ap: float | None
    tau_interval: Interval
    tau_ap_interval: Interval
    reference_means: tuple[float, ...]
    estimate_means: tuple[float, ...]


def rank_agreement(reference: np.ndarray, estimate: np.ndarray, *, n_resamples: int = 1000,
                   confidence: float = 0.95, seed: int = 0) -> RankAgreement:
    """Kendall's tau and tau_AP between the systems' means of two topics x systems tables of
    the same topics (every cell defined), with percentile bootstrap intervals over the topics
    (:func:`topic_bootstrap`: two or more topics and three or more systems, else none)."""
    reference, estimate = np.asarray(reference, float), np.asarray(estimate, float)
    if reference.shape != estimate.shape:
        raise ValueError(f"tables of shapes {reference.shape} and {estimate.shape}")
    n_topics, n_systems = reference.shape
    ref_means, est_means = reference.mean(axis=0), estimate.mean(axis=0)
    boot = {"n_resamples": n_resamples if n_systems > 2 else 0, "confidence": confidence,
            "seed": seed}
    tables = [reference, estimate]
    return RankAgreement(
        n_systems, n_topics,
        kendall_tau(ref_means, est_means) if n_topics else None,
        tau_ap(ref_means, est_means) if n_topics else None,
        topic_bootstrap(tables, kendall_tau, **boot),
        topic_bootstrap(tables, tau_ap, **boot),
        tuple(ref_means.tolist()), tuple(est_means.tolist()))


# --- agreement --------------------------------------------------------------------------------

def cohen_kappa(a: Sequence, b: Sequence, labels: Sequence | None = None,
                weights: str | None = None) -> float | None:
    """Cohen's kappa of two label sequences (scikit-learn; ``weights="linear"`` or
    ``"quadratic"`` for an ordinal scale); ``None`` when it is 0/0 (chance agreement 1, e.g.
    one label everywhere) or there is nothing to compare."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(cohen_kappa_score(a, b, labels=labels, weights=weights))
    return None if math.isnan(kappa) else kappa


def fleiss_kappa(ratings: np.ndarray, n_categories: int) -> float | None:
    """Fleiss' kappa (statsmodels) of an items x raters matrix of category indices
    0..n_categories-1, every item rated by every rater; ``None`` when it is 0/0 (every label in
    one category)."""
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    table, _ = aggregate_raters(np.asarray(ratings, dtype=int), n_cat=n_categories)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(_fleiss(table, method="fleiss"))
    return None if math.isnan(kappa) else kappa


def krippendorff_alpha(a: Sequence[int], b: Sequence[int], *,
                       level: str = "ordinal", values: Sequence[int] | None = None
                       ) -> float | None:
    """Krippendorff's alpha of two raters' labels of the same items (the ``krippendorff``
    package, the 'judge' extra) at ``level``, over the value domain ``values``; ``None`` when
    it is 0/0 (one label everywhere) or there is nothing to compare."""
    from cruxflow._extras import extra

    with extra(__name__, "judge"):
        import krippendorff

    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(krippendorff.alpha(reliability_data=np.array([a, b], dtype=float),
                                         level_of_measurement=level,
                                         value_domain=None if values is None else list(values)))
    return None if math.isnan(value) else value


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
    return 1.0 - 2.0 * bits.T


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
    idx = [i for i, p in enumerate(p_values) if _is_defined(p)]
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
    return float(v) if _is_defined(v) else math.nan


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

"""Statistics shared by every report: means, rank correlations, agreement coefficients, paired
tests and bootstrap intervals, each from a well-kept library (scipy, statsmodels,
scikit-learn) behind one convention.

**Undefined is ``None``.** A statistic that has no value (a mean of nothing, a correlation with
fewer than two finite pairs or a constant side, a kappa whose chance agreement is 1) is
returned as ``None``, never as NaN and never silently dropped; the caller decides whether to
leave it out and reports how many it left out. Code that puts statistics into a pandas frame
turns ``None`` into NaN there (:func:`nan_if_none`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

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
             if a is not None and b is not None and not math.isnan(float(a))
             and not math.isnan(float(b))]
    if len(pairs) < 2:
        return RankCorrelation(None, None, len(pairs))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return RankCorrelation(None, None, len(pairs))
    res = _correlation(method)(a, b)
    return RankCorrelation(float(res.statistic), float(res.pvalue), len(pairs))


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


def _system_means(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # table is topics x systems (NaN where a system has no value for a topic); sampled topics
    # may repeat. The mean over the present values, as groupby().mean() takes it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a system with no value: NaN
        return np.nanmean(table[idx], axis=0)


def system_correlation(per_query: pd.DataFrame, x: str, y: str, method: str = "kendall",
                       n_resamples: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> Correlation:
    """Correlate two metrics at the system level: means over topics, then tau (or rho).

    ``per_query`` has columns ``topic``, ``system`` and the metric columns. The interval is a
    percentile bootstrap that resamples topics with replacement (scipy.stats.bootstrap), so it
    reflects how much the system ranking depends on the topic sample; ``None`` where it is
    undefined (one topic, fewer than three systems, or resamples whose tau is undefined).
    """
    from scipy import stats

    corr = _correlation(method)
    # topics x systems tables, pivoted once: a resample is then a row selection
    tables = {col: per_query.pivot_table(index="topic", columns="system", values=col,
                                         aggfunc="mean", dropna=False).sort_index()
                                                                      .sort_index(axis=1)
              for col in (x, y)}
    topics = tables[x].index.to_numpy()
    systems = per_query["system"].nunique()
    means = per_query.groupby("system")[[x, y]].mean().sort_index()
    value = rank_correlation(means[x].tolist(), means[y].tolist(), method).value
    table_x, table_y = tables[x].to_numpy(float), tables[y].to_numpy(float)

    def statistic(idx):
        return corr(_system_means(table_x, idx), _system_means(table_y, idx)).statistic

    low = high = None
    if len(topics) > 1 and systems > 2 and n_resamples > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (stats.ConstantInputWarning, RuntimeWarning))
            res = stats.bootstrap((np.arange(len(topics)),), statistic,
                                  n_resamples=n_resamples, confidence_level=confidence,
                                  method="percentile", vectorized=False,
                                  rng=np.random.default_rng(seed))
        ci = res.confidence_interval
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            low, high = float(ci.low), float(ci.high)
    return Correlation(x, y, method, value, low, high, systems, len(topics))


def mean_interval(values: Sequence[float], n_resamples: int = 1000, confidence: float = 0.95,
                  seed: int = 0) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of the mean of ``values`` (scipy.stats.bootstrap,
    resampling the values with replacement); ``(None, None)`` with fewer than two values or no
    resamples, the value itself twice when every value is the same."""
    from scipy import stats

    x = np.asarray(defined(values), dtype=float)
    if len(x) < 2 or n_resamples < 1:
        return None, None
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    res = stats.bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                          method="percentile", rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return float(ci.low), float(ci.high)


# --- agreement --------------------------------------------------------------------------------

def cohen_kappa(a: Sequence, b: Sequence, labels: Sequence | None = None) -> float | None:
    """Cohen's (unweighted) kappa of two label sequences (scikit-learn); ``None`` when it is
    0/0 (chance agreement 1, e.g. one label everywhere) or there is nothing to compare."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(cohen_kappa_score(a, b, labels=labels))
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


# --- paired tests -----------------------------------------------------------------------------

def _mean_diff(x, y, axis):
    return np.mean(x - y, axis=axis)


def paired_randomization(x: Sequence[float], y: Sequence[float], *, n_resamples: int = 9999,
                         seed: int = 0, alternative: str = "two-sided") -> float | None:
    """p-value of a paired randomization (sign-flip) test of the mean difference
    (scipy.stats.permutation_test, permutation_type="samples"; exact when 2^n <= n_resamples,
    else ``n_resamples`` draws seeded with ``seed``); ``None`` with fewer than two pairs (scipy
    refuses one)."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return None
    res = stats.permutation_test((x, y), _mean_diff, permutation_type="samples",
                                 vectorized=True, n_resamples=n_resamples,
                                 alternative=alternative, rng=np.random.default_rng(seed))
    return float(min(res.pvalue, 1.0))


def paired_t(x: Sequence[float], y: Sequence[float],
             alternative: str = "two-sided") -> float | None:
    """p-value of a paired t-test (scipy.stats.ttest_rel); 1.0 when every difference is 0,
    ``None`` with fewer than two pairs."""
    from scipy import stats

    d = np.asarray(x, float) - np.asarray(y, float)
    if len(d) < 2:
        return None
    if np.all(d == 0):
        return 1.0  # no difference at all; scipy would return NaN
    return float(stats.ttest_rel(x, y, alternative=alternative).pvalue)


def wilcoxon(d: Sequence[float], alternative: str = "two-sided") -> float | None:
    """p-value of the Wilcoxon signed-rank test of differences ``d``; 1.0 when every difference
    is 0, ``None`` without differences."""
    from scipy import stats

    d = np.asarray(d, float)
    if len(d) == 0:
        return None
    if np.all(d == 0):
        return 1.0  # no difference at all; scipy would return NaN
    return float(stats.wilcoxon(d, zero_method="wilcox", alternative=alternative).pvalue)


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control) of the
    defined ones, the family being those; ``None`` stays ``None``."""
    from scipy import stats

    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if idx:
        adjusted = stats.false_discovery_control([p_values[i] for i in idx], method="bh")
        for i, p in zip(idx, adjusted, strict=True):
            out[i] = float(p)
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values of the defined ones, the family being those;
    ``None`` stays ``None``: the i-th smallest of m times (m - i + 1), made non-decreasing
    and capped at 1. (statsmodels' ``multipletests(method="holm")`` gives the same numbers,
    tests/test_stats.py checks it, but runs a full ``gc.collect()`` on every call: 0.2 s each
    in a large process, seconds for the families of one ``evaluate`` call.)"""
    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if idx:
        p = np.asarray([p_values[i] for i in idx], dtype=float)
        order = np.argsort(p, kind="stable")
        steps = len(p) - np.arange(len(p))
        adjusted = np.empty(len(p))
        adjusted[order] = np.minimum(1.0, np.maximum.accumulate(steps * p[order]))
        for i, value in zip(idx, adjusted.tolist(), strict=True):
            out[i] = value
    return out


# --- many runs --------------------------------------------------------------------------------

PAIRED_TESTS = ("t_test", "randomization")


def compare(per_topic: Mapping[str, Mapping[str, Mapping[str, float | None]]],
            measures: Sequence[str] | None = None, *, n_resamples: int = 9999, seed: int = 0,
            correction: str = "holm", tests: Sequence[str] = PAIRED_TESTS) -> list[dict]:
    """Paired tests between every pair of runs, per measure, with a multiple-testing
    correction over the pairs (ranx's ``compare`` convention).

    ``per_topic`` is ``{run: {topic: {measure: value}}}`` (``None`` or NaN: undefined); the
    runs' order gives the pairs' order (a, b) with a before b. For each measure, over the topics
    both runs define: the means, their difference a - b, the two-sided p-values of a paired
    t-test (:func:`paired_t`) and a paired randomization test (:func:`paired_randomization`)
    and, for each test, the p-values adjusted by Holm's method (:func:`holm`) over the
    ``n(n - 1) / 2`` pairs of that measure and test (``correction="none"`` leaves them as they
    are). One dict per (measure, pair), measures in the order given (default: the first run's).
    ``tests`` picks the tests (the randomization test costs about 0.3 s a pair and measure at
    5,000 topics; a test left out is ``None``).
    """
    if correction not in ("holm", "none"):
        raise ValueError(f"unknown correction {correction!r} (holm or none)")
    names = list(per_topic)
    if measures is None:
        first = next(iter(per_topic.values()), {})
        measures = list(dict.fromkeys(m for row in first.values() for m in row))
    rows = []
    for measure in measures:
        block = []
        for a, b in combinations(names, 2):
            ta, tb = per_topic[a], per_topic[b]
            topics = [t for t in ta if t in tb and _is_defined(ta[t].get(measure))
                      and _is_defined(tb[t].get(measure))]
            xa = [float(ta[t][measure]) for t in topics]
            xb = [float(tb[t][measure]) for t in topics]
            mean_a, mean_b = mean_of_defined(xa), mean_of_defined(xb)
            block.append({
                "measure": measure, "a": a, "b": b, "topics": len(topics),
                "mean_a": mean_a, "mean_b": mean_b,
                "diff": None if mean_a is None else mean_a - mean_b,
                "p_t_test": paired_t(xa, xb) if "t_test" in tests else None,
                "p_randomization": paired_randomization(xa, xb, n_resamples=n_resamples,
                                                        seed=seed)
                if "randomization" in tests else None})
        for test in PAIRED_TESTS:
            raw = [r[f"p_{test}"] for r in block]
            adjusted = holm(raw) if correction == "holm" else raw
            for r, p in zip(block, adjusted, strict=True):
                r[f"p_{test}_{correction}"] = p
        rows.extend(block)
    return rows


def _is_defined(value) -> bool:
    return value is not None and not math.isnan(float(value))

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

METHODS = {"kendall": stats.kendalltau, "spearman": stats.spearmanr}


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
    res = METHODS[method](a, b)
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
    corr = METHODS[method]
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
    else ``n_resamples`` draws seeded with ``seed``); ``None`` without pairs."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not len(x):
        return None
    res = stats.permutation_test((x, y), _mean_diff, permutation_type="samples",
                                 vectorized=True, n_resamples=n_resamples,
                                 alternative=alternative, rng=np.random.default_rng(seed))
    return float(min(res.pvalue, 1.0))


def paired_t(x: Sequence[float], y: Sequence[float],
             alternative: str = "two-sided") -> float | None:
    """p-value of a paired t-test (scipy.stats.ttest_rel); 1.0 when every difference is 0,
    ``None`` with fewer than two pairs."""
    d = np.asarray(x, float) - np.asarray(y, float)
    if len(d) < 2:
        return None
    if np.all(d == 0):
        return 1.0  # no difference at all; scipy would return NaN
    return float(stats.ttest_rel(x, y, alternative=alternative).pvalue)


def wilcoxon(d: Sequence[float], alternative: str = "two-sided") -> float | None:
    """p-value of the Wilcoxon signed-rank test of differences ``d``; 1.0 when every difference
    is 0, ``None`` without differences."""
    d = np.asarray(d, float)
    if len(d) == 0:
        return None
    if np.all(d == 0):
        return 1.0  # no difference at all; scipy would return NaN
    return float(stats.wilcoxon(d, zero_method="wilcox", alternative=alternative).pvalue)


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control) of the
    defined ones, the family being those; ``None`` stays ``None``."""
    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if idx:
        adjusted = stats.false_discovery_control([p_values[i] for i in idx], method="bh")
        for i, p in zip(idx, adjusted, strict=True):
            out[i] = float(p)
    return out

"""Rank correlations between two rankings of systems or two lists of values: Kendall's tau-b,
Spearman's rho (scipy), tau_AP, a system-level correlation of per-topic tables with its
bootstrap interval, and the agreement of two rankings with intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cruxflow.metrics.stats.bootstrap import Interval, topic_bootstrap
from cruxflow.metrics.stats.values import is_defined

if TYPE_CHECKING:
    import pandas as pd

# scipy and pandas are imported where they are used: a command that only averages (crux-eval
# on one run) would otherwise spend about a second importing them.
METHODS = {"kendall": "kendalltau", "spearman": "spearmanr"}

def _correlation(method: str):
    from scipy import stats

    return getattr(stats, METHODS[method])

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
             if is_defined(a) and is_defined(b)]
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

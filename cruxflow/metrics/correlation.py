"""Rank correlation between systems, with bootstrap confidence intervals over topics (scipy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

METHODS = {"kendall": stats.kendalltau, "spearman": stats.spearmanr}


@dataclass
class Correlation:
    x: str
    y: str
    method: str
    value: float
    low: float
    high: float
    n_systems: int
    n_topics: int


def _system_means(per_query: pd.DataFrame, idx: np.ndarray, topics: np.ndarray,
                  col: str) -> np.ndarray:
    # per_query is indexed (topic, system); sampled topics may repeat, so select by position.
    sample = per_query.loc[list(topics[idx])]
    return sample.groupby(level="system")[col].mean().sort_index().to_numpy()


def system_correlation(per_query: pd.DataFrame, x: str, y: str, method: str = "kendall",
                       n_resamples: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> Correlation:
    """Correlate two metrics at the system level: means over topics, then tau (or rho).

    ``per_query`` has columns ``topic``, ``system`` and the metric columns. The interval is a
    percentile bootstrap that resamples topics with replacement (scipy.stats.bootstrap), so it
    reflects how much the system ranking depends on the topic sample.
    """
    corr = METHODS[method]
    frame = per_query.set_index(["topic", "system"])[[x, y]].sort_index()
    topics = np.array(sorted(per_query["topic"].unique()))
    systems = per_query["system"].nunique()
    means = per_query.groupby("system")[[x, y]].mean().sort_index()
    value = float(corr(means[x], means[y]).statistic)

    def statistic(idx):
        a = _system_means(frame, idx, topics, x)
        b = _system_means(frame, idx, topics, y)
        return corr(a, b).statistic

    low = high = np.nan
    if len(topics) > 1 and systems > 2 and n_resamples > 0:
        res = stats.bootstrap((np.arange(len(topics)),), statistic, n_resamples=n_resamples,
                              confidence_level=confidence, method="percentile",
                              vectorized=False, rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Correlation(x, y, method, value, low, high, systems, len(topics))

"""Percentile bootstrap intervals over topics: a statistic of per-topic tables resampled
together (:func:`topic_bootstrap`), and a mean's interval (:func:`mean_interval`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cruxflow.metrics.stats.values import defined


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
    from cruxflow.data.limits import check_count, check_level

    confidence = check_level("confidence", confidence)   # the command line's checks
    n_resamples = check_count("bootstrap", n_resamples, "n_resamples")
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

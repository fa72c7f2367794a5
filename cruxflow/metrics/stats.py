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

**One paired-test policy.** :data:`POLICY` (declared in :mod:`cruxflow.metrics.policy`) names
the default paired test, its resamples and seed, and the multiple-testing correction; every door
takes its defaults from it (docs/evaluate.md, "Several runs at once"). The tests and
corrections are computed in :mod:`cruxflow.metrics.paired` and exported here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

# the policy, the paired tests and the corrections: declared and computed in their own modules,
# exported here with the rest
from cruxflow.metrics.paired import (  # noqa: F401
    SIGN_BLOCK,
    adjust,
    benjamini_hochberg,
    holm,
    paired_p_values,
    pairwise,
    pairwise_tests,
    randomization_p_values,
    t_test_p_value,
    wilcoxon_p_value,
)
from cruxflow.metrics.policy import ALTERNATIVES, CORRECTIONS, POLICY, TESTS, Policy  # noqa: F401

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
    if n_topics:
        ref_means, est_means = reference.mean(axis=0), estimate.mean(axis=0)
    else:                                    # no topic: no mean, no ranking
        ref_means = est_means = np.full(n_systems, np.nan)
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

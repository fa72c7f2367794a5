"""Two label sets item by item, over the items both labelled: exact agreement, Cohen's kappa
(unweighted, linearly and quadratically weighted on the grades), Krippendorff's alpha (ordinal),
kappa of the labels binarised at a threshold, the confusion matrix with each side's base rates,
and Cohen's kappa per topic with a percentile bootstrap interval over the topic's items; for three
or more sets, Fleiss' kappa and each set against the others' labels merged by the one merge rule.

The coefficients are :mod:`cruxflow.metrics.stats`' (scikit-learn's, krippendorff's,
statsmodels'): this module only picks the items and the scale. The one exception is the
bootstrap of a topic's kappa, computed for every resample at once from the resample's confusion
counts (``(n * agreements - S) / (n^2 - S)``, ``S`` the sum over grades of the two sides'
counts' products: Cohen's definition), which tests/test_judge_agreement.py checks against
scikit-learn's ``cohen_kappa_score`` resample by resample.

Undefined is ``None`` (a kappa whose chance agreement is 1, nothing shared), as in
:mod:`cruxflow.metrics.stats`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from cruxflow.data.limits import check_bootstrap_cells, check_count
from cruxflow.data.merge import DEFAULT_MERGE, merge_labels
from cruxflow.metrics.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha

FEW = 30   # below this many items a statistic gets a warning
def check_bootstrap_size(resamples: int, *counts: int, what: str) -> None:
    """Refuse a bootstrap of more resamples than the count's bound
    (:data:`cruxflow.data.limits.COUNTS`), or of ``resamples`` x ``counts`` cells beyond
    :data:`cruxflow.data.limits.MAX_BOOTSTRAP_CELLS`, in one line naming the numbers."""
    check_count("bootstrap", resamples, "--bootstrap")
    check_bootstrap_cells(resamples, *counts, what=what)


def _ratio(num: float, den: float) -> float | None:
    return float(num) / den if den else None


def topic_order(topic: str) -> tuple:
    """Topics in natural order (``14`` before ``144``, ``t2`` before ``t10``)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p)
                 for p in re.split(r"(\d+)", str(topic)) if p)


def _percentiles(values: Sequence[float], confidence: float) -> tuple[float | None, float | None]:
    if not len(values):
        return None, None
    tail = (1 - confidence) / 2
    low, high = np.percentile(values, [100 * tail, 100 * (1 - tail)])
    return float(low), float(high)


# --- the kappa of many resamples at once --------------------------------------------------------

def kappa_of_draws(a: np.ndarray, b: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Cohen's kappa of the items ``draws`` picks (one resample a row: item indices) of two
    sides' labels ``a`` and ``b`` (integer arrays of one length); NaN where a resample's chance
    agreement is 1 (every label one grade on both sides)."""
    values, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = len(values)
    ca, cb = codes[:len(a)], codes[len(a):]
    pairs = ca * k + cb
    r, n = draws.shape
    counts = np.bincount((pairs[draws] + (np.arange(r) * k * k)[:, None]).ravel(),
                         minlength=r * k * k).reshape(r, k, k)
    agree = np.trace(counts, axis1=1, axis2=2).astype(float)
    chance = (counts.sum(axis=2) * counts.sum(axis=1)).sum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = (n * agree - chance) / (float(n) * n - chance)
    kappa[chance == float(n) * n] = np.nan
    return kappa


# --- one pair ---------------------------------------------------------------------------------

@dataclass
class TopicKappa:
    topic: str
    n: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    undefined: int = 0         # resamples without a kappa, left out of the interval

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class PairAgreement:
    """Two label sets over the items both labelled; ``a`` is the reference of precision and
    recall (of "grade >= threshold")."""

    a: str
    b: str
    n: int
    scale: list[int]
    threshold: int
    exact: float | None
    cohen_kappa: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    alpha_ordinal: float | None
    kappa_threshold: float | None
    confusion: list[list[int]]          # rows: a's grades, columns: b's (``scale``)
    base_rate_a: dict[int, float]       # each grade's share of a's labels
    base_rate_b: dict[int, float]
    positive_a: float | None            # share of a's labels >= threshold
    positive_b: float | None
    precision: float | None
    recall: float | None
    only_a: int = 0                     # items only one side labelled
    only_b: int = 0
    per_topic: list[TopicKappa] = field(default_factory=list)
    resamples: int = 0
    confidence: float = 0.95
    note: str = ""                      # "ceiling": two annotators of one label set

    @property
    def warning(self) -> str | None:
        if self.n == 0:
            return "no shared items"
        return f"only {self.n} items (< {FEW})" if self.n < FEW else None

    def to_json(self) -> dict:
        out = asdict(self)
        out["per_topic"] = [t.to_json() for t in self.per_topic]
        out["confusion"] = {"labels": self.scale, "rows_a_columns_b": self.confusion}
        out["base_rates"] = {"a": {str(g): v for g, v in self.base_rate_a.items()},
                             "b": {str(g): v for g, v in self.base_rate_b.items()},
                             "a_positive": self.positive_a, "b_positive": self.positive_b}
        for key in ("base_rate_a", "base_rate_b", "positive_a", "positive_b", "scale"):
            del out[key]
        out["warning"] = self.warning
        return out


def pair_agreement(a: Mapping, b: Mapping, *, names: tuple[str, str], scale: tuple[int, int],
                   threshold: int, n_resamples: int = 1000, confidence: float = 0.95,
                   seed: int = 0, note: str = "") -> PairAgreement:
    """The statistics of two label sets ``{item: grade}`` over the items both labelled; the
    grades run from ``scale[0]`` to ``scale[1]`` (the weights of the weighted kappas and the
    confusion matrix's rows)."""
    shared = sorted(set(a) & set(b))
    grades = list(range(scale[0], scale[1] + 1))
    x = np.array([a[i] for i in shared], dtype=np.int64)
    y = np.array([b[i] for i in shared], dtype=np.int64)
    n = len(shared)
    index = {g: i for i, g in enumerate(grades)}
    confusion = np.zeros((len(grades), len(grades)), dtype=np.int64)
    for u, v in zip(x.tolist(), y.tolist(), strict=True):
        confusion[index[u], index[v]] += 1
    xa, ya = (x >= threshold).astype(int), (y >= threshold).astype(int)
    tp = int((xa & ya).sum())
    base_a = {g: _ratio(int(confusion[i].sum()), n) for g, i in index.items()}
    base_b = {g: _ratio(int(confusion[:, i].sum()), n) for g, i in index.items()}
    xs, ys = x.tolist(), y.tolist()
    result = PairAgreement(
        names[0], names[1], n, grades, threshold,
        _ratio(int((x == y).sum()), n),
        cohen_kappa(xs, ys, labels=grades) if n else None,
        cohen_kappa(xs, ys, labels=grades, weights="linear") if n else None,
        cohen_kappa(xs, ys, labels=grades, weights="quadratic") if n else None,
        krippendorff_alpha(xs, ys, level="ordinal", values=grades) if n else None,
        cohen_kappa(xa.tolist(), ya.tolist(), labels=[0, 1]) if n else None,
        confusion.tolist(), base_a, base_b, _ratio(int(xa.sum()), n), _ratio(int(ya.sum()), n),
        _ratio(tp, int(ya.sum())), _ratio(tp, int(xa.sum())),
        len(set(a) - set(b)), len(set(b) - set(a)), [], n_resamples, confidence, note)
    result.per_topic = per_topic_kappa(shared, x, y, n_resamples=n_resamples,
                                       confidence=confidence, seed=seed)
    return result


def per_topic_kappa(items: Sequence[tuple], x: np.ndarray, y: np.ndarray, *,
                    n_resamples: int = 1000, confidence: float = 0.95,
                    seed: int = 0) -> list[TopicKappa]:
    """Cohen's kappa of each topic's items (a topic: an item's first part), with a percentile
    bootstrap interval that resamples the topic's items with replacement (the i-th topic in
    natural order drawn with the generator of ``[seed, i]``); resamples without a kappa are left
    out and counted."""
    by_topic: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        by_topic.setdefault(str(item[0]), []).append(i)
    out = []
    for t, (topic, rows) in enumerate(sorted(by_topic.items(),
                                             key=lambda kv: topic_order(kv[0]))):
        xt, yt = x[rows], y[rows]
        kappa = cohen_kappa(xt.tolist(), yt.tolist())
        low = high = None
        undefined = 0
        if n_resamples and len(rows) > 1:
            draws = np.random.default_rng([seed, t]).integers(0, len(rows),
                                                              (n_resamples, len(rows)))
            values = kappa_of_draws(xt, yt, draws)
            kept = values[~np.isnan(values)]
            undefined = n_resamples - len(kept)
            low, high = _percentiles(kept, confidence)
        out.append(TopicKappa(topic, len(rows), kappa, low, high, undefined))
    return out


# --- three or more sets ---------------------------------------------------------------------------

def fleiss_of(sets: Mapping[str, Mapping], *, scale: tuple[int, int], threshold: int) -> dict:
    """Fleiss' kappa (statsmodels) of the items every set labelled, on the grades and at the
    threshold."""
    shared = sorted(set.intersection(*(set(s) for s in sets.values())))
    low = scale[0]
    matrix = np.array([[s[i] - low for s in sets.values()] for i in shared], dtype=int)
    out = {"sets": list(sets), "n_items": len(shared), "kappa": None, "kappa_threshold": None,
           "threshold": threshold}
    if shared:
        out["kappa"] = fleiss_kappa(matrix, n_categories=scale[1] - low + 1)
        out["kappa_threshold"] = fleiss_kappa((matrix + low >= threshold).astype(int),
                                              n_categories=2)
    return out


def others_merged(sets: Mapping[str, Mapping], name: str, rule: str = DEFAULT_MERGE) -> dict:
    """Every other set's labels merged by ``rule``, item by item, over the items at least one
    other set labelled."""
    by_item: dict = {}
    for other, labels in sets.items():
        if other != name:
            for item, grade in labels.items():
                by_item.setdefault(item, []).append(grade)
    return {item: merge_labels(grades, rule) for item, grades in by_item.items()}

"""Two rankings of the same systems, from two label sets (each run scored by
:func:`cruxflow.evaluate` against each) or from two leaderboards, compared with Kendall's tau-b,
tau_AP, Spearman's rho and the overlap of the top k, each with a percentile bootstrap interval
over the topics (every system's per-topic scores resampled together: one draw of topics a
resample, the same draws for every statistic), and, where one side labels a subset of the other's
topics, each system's mean corrected by prediction-powered inference (:mod:`cruxflow.paper.ppi`).

The statistics are :mod:`cruxflow.metrics.stats`' (``kendall_tau``, ``tau_ap``,
``rank_correlation``, ``topic_bootstrap``), on the means rounded to 12 decimals (a tie stays a
tie whatever order a float sum took); the top-k overlap is defined here: the systems ranked in
the top k by each side (a system is in the top k when fewer than k systems score strictly
higher, so a tie at the k-th place takes every tied system in), and the overlap is the share
``|A & B| / max(|A|, |B|)``, ``|A & B| / k`` without ties.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.metrics.stats import (
    Interval,
    kendall_tau,
    rank_correlation,
    tau_ap,
    topic_bootstrap,
)
from cruxflow.paper.item_agreement import check_bootstrap_size, topic_order

DEFAULT_TOP = 5
# Means are compared to this many decimals: two systems with the same per-topic values in
# another topic order have means that differ in the last bits of a float (0.6 + 0.4 + 0.2 is
# not 0.2 + 0.4 + 0.6), which would break a true tie at random.
DECIMALS = 12


@dataclass
class Scores:
    """One side's scores of the systems under one measure: per topic where known
    (``per_topic``: system -> topic -> value, undefined values left out), else only each
    system's mean (``means``: a ``run<TAB>score`` leaderboard)."""

    name: str
    measure: str
    per_topic: dict[str, dict[str, float]] = field(default_factory=dict)
    means: dict[str, float] | None = None
    source: str = ""

    @property
    def systems(self) -> list[str]:
        return list(self.means if self.means is not None else self.per_topic)

    def mean(self, system: str) -> float | None:
        """The system's mean over its own topics (the leaderboard's, where only means)."""
        if self.means is not None:
            return self.means[system]
        values = list(self.per_topic[system].values())
        return math.fsum(values) / len(values) if values else None

    def to_json(self) -> dict:
        return {"name": self.name, "measure": self.measure, "source": self.source,
                "topics": {s: len(t) for s, t in self.per_topic.items()} or None,
                "means": {s: self.mean(s) for s in self.systems}}


def scores_from_runs(name: str, judgments, runs: Mapping[str, Mapping], measure: str, *,
                     options=None, source: str = "") -> tuple[Scores, dict]:
    """Each run's per-topic ``measure`` from :func:`cruxflow.evaluate` against ``judgments``
    (a :class:`cruxflow.Judgments`), the runs cut to the judged topics first (a run's topics
    without labels are left out and counted: the second value, run -> count)."""
    import cruxflow

    topics = judged_topics(judgments)
    out = Scores(name, measure, source=source)
    left: dict[str, int] = {}
    for system, run in runs.items():
        kept = {t: rows for t, rows in run.items() if t in topics}
        left[system] = len(run) - len(kept)
        frame = cruxflow.evaluate(kept, judgments, [measure], options=options)
        column = frame.columns[0]
        out.measure = str(column)
        out.per_topic[system] = {str(t): float(v) for t, v in frame[column].items()
                                 if not math.isnan(v)}
    return out, left


def judged_topics(judgments) -> set[str]:
    """The topics a :class:`cruxflow.Judgments` holds labels of."""
    topics = set(judgments.topics or ())
    for part in (judgments.ratings, judgments.relevance):
        if part is not None:
            topics |= set(part)
    if judgments.qrels is not None:
        topics |= set(getattr(judgments.qrels, "topics", ()) or ())
    return topics


# --- the statistics ---------------------------------------------------------------------------

def _top(values: np.ndarray, k: int) -> set[int]:
    return {i for i, v in enumerate(values) if (values > v).sum() < k}


def top_overlap(reference: Sequence[float], other: Sequence[float], k: int) -> float | None:
    """The share of the two top-k sets both hold (see the module's docstring); ``None`` with
    k at or beyond the number of systems (every system is in both) or NaN among the values."""
    a, b = np.asarray(reference, float), np.asarray(other, float)
    if len(a) <= k or np.isnan(a).any() or np.isnan(b).any():
        return None
    ta, tb = _top(a, k), _top(b, k)
    return len(ta & tb) / max(len(ta), len(tb))


def _spearman(a, b) -> float | None:
    return rank_correlation(list(a), list(b), "spearman").value


def _on_rounded(statistic):
    """``statistic`` of the two sides' means rounded to :data:`DECIMALS` decimals."""
    def rounded(a, b):
        return statistic(np.round(np.asarray(a, float), DECIMALS),
                         np.round(np.asarray(b, float), DECIMALS))
    return rounded


@dataclass
class Statistic:
    value: float | None
    interval: Interval

    def to_json(self) -> dict:
        i = self.interval
        return {"value": self.value, "ci_low": i.low, "ci_high": i.high,
                "resamples_undefined": i.undefined}


@dataclass
class RankComparison:
    """Two sides' rankings of the systems on the topics where both define every system's
    score (``topics``; the others counted by reason in ``left_out``); ``reference`` is the
    truth of tau_AP, of the top-k overlap's k and of PPI."""

    reference: str
    other: str
    measure: str
    systems: list[str]
    topics: list[str]
    left_out: dict[str, int]
    reference_means: dict[str, float]
    other_means: dict[str, float]
    tau: Statistic
    tau_ap: Statistic
    spearman: Statistic
    overlap: Statistic
    top: int
    ppi: dict = field(default_factory=dict)     # system -> PPIResult, or why none
    ppi_note: str = ""
    not_in_both: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict:
        i = self.tau.interval
        ppi = {s: (r if isinstance(r, str) else {k: (None if isinstance(v, float) and
                                                    math.isnan(v) else v)
                                                 for k, v in r.to_json().items()})
               for s, r in self.ppi.items()}
        return {"reference": self.reference, "other": self.other, "measure": self.measure,
                "n_systems": len(self.systems), "n_topics": len(self.topics),
                "topics": self.topics, "left_out": self.left_out,
                "systems_not_in_both": self.not_in_both,
                "means": {s: {"reference": self.reference_means[s],
                              "other": self.other_means[s]} for s in self.systems},
                "kendall_tau_b": self.tau.to_json(), "tau_ap": self.tau_ap.to_json(),
                "spearman": self.spearman.to_json(),
                "top_k_overlap": {"k": self.top, **self.overlap.to_json()},
                "bootstrap": {"resamples": i.resamples, "confidence": i.confidence,
                              "topics": i.topics, "method": i.describe() if i.resamples
                              else None},
                "ppi": ppi, "ppi_note": self.ppi_note or None}


LEFT_OUT = {"reference": "without a value of every system from {reference}",
            "other": "without a value of every system from {other}"}


def compare_rankings(reference: Scores, other: Scores, *, top: int = DEFAULT_TOP,
                     n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
                     ppi_alpha: float | None = 0.05, ppi_method: str = "ppi"
                     ) -> RankComparison:
    """The two rankings of the systems both sides score (see :class:`RankComparison`)."""
    systems = [s for s in reference.systems if s in set(other.systems)]
    not_in_both = {reference.name: [s for s in reference.systems if s not in systems],
                   other.name: [s for s in other.systems if s not in systems]}
    if len(systems) < 2:
        raise DataError(f"{reference.name} and {other.name} score {len(systems)} system(s) in "
                        "common: a ranking needs two")
    per_topic = reference.means is None and other.means is None
    topics: list[str] = []
    left = {"reference": 0, "other": 0}
    if per_topic:
        every = sorted(set().union(*(reference.per_topic[s] for s in systems),
                                   *(other.per_topic[s] for s in systems)), key=topic_order)
        for t in every:
            if not all(t in reference.per_topic[s] for s in systems):
                left["reference"] += 1
            elif not all(t in other.per_topic[s] for s in systems):
                left["other"] += 1
            else:
                topics.append(t)
        ref = np.array([[reference.per_topic[s][t] for s in systems] for t in topics],
                       dtype=float).reshape(len(topics), len(systems))
        est = np.array([[other.per_topic[s][t] for s in systems] for t in topics],
                       dtype=float).reshape(len(topics), len(systems))
        if not topics:
            raise DataError(f"no topic where {reference.name} and {other.name} both score "
                            "every system")
        resamples = n_resamples if len(systems) > 2 else 0
        check_bootstrap_size(resamples, len(topics), len(systems),
                             what="resamples x topics x systems")
    else:   # only means: the statistics without an interval
        ref = np.array([[reference.mean(s) for s in systems]], dtype=float)
        est = np.array([[other.mean(s) for s in systems]], dtype=float)
        resamples = 0
    k = min(top, len(systems) - 1) if len(systems) > 1 else top
    # one seed: every statistic's resamples are the same draws of topics
    boot = {"n_resamples": resamples, "confidence": confidence, "seed": seed}
    tables = [ref, est]
    ref_means, est_means = ref.mean(axis=0), est.mean(axis=0)
    stats_ = {}
    for key, statistic in (("tau", kendall_tau), ("tau_ap", tau_ap), ("spearman", _spearman),
                           ("overlap", lambda a, b: top_overlap(a, b, k))):
        rounded = _on_rounded(statistic)
        stats_[key] = Statistic(rounded(ref_means, est_means),
                                topic_bootstrap(tables, rounded, **boot))
    out = RankComparison(
        reference.name, other.name, reference.measure, systems, topics,
        {LEFT_OUT[key].format(reference=reference.name, other=other.name): n
         for key, n in left.items()},
        dict(zip(systems, ref_means.tolist(), strict=True)),
        dict(zip(systems, est_means.tolist(), strict=True)),
        stats_["tau"], stats_["tau_ap"], stats_["spearman"], stats_["overlap"], k,
        not_in_both=not_in_both)
    if per_topic and ppi_alpha is not None:
        _ppi(out, reference, other, ppi_alpha, ppi_method)
    return out


def _ppi(out: RankComparison, reference: Scores, other: Scores, alpha: float,
         method: str) -> None:
    """Each system's mean over the other side's topics, corrected by the reference's values on
    its own topics (the labelled ones), where those are a strict subset of the other's."""
    from cruxflow.paper.ppi import ppi_mean

    ref_topics = set().union(*(reference.per_topic[s] for s in out.systems))
    other_topics = set().union(*(other.per_topic[s] for s in out.systems))
    if not ref_topics < other_topics:
        out.ppi_note = (f"no PPI: the topics of {reference.name} are not a strict subset of "
                        f"those of {other.name} ({len(ref_topics)} and {len(other_topics)} "
                        f"topics, {len(ref_topics - other_topics)} only in {reference.name}): "
                        "a judge adds nothing where the reference scores every topic it does")
        return
    out.ppi_note = (f"PPI: {other.name} on its {len(other_topics)} topics, corrected by "
                    f"{reference.source or reference.name} on its {len(ref_topics)} ({method}, "
                    f"{1 - alpha:.0%} intervals)")
    for system in out.systems:
        try:
            out.ppi[system] = ppi_mean(other.per_topic[system], reference.per_topic[system],
                                       alpha=alpha, method=method)
        except DataError as exc:
            out.ppi[system] = exc.reason
        except ImportError as exc:    # ppi-python is the 'judge' extra
            out.ppi_note = f"no PPI: {exc}"
            out.ppi = {}
            return

"""Can the judge be trusted? The judge's 0-5 ratings against one or more annotators' ratings of
the same (passage, sub-question) pairs, next to the annotators' agreement with each other (the
ceiling), and, given runs, the system rankings the two produce (docs/judge-trust.md).

Item level, for every pair of raters (the judge and each annotator, the judge and the
annotators' majority, every two annotators), over the pairs both rated: exact agreement,
Cohen's kappa of the labels binarized at eta and linearly weighted on the 0-5 scale
(scikit-learn), Krippendorff's alpha at the ordinal level (``krippendorff``), the confusion
matrix and the precision and recall of "answerable at eta" taking the first rater as the truth.

System level: each run's ``Cov@k`` (Eq. 3 over the answerable questions) and
``alpha_nDCG_crux@k`` (Eq. 4, ideal over Z*) from the judge's and from the humans' ratings on
the topics the humans labelled, both through :mod:`cruxflow.metrics.crux`; Kendall's tau and
Yilmaz et al.'s tau_AP between the two rankings with percentile bootstrap intervals over topics;
and each run's Cov@k corrected by PPI (:mod:`cruxflow.paper.ppi`).

Undefined statistics (a constant column, nothing shared) are ``None`` (printed "undefined"),
never NaN; each carries the number of items it rests on.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import JudgeRatings
from cruxflow.data.model import RATING_UNRATED
from cruxflow.metrics.crux import alpha_ndcg, answerable_questions, coverage, select_required
from cruxflow.metrics.stats import cohen_kappa, system_correlation

JUDGE, MAJORITY = "judge", "(majority)"
FEW = 30            # below this many items a statistic gets a warning
Item = tuple[str, str, int]   # (topic, passage, question)


# --- the ratings, item by item ------------------------------------------------------------------

def judge_items(judge: JudgeRatings) -> dict[Item, int]:
    """The judge's ratings by (topic, passage, question); unrated (-1) values are left out."""
    return {(t, p, q): r for (t, p), rs in judge.ratings.items() for q, r in enumerate(rs)
            if r != RATING_UNRATED}


def human_items(frame: pd.DataFrame) -> dict[str, dict[Item, int]]:
    """Each annotator's ratings by item, from the frame of
    :func:`cruxflow.paper.human_labels.read_passage_label_files`."""
    out: dict[str, dict[Item, int]] = {}
    for t, p, q, a, r in frame[["topic_id", "passage_id", "question", "annotator", "rating"]] \
            .itertuples(index=False):
        out.setdefault(a, {})[(t, p, int(q))] = int(r)
    return out


def majority(humans: Mapping[str, Mapping[Item, int]]) -> dict[Item, int]:
    """Per item, the annotators' median rating, the lower one of the two middle ratings for an
    even count (a 2-4 split counts as 2: unanswerable at eta 3, the cautious side)."""
    by_item: dict[Item, list[int]] = {}
    for ratings in humans.values():
        for item, r in ratings.items():
            by_item.setdefault(item, []).append(r)
    return {item: sorted(rs)[(len(rs) - 1) // 2] for item, rs in by_item.items()}


def read_human_ratings(specs: Sequence[str]) -> pd.DataFrame:
    """Annotators' 0-5 ratings from ``[NAME=]PATH`` items: the labeling tool's Task 2 exports
    and our T2 files (``cruxflow annotate --export``) through
    :func:`~cruxflow.paper.human_labels.read_passage_label_files`, and files in any judge
    ratings layout (one annotator each: NAME, else the file's stem), -1 values left out."""
    from cruxflow.data.ingest.crux_common import ratings_layout, read_ratings
    from cruxflow.data.io import iter_jsonl
    from cruxflow.paper.human_labels import _label_files, read_passage_label_files

    label_specs, frames = [], []
    for spec in specs:
        for name, path in _label_files([spec]):
            first = next((obj for _, obj in iter_jsonl(path)), None)
            layout = None if first is None else ratings_layout(first)
            # our T2 export has topic_id and passage_id too, but one rating, not a list; the
            # labeling tool's exports name their annotators by their folders
            if layout is None or layout[3] not in first or layout[0] == "labeling-tool":
                label_specs.append(f"{name}={path}" if name else str(path))
                continue
            rated = read_ratings(path)
            who = name or path.stem
            frames.append(pd.DataFrame(
                [{"topic_id": t, "passage_id": p, "question": q, "annotator": who,
                  "rating": r, "line": int(rated.where[(t, p)]["record"].split()[-1]),
                  "file": str(path)}
                 for (t, p), rs in rated.ratings.items() for q, r in enumerate(rs)
                 if r != RATING_UNRATED]))
    if label_specs:
        frames.append(read_passage_label_files(label_specs)[0])
    frame = pd.concat(frames, ignore_index=True)
    dup = frame.duplicated(["topic_id", "passage_id", "question", "annotator"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(f"annotator {row['annotator']!r} rated topic {row['topic_id']!r} passage "
                        f"{row['passage_id']!r} question {row['question']} twice (two files "
                        "with one name? give NAME=PATH)", path=row["file"],
                        record=f"line {row['line']}")
    return frame


# --- item-level statistics ----------------------------------------------------------------------

def _weighted_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(cohen_kappa_score(a, b, weights="linear", labels=list(range(6))))
    return None if math.isnan(kappa) else kappa


def _krippendorff(a: Sequence[int], b: Sequence[int]) -> float | None:
    with extra(__name__, "judge"):
        import krippendorff

    if not len(a) or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(krippendorff.alpha(reliability_data=np.array([a, b], dtype=float),
                                         level_of_measurement="ordinal",
                                         value_domain=list(range(6))))
    return None if math.isnan(value) else value


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass
class Agreement:
    """Two raters over the items both rated; ``reference`` is taken as the truth for
    precision and recall ("answerable at eta")."""

    reference: str
    other: str
    kind: str                 # "judge" or "ceiling" (two annotators)
    n: int
    exact: float | None
    kappa: float | None       # Cohen's kappa, binary at eta
    kappa_linear: float | None
    alpha_ordinal: float | None
    precision: float | None
    recall: float | None
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def warning(self) -> str | None:
        if self.n == 0:
            return "no shared items"
        return f"only {self.n} items (< {FEW})" if self.n < FEW else None

    def to_json(self) -> dict:
        out = dict(self.__dict__)
        out["confusion"] = {"labels": ["answerable", "unanswerable"],
                            "rows_reference_columns_other": [[self.tp, self.fn],
                                                             [self.fp, self.tn]]}
        out["warning"] = self.warning
        return out


def agree(reference: Mapping[Item, int], other: Mapping[Item, int], *, eta: int = 3,
          names: tuple[str, str] = ("reference", "other"), kind: str = "judge") -> Agreement:
    """The statistics of two raters over the items both rated."""
    shared = sorted(set(reference) & set(other))
    a = [reference[i] for i in shared]
    b = [other[i] for i in shared]
    ba = [int(r >= eta) for r in a]
    bb = [int(r >= eta) for r in b]
    tp = sum(x and y for x, y in zip(ba, bb, strict=True))
    fp = sum(not x and y for x, y in zip(ba, bb, strict=True))
    fn = sum(x and not y for x, y in zip(ba, bb, strict=True))
    tn = len(shared) - tp - fp - fn
    return Agreement(names[0], names[1], kind, len(shared),
                     _ratio(sum(x == y for x, y in zip(a, b, strict=True)), len(shared)),
                     cohen_kappa(ba, bb, labels=[0, 1]) if shared else None,
                     _weighted_kappa(a, b), _krippendorff(a, b),
                     _ratio(tp, tp + fp), _ratio(tp, tp + fn), tp, fp, fn, tn)


def item_agreement(judge: Mapping[Item, int], humans: Mapping[str, Mapping[Item, int]],
                   eta: int = 3) -> list[Agreement]:
    """The judge against each annotator and against their majority, then every two annotators
    (the ceiling); the annotator is the reference (the truth) in the judge's rows."""
    rows = [agree(h, judge, eta=eta, names=(name, JUDGE)) for name, h in humans.items()]
    if len(humans) > 1:
        rows.append(agree(majority(humans), judge, eta=eta, names=(MAJORITY, JUDGE)))
    names = list(humans)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            rows.append(agree(humans[x], humans[y], eta=eta, names=(x, y), kind="ceiling"))
    return rows


# --- system level -------------------------------------------------------------------------------

def tau_ap(reference: Sequence[float], estimate: Sequence[float]) -> float | None:
    """Yilmaz, Aslam and Robertson's AP correlation (SIGIR 2008) of ``estimate``'s ranking
    against ``reference``'s: systems ordered by ``estimate`` (higher first);
    tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1, with C(i) the number of systems
    above rank i that ``reference`` also puts above the system at rank i. Ties in either list
    are broken by position; ``None`` with fewer than two systems."""
    n = len(reference)
    if n != len(estimate):
        raise ValueError(f"{n} reference values against {len(estimate)}")
    if n < 2:
        return None
    order = sorted(range(n), key=lambda s: -estimate[s])
    total = 0.0
    for i in range(1, n):
        s = order[i]
        total += sum(reference[order[j]] > reference[s] for j in range(i)) / i
    return 2 * total / (n - 1) - 1


def _matrices(items: Mapping[Item, int], n_questions: Mapping[str, int]
              ) -> dict[str, dict[str, list[int]]]:
    """Per topic, passage -> one rating per question (0 where the rater gave none: a passage
    nobody rated for a question answers nothing, as unjudged passages do in CRUX)."""
    out: dict[str, dict[str, list[int]]] = {}
    for (t, p, q), r in items.items():
        row = out.setdefault(t, {}).setdefault(p, [0] * n_questions[t])
        row[q] = r
    return out


def run_scores(matrices: Mapping[str, Mapping[str, Sequence[int]]],
               runs: Mapping[str, Mapping[str, Sequence[str]]], topics: Sequence[str],
               n_questions: Mapping[str, int], k: int = 10, eta: int = 3) -> pd.DataFrame:
    """``topic, system, Cov@k, alpha_nDCG_crux@k`` of each run's top k on each topic, from one
    rater's ratings: questions are those the rater finds answerable (Eq. 3), the ideal of
    Eq. 4 is the rater's own required set Z* (greedy, :func:`select_required`)."""
    rows = []
    for t in topics:
        matrix = matrices.get(t, {})
        zero = [0] * n_questions[t]
        questions = answerable_questions(matrix, n_questions[t], eta) if matrix else []
        oracle = [matrix[p] for p in select_required(matrix, questions, eta)]
        for system, run in runs.items():
            context = [matrix.get(p, zero) for p in list(run.get(t, []))[:k]]
            cov = coverage(context, questions, eta)
            ndcg = alpha_ndcg(context, oracle, questions, eta) if oracle else math.nan
            rows.append({"topic": t, "system": system, f"Cov@{k}": cov,
                         f"alpha_nDCG_crux@{k}": ndcg})
    return pd.DataFrame(rows)


@dataclass
class RankAgreement:
    metric: str
    n_systems: int
    n_topics: int
    tau: float | None
    tau_low: float | None
    tau_high: float | None
    tau_ap: float | None
    tau_ap_low: float | None
    tau_ap_high: float | None


def _tau_ap_interval(judge: pd.DataFrame, human: pd.DataFrame, n_resamples: int, seed: int
                     ) -> tuple[float | None, float | None]:
    """Percentile bootstrap of tau_AP over topics (judge and human tables: topics x systems)."""
    if judge.shape[0] < 2 or judge.shape[1] < 3 or n_resamples < 1:
        return None, None
    rng = np.random.default_rng(seed)
    jt, ht = judge.to_numpy(float), human.to_numpy(float)
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(n_resamples):
            idx = rng.integers(0, jt.shape[0], jt.shape[0])
            jm, hm = np.nanmean(jt[idx], axis=0), np.nanmean(ht[idx], axis=0)
            if np.isnan(jm).any() or np.isnan(hm).any():
                continue
            values.append(tau_ap(list(hm), list(jm)))
    if not values:
        return None, None
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def rank_agreement(judge: pd.DataFrame, human: pd.DataFrame, metric: str,
                   n_resamples: int = 1000, seed: int = 0) -> RankAgreement:
    """Kendall's tau and tau_AP (humans as the reference) between the systems' means of
    ``metric`` from the judge and from the humans, on the topics both scored."""
    both = judge.merge(human, on=["topic", "system"], suffixes=("_judge", "_human"))
    both = both.dropna(subset=[f"{metric}_judge", f"{metric}_human"])
    corr = system_correlation(both, f"{metric}_judge", f"{metric}_human", "kendall",
                              n_resamples=n_resamples, seed=seed)
    means = both.groupby("system")[[f"{metric}_judge", f"{metric}_human"]].mean()
    ap = tau_ap(list(means[f"{metric}_human"]), list(means[f"{metric}_judge"]))
    tables = [both.pivot_table(index="topic", columns="system", values=f"{metric}_{who}")
              for who in ("judge", "human")]
    low, high = _tau_ap_interval(*tables, n_resamples, seed)
    return RankAgreement(metric, int(both["system"].nunique()), int(both["topic"].nunique()),
                         corr.value, corr.low, corr.high, ap, low, high)


# --- the whole report ---------------------------------------------------------------------------

@dataclass
class MetaEval:
    items: list[Agreement]
    eta: int
    counts: dict = field(default_factory=dict)
    judge_scores: pd.DataFrame | None = None
    human_scores: pd.DataFrame | None = None
    ranks: list[RankAgreement] = field(default_factory=list)
    ppi: dict = field(default_factory=dict)      # system -> PPIResult or the reason it has none

    def to_json(self) -> dict:
        out = {"eta": self.eta, "counts": self.counts,
               "items": [a.to_json() for a in self.items]}
        if self.judge_scores is not None:
            out["systems"] = [r.__dict__ for r in self.ranks]
            means = []
            for who, frame in (("judge", self.judge_scores), ("human", self.human_scores)):
                m = frame.drop(columns="topic").groupby("system").mean()
                means += [{"source": who, "system": s, **{c: _none(v) for c, v in row.items()}}
                          for s, row in m.iterrows()]
            out["system_means"] = means
            out["ppi"] = {s: (r if isinstance(r, str) else {k: _none(v) for k, v in
                                                            r.to_json().items()})
                          for s, r in self.ppi.items()}
        return out


def _none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def meta_eval(judge: JudgeRatings, human_frame: pd.DataFrame, *, eta: int = 3,
              runs: Mapping[str, Mapping[str, Sequence[str]]] | None = None, k: int = 10,
              alpha: float = 0.05, n_resamples: int = 1000, seed: int = 0) -> MetaEval:
    """Everything ``cruxflow meta-eval`` reports (see the module's docstring)."""
    n_questions = judge.n_questions()
    for row in human_frame.itertuples(index=False):
        if row.topic_id in n_questions and row.question >= n_questions[row.topic_id]:
            raise DataError(f"question {row.question}, but the judge rated "
                            f"{n_questions[row.topic_id]} questions of topic {row.topic_id!r}",
                            path=row.file if hasattr(row, "file") else None,
                            record=f"line {row.line}" if hasattr(row, "line") else None,
                            field="question")
    j = judge_items(judge)
    humans = human_items(human_frame)
    counts = {"judge_items": len(j),
              "human_labels": {a: len(h) for a, h in humans.items()},
              "labels_of_pairs_the_judge_did_not_rate": {
                  a: sum(i not in j for i in h) for a, h in humans.items()}}
    if not any(set(h) & set(j) for h in humans.values()):
        raise DataError("no (passage, question) pair was rated by both the judge and an "
                        "annotator: are the judge's topic and passage ids those of the labels?")
    result = MetaEval(item_agreement(j, humans, eta), eta, counts)
    if not runs:
        return result
    from cruxflow.paper.ppi import ppi_mean

    labelled = sorted({t for t, _, _ in majority(humans)})
    judged = sorted({t for t, _ in judge.ratings} & {t for run in runs.values() for t in run})
    result.judge_scores = run_scores(_matrices(j, n_questions), runs, judged, n_questions, k,
                                     eta)
    human_matrices = _matrices({i: r for i, r in majority(humans).items()
                                if i[0] in n_questions}, n_questions)
    result.human_scores = run_scores(human_matrices, runs,
                                     [t for t in labelled if t in n_questions], n_questions, k,
                                     eta)
    for metric in (f"Cov@{k}", f"alpha_nDCG_crux@{k}"):
        result.ranks.append(rank_agreement(result.judge_scores, result.human_scores, metric,
                                           n_resamples, seed))
    cov = f"Cov@{k}"
    for system in runs:
        jv = _per_topic(result.judge_scores, system, cov)
        hv = {t: v for t, v in _per_topic(result.human_scores, system, cov).items() if t in jv}
        try:
            result.ppi[system] = ppi_mean(jv, hv, alpha=alpha)
        except DataError as exc:
            result.ppi[system] = exc.reason
    result.counts["topics_judged"] = len(judged)
    result.counts["topics_labelled"] = len(labelled)
    return result



def _per_topic(scores: pd.DataFrame, system: str, metric: str) -> dict[str, float]:
    """A system's defined per-topic values of ``metric``."""
    sel = scores[scores["system"] == system]
    return {t: float(v) for t, v in zip(sel["topic"], sel[metric], strict=True)
            if not math.isnan(v)}

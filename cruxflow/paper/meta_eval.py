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
the topics the humans labelled, both through the engine (:mod:`cruxflow.metrics.scorer`); the
runs' means over the labelled topics where both are defined for every run (each topic left out
counted with its reason), Kendall's tau and tau_AP between the two rankings with percentile
bootstrap intervals over those topics (:mod:`cruxflow.metrics.stats`, the one home of every
kappa, tau, tau_AP and bootstrap); and each run's Cov@k corrected by PPI
(:mod:`cruxflow.paper.ppi`).

Undefined statistics (a constant column, nothing shared, every run tied) are ``None`` (printed
"undefined"), never NaN and never -1; each carries the number of items it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import JudgeRatings
from cruxflow.data.limits import check_bootstrap, check_count
from cruxflow.data.model import RATING_UNRATED
from cruxflow.metrics.inputs import Judgments
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.stats import Interval, cohen_kappa, krippendorff_alpha, rank_agreement

JUDGE, MAJORITY = "judge", "(majority)"
GRADES = list(range(6))   # the 0-5 answerability scale
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
    from cruxflow.paper.human_labels import label_files, read_passage_label_files

    label_specs, frames = [], []
    for spec in specs:
        for name, path in label_files([spec]):
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
                     cohen_kappa(a, b, labels=GRADES, weights="linear"),
                     krippendorff_alpha(a, b, level="ordinal", values=GRADES),
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
    topics = list(topics)
    rated = {t: m for t, m in matrices.items() if m}
    cov_name, ndcg_name = f"Cov@{k}", f"alpha_nDCG_crux@{k}"
    if not rated:
        return pd.DataFrame([{"topic": t, "system": system, cov_name: math.nan,
                              ndcg_name: math.nan} for t in topics for system in runs])
    # the engine on this rater's ratings: Q and Z* are the rater's own
    scorer = ContextScorer(Judgments(ratings=rated, topics=topics, source="rater",
                                     checked=True), options=MetricOptions(eta=eta))
    rows = []
    cases = [(t, system) for t in topics for system in runs]
    values = scorer.context_values([(t, list(runs[system].get(t, []))[:k])
                                    for t, system in cases], [cov_name, ndcg_name])
    for i, (t, system) in enumerate(cases):
        rows.append({"topic": t, "system": system, cov_name: float(values[cov_name][i]),
                     ndcg_name: float(values[ndcg_name][i])})
    return pd.DataFrame(rows)


# why a labelled topic is left out of a system-level comparison, in the order checked
LEFT_OUT = {
    "not_judged": "not rated by the judge or in no run",
    "no_human_answerable": "no question the humans find answerable",
    "no_judge_answerable": "no question the judge finds answerable",
}


@dataclass
class SystemLevel:
    """The runs ranked by one metric from the judge's ratings and from the humans', on the
    topics where both are defined for every run (``topics``; each labelled topic left out is
    counted under its reason in ``left_out``, :data:`LEFT_OUT`): the runs' means there,
    Kendall's tau-b and tau_AP between the two rankings (the humans' as the reference), each
    with its bootstrap interval over those topics (:func:`cruxflow.metrics.stats.
    rank_agreement`)."""

    metric: str
    systems: list[str]
    topics: list[str]
    topics_labelled: int
    left_out: dict[str, int]
    judge_means: dict[str, float]
    human_means: dict[str, float]
    tau: float | None
    tau_ap: float | None
    tau_interval: Interval
    tau_ap_interval: Interval

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    def to_json(self) -> dict:
        return {"metric": self.metric, "n_systems": self.n_systems, "n_topics": self.n_topics,
                "topics": self.topics, "topics_labelled": self.topics_labelled,
                "left_out": self.left_out,
                "means": {s: {"judge": _none(self.judge_means[s]),
                              "human": _none(self.human_means[s])} for s in self.systems},
                "tau": self.tau, "tau_low": self.tau_interval.low,
                "tau_high": self.tau_interval.high, "tau_ap": self.tau_ap,
                "tau_ap_low": self.tau_ap_interval.low,
                "tau_ap_high": self.tau_ap_interval.high,
                "bootstrap": {"resamples": self.tau_interval.resamples,
                              "confidence": self.tau_interval.confidence,
                              "tau_undefined": self.tau_interval.undefined,
                              "tau_ap_undefined": self.tau_ap_interval.undefined}}


def system_level(judge: pd.DataFrame, human: pd.DataFrame, metric: str,
                 labelled: Sequence[str], n_resamples: int = 1000, seed: int = 0
                 ) -> SystemLevel:
    """One metric's :class:`SystemLevel` from the judge's and the humans' per-topic scores
    (:func:`run_scores` frames) over the ``labelled`` topics."""
    tables = {who: frame.pivot_table(index="topic", columns="system", values=metric,
                                     aggfunc="mean", dropna=False)
              for who, frame in (("judge", judge), ("human", human))}
    systems = sorted(set(judge["system"]) | set(human["system"]))
    left_out = dict.fromkeys(LEFT_OUT, 0)
    topics = []
    for t in sorted(labelled):
        j = tables["judge"].loc[t] if t in tables["judge"].index else None
        h = tables["human"].loc[t] if t in tables["human"].index else None
        if j is None or h is None:
            left_out["not_judged"] += 1
        elif h.reindex(systems).isna().any():
            left_out["no_human_answerable"] += 1
        elif j.reindex(systems).isna().any():
            left_out["no_judge_answerable"] += 1
        else:
            topics.append(t)
    jt = tables["judge"].reindex(index=topics, columns=systems).to_numpy(float)
    ht = tables["human"].reindex(index=topics, columns=systems).to_numpy(float)
    check_count("bootstrap", n_resamples, "n_resamples")
    check_bootstrap(n_resamples, len(topics), "n_resamples")   # before the draws are made
    agreement = rank_agreement(ht, jt, n_resamples=n_resamples, seed=seed)
    return SystemLevel(metric, systems, topics, len(labelled), left_out,
                       dict(zip(systems, agreement.estimate_means, strict=True)),
                       dict(zip(systems, agreement.reference_means, strict=True)),
                       agreement.tau, agreement.tau_ap, agreement.tau_interval,
                       agreement.tau_ap_interval)


# --- the whole report ---------------------------------------------------------------------------

@dataclass
class MetaEval:
    items: list[Agreement]
    eta: int
    counts: dict = field(default_factory=dict)
    judge_scores: pd.DataFrame | None = None
    human_scores: pd.DataFrame | None = None
    ranks: list[SystemLevel] = field(default_factory=list)
    ppi: dict = field(default_factory=dict)      # system -> PPIResult or the reason it has none

    def to_json(self) -> dict:
        out = {"eta": self.eta, "counts": self.counts,
               "items": [a.to_json() for a in self.items]}
        if self.judge_scores is not None:
            out["systems"] = [r.to_json() for r in self.ranks]
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
    check_count("bootstrap", n_resamples, "n_resamples")
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
        result.ranks.append(system_level(result.judge_scores, result.human_scores, metric,
                                         labelled, n_resamples, seed))
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

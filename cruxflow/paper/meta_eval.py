"""Can a judge be trusted? Any label sets compared item by item and, given runs or
leaderboards, system by system: what ``cruxflow agreement`` reports (docs/judge-trust.md).

* **Item level** (:mod:`cruxflow.paper.item_agreement`): every two label sets of one kind over
  the items both labelled; a set of several annotators is compared through its merged labels
  and through each annotator's own (two annotators of one set: the ``ceiling`` rows), never an
  annotator against the set it is merged into. With three or more single raters (annotators
  and one-annotator sets) of one kind, Fleiss' kappa over the items all of them labelled and
  each against the others' labels merged by the one rule.
* **System level** (:mod:`cruxflow.paper.system_agreement`): each run scored by
  :func:`cruxflow.evaluate` against each label set (ratings and graded diversity qrels as
  answerability ratings, TREC qrels as relevance), or two or more leaderboards
  (:mod:`cruxflow.paper.leaderboards`); every two sides' rankings compared with intervals,
  the earlier side the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cruxflow.data.errors import DataError
from cruxflow.data.merge import DEFAULT_MERGE, describe
from cruxflow.data.names import check_unique
from cruxflow.paper.item_agreement import (
    PairAgreement,
    check_bootstrap_size,
    fleiss_of,
    others_merged,
    pair_agreement,
)
from cruxflow.paper.label_sets import LabelSet
from cruxflow.paper.system_agreement import (
    RankComparison,
    Scores,
    compare_rankings,
    scores_from_runs,
)

CEILING = "ceiling"
DEFAULT_MEASURE = {"ratings": "Cov@10", "qrels": "nDCG@10"}


@dataclass
class Rater:
    """What an item-level row compares: a label set's (merged) labels or one annotator's."""

    name: str
    kind: str
    labels: dict
    scale: tuple[int, int]
    set_name: str          # the set it belongs to (its own name for a set)
    leaf: bool             # one rater's labels: an annotator, or a set of one annotator


def raters(sets: Sequence[LabelSet]) -> list[Rater]:
    """Each set's annotators (where it has several), then the set; names checked unique."""
    out = []
    for s in sets:
        if s.several:
            out += [Rater(a, s.kind, labels, s.scale, s.name, True)
                    for a, labels in s.annotators.items()]
        out.append(Rater(s.name, s.kind, s.labels, s.scale, s.name, not s.several))
    check_unique([(r.name, f"{r.set_name} ({', '.join(_files(sets, r.set_name))})")
                  for r in out], "label sets or annotators")
    return out


def _files(sets: Sequence[LabelSet], name: str) -> list[str]:
    return next(s.files for s in sets if s.name == name)


def default_threshold(kind: str, eta: int) -> int:
    """Where a grade counts as positive unless told: eta for answerability ratings, 1 for
    any other grades (trec_eval's relevant)."""
    return eta if kind == "ratings" else 1


@dataclass
class AgreementResult:
    sets: list[LabelSet]
    merge: str
    pairs: list[PairAgreement] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)       # pairs of two kinds
    fleiss: list[dict] = field(default_factory=list)
    against_others: list[PairAgreement] = field(default_factory=list)
    scores: list[Scores] = field(default_factory=list)      # each side, each measure
    systems: list[RankComparison] = field(default_factory=list)
    runs_left_out: dict = field(default_factory=dict)      # set -> run -> topics unlabelled

    def to_json(self) -> dict:
        return {"merge": self.merge, "merge_rule": describe(self.merge),
                "label_sets": {s.name: s.to_json() for s in self.sets},
                "pairs": [p.to_json() for p in self.pairs],
                "pairs_of_two_kinds": self.skipped,
                "fleiss": self.fleiss,
                "against_others": [p.to_json() for p in self.against_others],
                "scores": [s.to_json() for s in self.scores],
                "systems": [r.to_json() for r in self.systems],
                "run_topics_without_labels": self.runs_left_out}


def item_level(sets: Sequence[LabelSet], *, threshold: int | None = None, eta: int = 3,
               merge: str = DEFAULT_MERGE, n_resamples: int = 1000, confidence: float = 0.95,
               seed: int = 0) -> AgreementResult:
    """Every pair of raters (see the module's docstring)."""
    result = AgreementResult(list(sets), merge)
    units = raters(sets)
    check_bootstrap_size(n_resamples, max((len(r.labels) for r in units), default=1),
                         max(len(units) - 1, 1), what="resamples x items x pairs")
    for i, x in enumerate(units):
        for y in units[i + 1:]:
            if x.set_name == y.set_name and not (x.leaf and y.leaf):
                continue            # an annotator against the labels merged from its own
            if x.kind != y.kind:
                result.skipped.append(f"{x.name} ({x.kind}) and {y.name} ({y.kind}): no item "
                                      "in common")
                continue
            result.pairs.append(_pair(x, y, threshold, eta, n_resamples, confidence, seed,
                                      CEILING if x.set_name == y.set_name else ""))
    leaves = [u for u in units if u.leaf]
    for kind in dict.fromkeys(u.kind for u in leaves):
        group = [u for u in leaves if u.kind == kind]
        if len(group) < 3:
            continue
        scale = (min(u.scale[0] for u in group), max(u.scale[1] for u in group))
        t = default_threshold(kind, eta) if threshold is None else threshold
        labels = {u.name: u.labels for u in group}
        result.fleiss.append({"kind": kind, **fleiss_of(labels, scale=scale, threshold=t)})
        for u in group:
            others = Rater(f"(others, {merge})", kind, others_merged(labels, u.name, merge),
                           scale, "", False)
            result.against_others.append(_pair(others, u, threshold, eta, n_resamples,
                                               confidence, seed, "against the others"))
    return result


def _pair(x: Rater, y: Rater, threshold, eta, n_resamples, confidence, seed,
          note) -> PairAgreement:
    scale = (min(x.scale[0], y.scale[0]), max(x.scale[1], y.scale[1]))
    t = default_threshold(x.kind, eta) if threshold is None else threshold
    return pair_agreement(x.labels, y.labels, names=(x.name, y.name), scale=scale,
                          threshold=t, n_resamples=n_resamples, confidence=confidence,
                          seed=seed, note=note)


# --- system level -------------------------------------------------------------------------------

def judgments_of(label_set: LabelSet):
    """A label set as :class:`cruxflow.Judgments`: answerability ratings and graded diversity
    qrels as ratings (a question or subtopic without a label: -1, unrated), TREC qrels as
    relevance."""
    import cruxflow

    if label_set.kind == "ratings":
        width: dict[str, int] = {}
        for t, _, q in label_set.labels:
            width[t] = max(width.get(t, 0), q + 1)
        ratings: dict[str, dict[str, list[int]]] = {}
        for (t, p, q), r in label_set.labels.items():
            ratings.setdefault(t, {}).setdefault(p, [-1] * width[t])[q] = r
        return cruxflow.Judgments(ratings=ratings, source=label_set.name)
    if label_set.kind == "qrels" and len(next(iter(label_set.labels))) == 3:
        import pandas as pd

        frame = pd.DataFrame([(t, s, d, g) for (t, s, d), g in label_set.labels.items()],
                             columns=["query_id", "iteration", "doc_id", "relevance"])
        return cruxflow.Judgments(ratings=frame, source=label_set.name)
    if label_set.kind == "qrels":
        relevance: dict[str, dict[str, int]] = {}
        for (t, d), g in label_set.labels.items():
            relevance.setdefault(t, {})[d] = g
        return cruxflow.Judgments(relevance=relevance, source=label_set.name)
    raise DataError(f"label set {label_set.name}: {label_set.kind} score no run (the system "
                    "level needs answerability ratings or qrels)")


def measures_for(sets: Sequence[LabelSet], measures: Sequence[str] | None) -> list[str]:
    """The measures asked for, else the default of the sets' kind (Cov@10 for ratings,
    nDCG@10 for qrels; nDCG@10 where the kinds differ)."""
    if measures:
        return list(measures)
    kinds = {s.kind for s in sets}
    return [DEFAULT_MEASURE[kinds.pop()] if len(kinds) == 1 and kinds <= set(DEFAULT_MEASURE)
            else DEFAULT_MEASURE["qrels"]]


def system_level(result: AgreementResult, runs: Mapping[str, Mapping], *,
                 measures: Sequence[str] | None = None, options=None, top: int = 5,
                 n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
                 ppi_alpha: float | None = 0.05, ppi_method: str = "ppi") -> None:
    """Every run scored against every label set by each measure; every two sets' rankings
    compared (added to ``result.systems``)."""
    judgments = {s.name: judgments_of(s) for s in result.sets}
    for measure in measures_for(result.sets, measures):
        sides = []
        for s in result.sets:
            scores, left = scores_from_runs(s.name, judgments[s.name], runs, measure,
                                            options=options)
            scores.source = f"{s.name}, {describe(s.merge)}" if s.several else s.name
            result.runs_left_out.setdefault(s.name, left)
            sides.append(scores)
        compare_sides(result, sides, top=top, n_resamples=n_resamples, confidence=confidence,
                      seed=seed, ppi_alpha=ppi_alpha, ppi_method=ppi_method)


def compare_sides(result: AgreementResult, sides: Sequence[Scores], **kwargs) -> None:
    """Every two sides' rankings (the earlier the reference), added to ``result.systems``."""
    result.scores += sides
    for i, a in enumerate(sides):
        for b in sides[i + 1:]:
            result.systems.append(compare_rankings(a, b, **kwargs))

"""The CRUX authors' evaluation script, reproduced: ``cruxflow crux-eval``.

DylanJoo/crux ``crux/evaluation/rac_eval.py`` takes a TREC run, the diversity qrels
(``qrels/div_qrels-tau3.txt``) and the judge's ratings (one file or the ``judge/`` folder) and
prints four means over topics. The semantics, read from that script and the loaders it calls
(``crux/tools/generic/ir_utils.py``), and kept here:

* the run keeps the lines whose **rank column** is <= k (10), in file order; a topic with no
  such line is not in the run;
* ``P@10`` and ``nDCG@10`` come from ir_measures (pytrec_eval) over the diversity qrels read
  as binary qrels (a passage is relevant when one of its lines has relevance >= 1); a topic
  without such a line is not evaluated. pytrec_eval orders the kept lines by score and breaks
  ties by passage id, descending;
* ``alpha_nDCG@10`` comes from ir_measures (ndeval) over the diversity qrels (subtopic in the
  iteration column); ndeval breaks score ties by passage id, ascending, and evaluates the
  topics of the qrels;
* ``Cov@10`` is the share of a topic's questions answered (rating >= eta = 3) by the max over
  the first k kept lines **in file order** (not the score order the two providers use); a
  passage without a rating answers nothing, and -1 answers nothing. Without
  ``filter_by_oracle`` every question counts; with it, only the questions some judged passage
  of the topic answers (the oracle's max over all the topic's ratings);
* every measure is averaged over the run's topics it is defined for; topics of the qrels
  missing from the run are left out with a warning that counts them. When none of the
  topics with a relevant passage is missing, the script does not filter the diversity qrels,
  so a qrels topic with only 0 lines that the run lacks gets alpha_nDCG 0 in the mean: kept.

Where the script would fail or print nan, we leave the topic out of that measure's mean and
say so: a run topic without ratings (the script stops with an error), and, with
``filter_by_oracle``, a topic whose judged passages answer nothing (0/0: the script's mean
becomes nan). Beyond the script (its TODOs): ``Den@10`` (Eq. 6) when token counts are given,
and :func:`compare_runs`, paired tests between every pair of runs (the paired-test policy of
:mod:`cruxflow.metrics.stats`).

**Names.** These numbers are not the workflow's (docs/evaluate.md, "Names"): the printed and
JSON names carry the parameters where rac_eval's definition differs from ours
(:data:`NAME_PARAMETERS`); the script's own line
(:meth:`CruxEvalResult.line`) keeps its names (``P@10`` ...), which is what users diff against.

**One engine.** Every value is the registry's measure under that name, computed by the
engine every door shares (:class:`~cruxflow.metrics.scorer.ContextScorer`, the compute
functions of :mod:`~cruxflow.metrics.compute`): the script's semantics are the names'
parameters (``cut='rank'``, ``order='file'``, ``topics='run'``, ...; :data:`NAME_PARAMETERS`).
This module reads the run as the script's loader cuts it (:func:`~cruxflow.data.runs.
read_run_file` with its rank cut), builds the engine once for every run of a call, and says
what the script would leave out or fail on (the warnings), then formats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import (
    DiversityQrels,
    JudgeRatings,
    read_diversity_qrels,
    read_ratings,
)
from cruxflow.data.io import paused_gc
from cruxflow.data.runs import RunFile, read_run_file
from cruxflow.metrics.inputs import Judgments
from cruxflow.metrics.names import Name, parse
from cruxflow.metrics.options import DEFAULTS, NDEVAL_CUTOFF, MetricOptions
from cruxflow.metrics.scorer import ContextScorer


@dataclass
class CruxEvalResult:
    run: str                                  # the run path as given (the script prints it)
    k: int
    measures: list[str]                       # our names (measure_names)
    per_topic: dict[str, dict[str, float | None]]
    aggregate: dict[str, float | None]
    evaluated: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    authors_names: dict[str, str] = field(default_factory=dict)   # ours -> the script's

    def line(self) -> str:
        """The script's output: ``<run folder> | <run file> | P@10 | 0.xxxx | ... |`` (its
        measures, and Den where token counts were given; not Judged, which is ours)."""
        head = f"{self.run.rsplit('/', 1)[0]} | {self.run.rsplit('/')[-1]} | "
        cells = "".join(f"{self.authors_names[m]} | {_fmt(self.aggregate[m])} | "
                        for m in self.measures if m in self.authors_names)
        return (head + cells).rstrip()

    def to_json(self) -> dict:
        return {"run": self.run, "k": self.k, "measures": self.measures,
                "authors_names": self.authors_names, "aggregate": self.aggregate,
                "evaluated": self.evaluated, "warnings": self.warnings, "info": self.info,
                "per_topic": self.per_topic}


def _fmt(value: float | None) -> str:
    return "nan" if value is None else f"{value:.4f}"


class CruxEvalInputs:
    """The qrels and ratings of one call, read once, and the engine every run of the call is
    scored by (built once, when the first run is scored)."""

    def __init__(self, qrels, judge, *, k: int = 10, filter_by_oracle: bool = False,
                 eta: int = 3, alpha: float = 0.5,
                 token_counts: Mapping[str, int] | None = None, density_weight: float = 0.5):
        with paused_gc():
            self.div = qrels if isinstance(qrels, DiversityQrels) \
                else read_diversity_qrels(qrels)
            self.ratings = judge if isinstance(judge, JudgeRatings) else read_ratings(judge)
        self.k, self.filter_by_oracle, self.eta, self.alpha = k, filter_by_oracle, eta, alpha
        self.token_counts, self.density_weight = token_counts, density_weight
        self.names = measure_names(k, filter_by_oracle, token_counts is not None, eta=eta,
                                   alpha=alpha, density_weight=density_weight)
        self.judged_name = judged_name(k)
        self.relevant_topics = self.div.relevant_topics()
        # what every run's result reports about the inputs, counted once
        self.qrel_topics = self.div.topics()
        self.summaries = {"qrels": self.div.summary(), "judge": self.ratings.summary()}
        self._engine: ContextScorer | None = None

    def set_token_counts(self, counts: Mapping[str, int]) -> None:
        """Add Den@k, from token counts known only after the runs are read."""
        self.token_counts = counts
        self.names = measure_names(self.k, self.filter_by_oracle, True, eta=self.eta,
                                   alpha=self.alpha, density_weight=self.density_weight)
        self._engine = None

    def engine(self) -> ContextScorer:
        """The engine of every door, on the release's ratings and diversity qrels (made once
        for all the runs of the call)."""
        if self._engine is None:
            judgments = Judgments(ratings=self.ratings, qrels=self.div, source="release",
                                  checked=True)
            options = MetricOptions(eta=self.eta, alpha=self.alpha,
                                    density_weight=self.density_weight)
            self._engine = ContextScorer(judgments, options=options, tokens=self.token_counts)
        return self._engine


def crux_eval(run, qrels, judge, *, k: int = 10, filter_by_oracle: bool = False, eta: int = 3,
              alpha: float = 0.5, token_counts: Mapping[str, int] | None = None,
              density_weight: float = 0.5) -> CruxEvalResult:
    """Score ``run`` as rac_eval.py does. ``qrels`` and ``judge`` are paths or already read
    (:class:`DiversityQrels`, :class:`JudgeRatings`); ``token_counts`` (passage -> tokens)
    adds ``Den@k``. For several runs, :func:`crux_eval_runs` reads and builds once."""
    return crux_eval_runs([run], qrels, judge, k=k, filter_by_oracle=filter_by_oracle, eta=eta,
                          alpha=alpha, token_counts=token_counts,
                          density_weight=density_weight)[0]


def crux_eval_runs(runs: Sequence, qrels, judge, **options) -> list[CruxEvalResult]:
    """Score every run of ``runs`` as rac_eval.py does, the qrels and ratings read and the
    engine built once (``options`` as :func:`crux_eval`'s; ``qrels`` may be
    :class:`CruxEvalInputs` built already); one result per run, in order."""
    inputs = qrels if isinstance(qrels, CruxEvalInputs) \
        else CruxEvalInputs(qrels, judge, **options)
    return [score_run(run, inputs) for run in runs]


def score_run(run, inputs: CruxEvalInputs) -> CruxEvalResult:
    """One run (a path, or a :class:`~cruxflow.data.runs.RunFile` read already) against the
    inputs read once (:class:`CruxEvalInputs`)."""
    with paused_gc():
        try:
            return _score_run(run, inputs)
        finally:   # a call over many runs holds one run's lines and contexts at a time
            if inputs._engine is not None:
                inputs._engine.forget_runs()


def _score_run(run, inputs: CruxEvalInputs) -> CruxEvalResult:
    k, names = inputs.k, inputs.names
    measures = list(names)
    top = run if isinstance(run, RunFile) else read_run_file(run, max_rank=k)
    run = top.path if isinstance(run, RunFile) else run
    qrel_topics = inputs.qrel_topics
    run_topics = top.lines.topics
    in_run = set(run_topics)
    missing = [t for t in qrel_topics if t not in in_run]
    # The script's "missing" topics are those of its threshold-1 qrels: a qrels topic with
    # only 0 lines is not one of them. When none is missing it keeps the whole diversity qrels,
    # and ir_measures scores such a topic absent from the run at alpha-nDCG 0, which stays in
    # that mean; when one is, it filters the diversity qrels to the run's topics.
    kept_zero = [] if any(t in inputs.relevant_topics for t in missing) or k > NDEVAL_CUTOFF \
        else missing
    missing = [t for t in missing if t not in kept_zero]
    # the topics of the lines the rank column cut, read only where a qrels topic is missing
    in_file = set(top.file_topics) if missing else set()
    cut = [t for t in missing if t in in_file]
    warnings = _cut_warnings(top, k, qrel_topics, [t for t in missing if t not in in_file], cut,
                             kept_zero, names[measures[2]])
    if kept_zero:   # the script's alpha-nDCG mean covers every topic of the diversity qrels
        alpha_all = all_topics_name(measures[2])
        names = {(alpha_all if m == measures[2] else m): a for m, a in names.items()}
        measures[2] = alpha_all
    measures.append(inputs.judged_name)
    engine = inputs.engine()
    if inputs.token_counts is not None:
        _check_oracle_tokens(engine, measures[4], run_topics)
    shown = [*run_topics, *kept_zero]
    values = _values(engine, top, measures, shown)
    per_topic = {tid: {m: values[m][i] for m in measures} for i, tid in enumerate(shown)}
    no_text = [] if inputs.token_counts is None else _without_text(engine, top, run_topics,
                                                                   measures[4])
    if no_text:
        warnings.append(f"{names[measures[4]]} undefined for {len(no_text)} topics whose context "
                        "ranks a passage without text or token count: " + ", ".join(no_text[:10])
                        + (", ..." if len(no_text) > 10 else ""))
    aggregate = {m: _mean(r[m] for r in per_topic.values()) for m in measures}
    evaluated = {m: sum(r[m] is not None for r in per_topic.values()) for m in measures}
    reasons = [("no relevant passage in the qrels"), "no relevant passage in the qrels",
               "not in the qrels" if k <= NDEVAL_CUTOFF
               else f"ndeval stops at rank {NDEVAL_CUTOFF}",
               "no ratings" + (", or no question answered by the judged passages"
                               if inputs.filter_by_oracle else ""),
               "no ratings, or an oracle that covers nothing"]
    for m, reason in zip([m for m in measures if m in names], reasons, strict=False):
        left = len(run_topics) - sum(per_topic[t][m] is not None for t in run_topics)
        if left:
            warnings.append(f"the script's {names[m]}: {left} of {len(run_topics)} run topics "
                            f"left out ({reason})")
    info = {**inputs.summaries,
            "run_topics": len(run_topics), "lines_beyond_k": top.beyond_k,
            "filter_by_oracle": inputs.filter_by_oracle, "eta": inputs.eta,
            "alpha": inputs.alpha,
            "missing_from_run": missing,
            "cut_by_rank_column": cut,
            "rank_column_not_a_rank": None if top.not_a_rank is None
            else vars(top.not_a_rank),
            "zero_only_missing_from_run": kept_zero, "den_undefined_no_text": no_text}
    return CruxEvalResult(str(run), k, measures, per_topic, aggregate, evaluated, warnings,
                          info, dict(names))


def _values(engine: ContextScorer, top: RunFile, measures: list[str], shown: list[str]
            ) -> dict[str, list[float | None]]:
    """Each measure's value for each topic of ``shown`` (None where the engine leaves the
    topic out: undefined, outside the name's topics, or not a judged topic)."""
    index = engine.index.topic_index
    at = np.array([index.get(t, -1) for t in shown], dtype=np.int64)
    known = at >= 0
    out = {}
    for m in measures:
        value = engine.values(top.lines, m)
        picked = np.where(known, value[np.maximum(at, 0)] if len(value) else np.nan, np.nan)
        out[m] = [None if math.isnan(v) else v for v in picked.tolist()]
    return out


def _check_oracle_tokens(engine: ContextScorer, name: str, run_topics: list[str]) -> None:
    """Den needs the token count of every passage of the run's topics' Z*: one error naming
    the first that has none."""
    index = engine.index.topic_index
    topics = np.zeros(len(engine.topic_ids), dtype=bool)
    topics[[index[t] for t in run_topics if t in index]] = True
    missing = engine.oracle_without_text(engine.arrays(*_eta_alpha(parse(name), engine)),
                                         topics)
    if missing:
        tid, pid = missing[0]
        raise DataError(f"no token count for passage {pid!r} (Den needs the text or the token "
                        "count of every passage in a context and in Z*)", record=f"topic {tid}")


def _eta_alpha(name: Name, engine: ContextScorer) -> tuple[int, float]:
    opts = name.options(engine.options)
    return opts.eta, opts.alpha


def _without_text(engine: ContextScorer, top: RunFile, run_topics: list[str],
                  name: str) -> list[str]:
    """The run topics whose context (Den's) ranks a passage without a token count."""
    missing = engine.without_text(top.lines, name)
    index = engine.index.topic_index
    return [t for t in run_topics if t in index and missing[index[t]]]


def _listed(topics: list[str]) -> str:
    return ", ".join(topics[:10]) + (", ..." if len(topics) > 10 else "")


def _cut_warnings(top: RunFile, k: int, qrel_topics: list[str], absent: list[str],
                  cut: list[str], kept_zero: list[str], alpha_name: str) -> list[str]:
    """What the run's reading left out, by cause: qrels topics the file does not name
    (``absent``), those whose every line the rank column cut (rank > k: ``cut``), and a rank
    column that is not a rank."""
    out = []
    if kept_zero:
        out.append(f"{len(kept_zero)} qrels topics with only 0 lines are missing from the run: "
                   f"{alpha_name} 0 for them, in its mean as the script does: "
                   + _listed(kept_zero))
    if absent:
        out.append(f"{len(absent)} of {len(qrel_topics)} qrels topics are missing from the run "
                   f"and left out: {_listed(absent)}")
    if cut:
        out.append(f"{len(cut)} of {len(qrel_topics)} qrels topics are in the run file, but the "
                   f"rank column cut every line of theirs (rank > {k}; {top.beyond_k} lines "
                   f"cut in all): left out, as the script does: {_listed(cut)}")
    if top.not_a_rank is not None:
        out.append(top.not_a_rank.line(k))
    return out


def _mean(values) -> float | None:
    vals = [v for v in values if v is not None]
    return math.fsum(vals) / len(vals) if vals else None


# --- many runs ---------------------------------------------------------------------------------

def run_labels(results: Sequence[CruxEvalResult]) -> list[str]:
    """Each run's file name without its last suffix, as every door names runs
    (:func:`cruxflow.data.names.named_inputs`); two runs of one name are refused."""
    from cruxflow.data.names import check_unique, input_name

    pairs = [(input_name(r.run), r.run) for r in results]
    check_unique(pairs, "runs")
    return [name for name, _ in pairs]


def compare_runs(results: Sequence[CruxEvalResult], policy=None,
                 labels: Sequence[str] | None = None) -> list[dict]:
    """Paired tests between every pair of runs per measure, over the topics both runs define
    (:func:`cruxflow.metrics.stats.pairwise_tests`, by ``policy``: default
    :data:`~cruxflow.metrics.stats.POLICY`, the randomization test, Holm-adjusted over the
    pairs of a measure). Runs are named by ``labels``, else by :func:`run_labels`.

    A measure is one column of the script's table: the runs' names at one place. They differ
    in ``topics`` alone, where a run's alpha-nDCG mean covers every qrels topic
    (``topics='all'``: :func:`all_topics_name`), which
    changes which topics enter the run's mean, not a topic's value. A row's ``measure`` is the
    first run's name; where a or b names its measure otherwise, ``measure_a`` and ``measure_b``
    give each run's own name."""
    from cruxflow.metrics.names import parse
    from cruxflow.metrics.stats import POLICY, pairwise_tests

    if not results:
        return []
    labels = list(labels) if labels is not None else run_labels(results)
    runs = dict(zip(labels, results, strict=True))
    families = []
    for i, first in enumerate(results[0].measures):
        same = str(parse(first).with_(topics="run"))   # the name but for its topics
        own = {label: r.measures[i] for label, r in runs.items() if i < len(r.measures)
               and str(parse(r.measures[i]).with_(topics="run")) == same}
        if len(own) == len(runs):   # every run has this measure (another call may lack Den)
            families.append(({"measure": first}, {label: {t: row[own[label]] for t, row in
                                                          r.per_topic.items()}
                                                  for label, r in runs.items()}))
    rows = pairwise_tests(families, policy or POLICY)
    for row in rows:
        a, b = (runs[row["a"]].measures, runs[row["b"]].measures)
        place = results[0].measures.index(row["measure"])
        if a[place] != row["measure"] or b[place] != row["measure"]:
            row["measure_a"], row["measure_b"] = a[place], b[place]
    return rows


# --- the script's measures under the registry's names ------------------------------------------

# What each of rac_eval's measures differs in from the registry's measure of the same name
# (cruxflow.metrics.names), as the registry's parameters (docs/evaluate.md, "Names"):
#   cut='rank'        the run's lines with rank column <= k (ours: the top k by score)
#   order='file'      Cov and Den take the first k kept lines in the file's order
#   order='ndeval'    alpha-nDCG breaks score ties by passage id ascending (ndeval's own;
#                     ours descending, trec_eval's: P and nDCG keep it)
#   topics='run'      the mean over the run's topics the measure is defined for (ours: every
#                     judged topic with an answerable question, a missing one 0); alpha-nDCG's
#                     is topics='all' (every topic of the diversity qrels) for a run that
#                     lacks only qrels topics with 0 lines, which the script then keeps at 0
#   qrels='diversity' P and nDCG on the diversity qrels read as binary (relevant: a passage
#                     with a line of relevance >= 1; ours: the relevance qrels, P* graded)
#   questions='all'   Cov counts every sub-question (without --filter-by-oracle)
# plus, as the registry writes them, rel (eta), alpha and weight where not the default. Every
# name parses (cruxflow.parse_measure) and cruxflow.evaluate(run, the release subset folder,
# [name]) recomputes its value (tests/test_printed_names.py).
NAME_PARAMETERS = {
    "P": {"cut": "rank", "qrels": "diversity", "topics": "run"},
    "nDCG": {"cut": "rank", "qrels": "diversity", "topics": "run"},
    "alpha_nDCG": {"cut": "rank", "order": "ndeval", "topics": "run"},
    "Cov": {"cut": "rank", "order": "file", "topics": "run"},
    "Den": {"cut": "rank", "order": "file", "topics": "run"},
    # not the script's: the judged share of the lines its Cov reads (Judged@k, issue 39)
    "Judged": {"cut": "rank", "order": "file", "topics": "run"},
}


def _name(measure: str, k: int, **extra) -> str:
    """The registry's canonical name of the script's ``measure`` at ``k``."""
    params = {**NAME_PARAMETERS[measure], **extra}
    return str(parse(Name(measure, tuple(params.items()), k)))


def measure_names(k: int, filter_by_oracle: bool = False, with_density: bool = False, *,
                  eta: int = DEFAULTS.eta, alpha: float = DEFAULTS.alpha,
                  density_weight: float = DEFAULTS.density_weight) -> dict[str, str]:
    """``{our name: the script's name}`` of the measures of one call, in the script's order."""
    rel = {"rel": eta}
    questions = {} if filter_by_oracle else {"questions": "all"}
    names = {_name("P", k): f"P@{k}", _name("nDCG", k): f"nDCG@{k}",
             _name("alpha_nDCG", k, alpha=alpha): f"alpha_nDCG@{k}",
             _name("Cov", k, **rel, **questions): f"Cov@{k}"}
    if with_density:
        names[_name("Den", k, **rel, weight=density_weight)] = f"Den@{k}"
    return names


def judged_name(k: int) -> str:
    """The registry's name of the judged share of the lines the script's Cov reads (its
    first k kept lines in file order): not one of the script's measures, so not in its
    line (:meth:`cruxflow.metrics.crux_eval.CruxEvalResult.line`)."""
    return _name("Judged", k)


def all_topics_name(name: str) -> str:
    """alpha-nDCG's name over every topic of the diversity qrels (the script's mean for a run
    that lacks only qrels topics with 0 lines)."""
    return str(parse(name).with_(topics="all"))

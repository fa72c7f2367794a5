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
(:data:`~cruxflow.metrics.crux_eval_measures.NAME_PARAMETERS`); the script's own line
(:meth:`CruxEvalResult.line`) keeps its names (``P@10`` ...), which is what users diff against.

**Speed.** The qrels and ratings are read once and what every run is scored against built
once for all the runs of a call; each run is read a block at a time and kept by column
(:class:`~cruxflow.metrics.crux_eval_io.RunLines`); P, nDCG and alpha-nDCG
(:mod:`~cruxflow.metrics.crux_eval_measures`) and Cov are computed for all topics at once
with numpy (docs/evaluate.md, "Speed"; ``benchmarks/crux_eval.py``).
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
from cruxflow.metrics.crux import answerable_questions, coverage, density, select_required
from cruxflow.metrics.crux_eval_io import (  # noqa: F401  (the CLI and tests import them here)
    TopRun,
    collection_token_counts,
    read_run_top,
    read_token_counts,
)
from cruxflow.metrics.crux_eval_measures import (  # noqa: F401  (tests import them here)
    NAME_PARAMETERS,
    QrelsArrays,
    RatingRowIndex,
    all_topics_name,
    judged_name,
    measure_names,
)
from cruxflow.metrics.options import NDEVAL_CUTOFF

NDEVAL_MAX_CUTOFF = NDEVAL_CUTOFF  # pyndeval evaluates at most 20 ranks

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
    """The qrels and ratings of one call, read once, with what every run is scored against:
    the ir_measures evaluators (built once) and every rating as one matrix for Cov."""

    def __init__(self, qrels, judge, *, k: int = 10, filter_by_oracle: bool = False,
                 eta: int = 3, alpha: float = 0.5,
                 token_counts: Mapping[str, int] | None = None, density_weight: float = 0.5,
                 libraries: bool = False):
        self.libraries = libraries   # P, nDCG and alpha-nDCG from pytrec_eval and pyndeval
        self._arrays: QrelsArrays | None = None
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
        self._evaluators: tuple | None = None
        self._by_topic: dict | None = None
        self._build_matrix()

    def set_token_counts(self, counts: Mapping[str, int]) -> None:
        """Add Den@k, from token counts known only after the runs are read."""
        self.token_counts = counts
        self.names = measure_names(self.k, self.filter_by_oracle, True, eta=self.eta,
                                   alpha=self.alpha, density_weight=self.density_weight)

    # --- Cov for every topic at once --------------------------------------------------------

    def _build_matrix(self) -> None:
        """``matrix[row, q]``: every rating, one row per (topic, passage), -1 past the topic's
        questions; the last row is an unjudged passage's (0: answers nothing)."""
        flat, lengths = self.ratings.flat()
        self.row_of, topics, topic_of_row = self.ratings.rows()
        self.rating_rows = RatingRowIndex(self.row_of, topic_of_row, len(lengths))
        self.topic_index: dict[str, int] = {t: i for i, t in enumerate(topics)}
        width = int(lengths.max()) if len(lengths) else 1
        self.matrix = np.full((len(lengths) + 1, width), -1, dtype=np.int64)
        self.matrix[:-1][np.arange(width)[None, :] < lengths[:, None]] = flat
        self.matrix[-1] = 0
        self.unjudged = len(lengths)
        n_topics = len(self.topic_index)
        self.n_questions = np.zeros(n_topics, dtype=np.int64)
        oracle = np.full((n_topics, width), -1, dtype=np.int64)
        if len(lengths):
            self.n_questions[topic_of_row] = lengths
            np.maximum.at(oracle, topic_of_row, self.matrix[:-1])
        questions = np.arange(width)[None, :] < self.n_questions[:, None]
        # the questions Cov counts: every one, or (filter_by_oracle) those the oracle answers
        self.counted = questions & (oracle >= self.eta) if self.filter_by_oracle else questions

    def coverage(self, top: TopRun) -> tuple[dict[str, float | None], dict[str, float | None]]:
        """rac_eval's Cov of every run topic: the max rating over its first k kept lines in
        file order, rating >= eta, over the counted questions; ``None`` without ratings or
        (filter_by_oracle) without a counted question. And Judged@k over the same lines (ours):
        the share of them that the judge rated for the topic; ``None`` without ratings."""
        run = top.lines
        out: dict[str, float | None] = dict.fromkeys(run.topics)
        judged = dict(out)
        known = np.array([self.topic_index.get(t, -1) for t in run.topics] or [-1],
                         dtype=np.int64)
        place = np.arange(len(run.topic)) - run.starts()[run.topic]
        at = np.flatnonzero((place < self.k) & (known[run.topic] >= 0))
        if not len(at):
            return out, judged
        rows = self.rating_rows.rows(run, at, known)
        starts = np.flatnonzero(np.diff(run.topic[at], prepend=-1))   # each topic's first
        best = np.maximum.reduceat(self.matrix[rows], starts, axis=0)
        tids = run.topic[at][starts]
        counted = self.counted[known[tids]]
        denominator = counted.sum(axis=1)
        answered = ((best >= self.eta) & counted).sum(axis=1)
        rated = np.add.reduceat((rows != self.unjudged).astype(np.int64), starts)
        share = rated / np.diff(np.append(starts, len(rows)))
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = answered / denominator
        for t, value, n, j in zip(tids.tolist(), cov.tolist(), denominator.tolist(),
                                  share.tolist(), strict=True):
            out[run.topics[t]], judged[run.topics[t]] = (value if n else None), j
        return out, judged

    # --- ir_measures ------------------------------------------------------------------------

    def evaluators(self):
        """(pytrec_eval's evaluator of P and nDCG over the binary qrels, pyndeval's evaluator
        of alpha-nDCG over the diversity qrels), built once; either is None where it has
        nothing to evaluate.

        Both are built and called as ir_measures' providers build and call them for
        ``P@k``, ``nDCG@k`` (trec_eval's ``P_k``, ``ndcg_cut_k``, relevance level 1) and
        ``alpha_nDCG(alpha)@k`` (relevance level 1, beta 0.5), without ir_measures' layer
        around them: converting 180,000 qrels lines into named tuples and back, and a Metric
        object per value, cost more than the evaluations. pytrec_eval orders a topic's lines
        by score, ties by passage id descending; pyndeval by score, ties by passage id
        ascending, whatever order they get them in.
        """
        if self._evaluators is None:
            names = list(self.names)
            relevance = ndeval = None
            binary = self.div.binary()
            if binary:
                import pytrec_eval

                trec = {f"P_{self.k}": names[0], f"ndcg_cut_{self.k}": names[1]}
                relevance = (pytrec_eval.RelevanceEvaluator(
                    binary, list(trec), relevance_level=1, judged_docs_only_flag=0),
                    trec)
            if self.k <= NDEVAL_MAX_CUTOFF:
                import pyndeval

                ndeval = pyndeval.RelevanceEvaluator(
                    self.div.rows, [f"alpha-nDCG@{self.k}"], relevance_level=1,
                    alpha=self.alpha, beta=0.5)
            self._evaluators = (relevance, ndeval)
        return self._evaluators

    def arrays(self) -> QrelsArrays | None:
        """The qrels as arrays for :mod:`~cruxflow.metrics.crux_eval_measures`, built once;
        None where the libraries compute instead (``libraries=True``, k above ndeval's 20, or
        judgments too large for arrays)."""
        if self._arrays is None and not self.libraries and self.k <= NDEVAL_MAX_CUTOFF:
            self._arrays = QrelsArrays(self.div, self.k, self.alpha)
        return None if self._arrays is None or self._arrays.too_large else self._arrays

    def ir_measures(self, top: TopRun) -> dict[str, dict[str, float]]:
        """``{our name: {topic: value}}`` of P, nDCG and alpha-nDCG, as the script gets them:
        on arrays (:class:`QrelsArrays`), or from pytrec_eval and pyndeval themselves."""
        out: dict[str, dict[str, float]] = {}
        if not top.lines.topics:
            return out
        arrays = self.arrays()
        if arrays is not None:
            return dict(zip(self.names, arrays.evaluate(top.lines), strict=False))
        relevance, ndeval = self.evaluators()
        if relevance is not None:
            evaluator, named = relevance
            for name in named.values():
                out[name] = {}
            for tid, values in evaluator.evaluate(top.scores()).items():
                for trec_name, value in values.items():
                    out[named[trec_name]][tid] = float(value)
        if ndeval is not None:
            name, key = list(self.names)[2], f"alpha-nDCG@{self.k}"
            lines = ((tid, pid, score) for tid, rows in top.topics.items()
                     for pid, score, _ in rows)
            out[name] = {rec["query_id"]: float(rec[key]) for rec in ndeval.evaluate_iter(lines)}
        return out

    def by_topic(self) -> dict[str, dict[str, list[int]]]:
        if self._by_topic is None:
            self._by_topic = self.ratings.by_topic()
        return self._by_topic


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
    evaluators built once (``options`` as :func:`crux_eval`'s; ``qrels`` may be
    :class:`CruxEvalInputs` built already); one result per run, in order."""
    inputs = qrels if isinstance(qrels, CruxEvalInputs) \
        else CruxEvalInputs(qrels, judge, **options)
    return [score_run(run, inputs) for run in runs]


def score_run(run, inputs: CruxEvalInputs) -> CruxEvalResult:
    """One run (a path, or a :class:`TopRun` read already) against inputs read once
    (:class:`CruxEvalInputs`)."""
    with paused_gc():
        return _score_run(run, inputs)


def _score_run(run, inputs: CruxEvalInputs) -> CruxEvalResult:
    k, names = inputs.k, inputs.names
    measures = list(names)
    top = run if isinstance(run, TopRun) else read_run_top(run, k)
    run = top.path if isinstance(run, TopRun) else run
    qrel_topics = inputs.qrel_topics
    run_topics = top.lines.topics
    in_run = set(run_topics)
    missing = [t for t in qrel_topics if t not in in_run]
    # The script's "missing" topics are those of its threshold-1 qrels: a qrels topic with
    # only 0 lines is not one of them. When none is missing it keeps the whole diversity qrels,
    # and ir_measures scores such a topic absent from the run at alpha-nDCG 0, which stays in
    # that mean; when one is, it filters the diversity qrels to the run's topics.
    kept_zero = [] if any(t in inputs.relevant_topics for t in missing) or k > NDEVAL_MAX_CUTOFF \
        else missing
    missing = [t for t in missing if t not in kept_zero]
    # the topics of the lines the rank column cut, read only where a qrels topic is missing
    in_file = set(top.file_topics) if missing else set()
    cut = [t for t in missing if t in in_file]
    warnings = _cut_warnings(top, k, qrel_topics, [t for t in missing if t not in in_file], cut,
                             kept_zero, names[measures[2]])
    ir = inputs.ir_measures(top)
    cov, judged = inputs.coverage(top)
    per_topic: dict[str, dict[str, float | None]] = {}
    for tid in run_topics:
        row: dict[str, float | None] = {m: ir.get(m, {}).get(tid) for m in measures[:3]}
        row[measures[3]] = cov[tid]
        per_topic[tid] = row
    if inputs.token_counts is not None:
        by_topic = inputs.by_topic()
        for tid in run_topics:
            if per_topic[tid][measures[3]] is not None:
                per_topic[tid][measures[4]] = _density(
                    tid, top, by_topic[tid], k, inputs.filter_by_oracle, inputs.eta,
                    inputs.token_counts, inputs.density_weight)
            else:
                per_topic[tid][measures[4]] = None
    for tid in kept_zero:
        per_topic[tid] = {**dict.fromkeys(measures), measures[2]: 0.0}
    if kept_zero:   # the script's alpha-nDCG mean covers every topic of the diversity qrels
        alpha_all = all_topics_name(measures[2])
        names = {(alpha_all if m == measures[2] else m): a for m, a in names.items()}
        for row in per_topic.values():
            row[alpha_all] = row.pop(measures[2])
        measures[2] = alpha_all
    no_text = [] if inputs.token_counts is None else [
        t for t in run_topics
        if any(p not in inputs.token_counts for p, _, _ in top.topics[t][:k])]
    if no_text:
        warnings.append(f"{names[measures[4]]} undefined for {len(no_text)} topics whose context "
                        "ranks a passage without text or token count: " + ", ".join(no_text[:10])
                        + (", ..." if len(no_text) > 10 else ""))
    # ours beyond the script: the judged share of the lines Cov reads (topics without ratings,
    # None, are Cov's left-out ones, said once there)
    for tid, row in per_topic.items():
        row[inputs.judged_name] = judged.get(tid)
    measures.append(inputs.judged_name)
    aggregate = {m: _mean(r[m] for r in per_topic.values()) for m in measures}
    evaluated = {m: sum(r[m] is not None for r in per_topic.values()) for m in measures}
    reasons = [("no relevant passage in the qrels"), "no relevant passage in the qrels",
               "not in the qrels" if k <= NDEVAL_MAX_CUTOFF
               else f"ndeval stops at rank {NDEVAL_MAX_CUTOFF}",
               "no ratings" + (", or no question answered by the judged passages"
                               if inputs.filter_by_oracle else ""),
               "no ratings, or an oracle that covers nothing"]
    for m, reason in zip([m for m in measures if m in names], reasons, strict=False):
        left = len(run_topics) - sum(per_topic[t][m] is not None for t in run_topics)
        if left:
            warnings.append(f"{names[m]} ({m}): {left} of {len(run_topics)} run topics left "
                            f"out ({reason})")
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


def _listed(topics: list[str]) -> str:
    return ", ".join(topics[:10]) + (", ..." if len(topics) > 10 else "")


def _cut_warnings(top: TopRun, k: int, qrel_topics: list[str], absent: list[str],
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
        out.append(top.not_a_rank.line(top.path, k))
    return out


def _mean(values) -> float | None:
    vals = [v for v in values if v is not None]
    return math.fsum(vals) / len(vals) if vals else None


def _density(tid: str, top: TopRun, matrix: Mapping[str, list[int]], k: int,
             filter_by_oracle: bool, eta: int, token_counts: Mapping[str, int],
             weight: float) -> float | None:
    """Den (Eq. 6) of a topic's first k kept lines against Z* (the greedy P** of the judge's
    ratings, ties by the passages' natural order); ``None`` where it is undefined."""
    n = len(next(iter(matrix.values())))
    kept = answerable_questions(matrix, n, eta)
    # the ratio of Eq. 6 is the same over every question or the answerable ones (Z* answers
    # all of these): the answerable ones, as the registry's Den computes it, bit for bit
    questions = kept
    unjudged = [0] * n   # the script's "empty" ratings: an unjudged passage answers nothing
    context = [pid for pid, _, _ in top.topics[tid][:k]]
    cov = coverage([matrix.get(pid, unjudged) for pid in context], questions, eta)
    if math.isnan(cov):
        return None
    if any(p not in token_counts for p in context):
        return None   # a ranked passage without text (outside the collection): undefined
    oracle = select_required(matrix, kept, eta) if kept else []
    tokens = _tokens(token_counts, context, top, tid)
    tokens_oracle = _tokens(token_counts, oracle, None, tid)
    cov_oracle = coverage([matrix[p] for p in oracle], questions, eta)
    den = density(cov, tokens, cov_oracle, tokens_oracle, weight)
    return None if math.isnan(den) else den


def _tokens(counts: Mapping[str, int], pids: list[str], top: TopRun | None, tid: str) -> int:
    total = 0
    for pid in pids:
        if pid not in counts:
            line = next((ln for p, _, ln in top.topics[tid] if p == pid), None) if top else None
            where = {"path": top.path, "record": f"line {line}", "field": "docid"} if top \
                else {"record": f"topic {tid}"}
            raise DataError(f"no token count for passage {pid!r} (Den needs the text or the "
                            "token count of every passage in a context and in Z*)", **where)
        total += counts[pid]
    return total


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
    (``topics='all'``: :func:`~cruxflow.metrics.crux_eval_measures.all_topics_name`), which
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

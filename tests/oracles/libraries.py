"""The oracle of trec_eval's and ndeval's measures: the libraries' own route (ir_measures,
pytrec_eval, pyndeval), which the engine's arrays (:mod:`cruxflow.metrics.compute`) are tested
against value for value."""

from __future__ import annotations

import ir_measures
import pandas as pd

from cruxflow.metrics.options import DEFAULTS, NDEVAL_CUTOFF


def relevance_measures(required_grade: int = 2, cutoffs=()) -> dict:
    """Keys -> ir_measures measures, computed on a run already cut to the context (top k), so
    that R@1000 and AP@1000 there are R@k and AP@k (names.py: ``R``, ``AP``), and P@k is
    NumRelRet / k, as trec_eval's P_k divides. nDCG@k's ideal is cut at k too, so it is asked
    for at each cutoff in ``cutoffs`` (``"nDCG@10"``). ``required_grade``: the grade of P**
    (2 under the "2-1" grades, 3 under the CRUX authors' "3-2-1")."""
    return {
        "R": ir_measures.R @ 1000,                                    # share of P*
        f"R(rel={required_grade})": ir_measures.R(rel=required_grade) @ 1000,  # share of P**
        "AP": ir_measures.AP @ 1000,
        "NumRelRet": ir_measures.NumRet(rel=1),
        **{f"nDCG@{c}": ir_measures.nDCG @ int(c) for c in sorted(set(cutoffs))},
    }


DEFAULT_MEASURES = relevance_measures(cutoffs=(10,))


def _qrels_frame(qrels: dict[str, dict[str, int]]) -> pd.DataFrame:
    rows = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def diversity_frame(rows) -> pd.DataFrame:
    """ndeval qrels ``(qid, subtopic, docid, rel)`` as the frame ir_measures expects."""
    return pd.DataFrame([(q, str(it), d, int(r)) for q, it, d, r in rows],
                        columns=["query_id", "iteration", "doc_id", "relevance"])


def _run_frame(run: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, d, float(len(docs) - i)) for q, docs in run.items() for i, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


class RelevanceEvaluator:
    """ir_measures' evaluator for one qrels, built once (converting the qrels is most of the
    cost of a call) and reused for every run and context size.

    ir_measures' per-value layer (a ``Metric`` per query and measure, measures hashed through
    their repr) costs about three times pytrec_eval's own work, minutes at the paper's scale.
    With the pytrec_eval provider (ir-measures is pinned), the values are read straight from
    the pytrec_eval evaluators ir_measures built, one per relevance level, under the trec_eval
    names ir_measures gave them; any other provider goes through ``iter_calc``.
    ``tests/test_metrics_fast.py`` compares both with ``ir_measures.iter_calc``.
    """

    def __init__(self, qrels: dict[str, dict[str, int]], measures: dict | None = None):
        self.measures = measures or DEFAULT_MEASURES
        self.names = {m: n for n, m in self.measures.items()}
        self.qrels_ids = set(qrels)
        self.evaluator = ir_measures.evaluator(list(self.measures.values()),
                                               _qrels_frame(qrels)) if qrels else None
        self._trec_evaluators = self._pytrec_eval_invokers()

    def _pytrec_eval_invokers(self) -> list | None:
        """``[(pytrec_eval evaluator, {trec_eval name: our name})]``, or None where the
        evaluator is not ir_measures 0.4's pytrec_eval one covering every measure."""
        found, covered = [], set()
        for invoker in getattr(self.evaluator, "invokers", None) or ():
            trec = getattr(invoker, "evaluator", None)
            measure_map = getattr(invoker, "measure_map", None)
            if not hasattr(trec, "evaluate") or not isinstance(measure_map, dict):
                return None
            names = {}
            for trec_name, entry in measure_map.items():
                name = self.names.get(entry[0]) if isinstance(entry, tuple) else None
                if name is None:
                    return None
                names[trec_name] = name
            covered.update(names.values())
            found.append((trec, names))
        return found if found and covered == set(self.measures) else None

    def per_query(self, run: dict[str, list[str]]) -> dict[str, dict[str, float]]:
        """``{qid: {name: value}}`` for every query of ``run`` that has qrels.

        ``run`` maps a query to its ranked document ids (the context, already cut to size).
        Queries in ``run`` without a relevant document get 0 for every measure (trec_eval
        leaves them out; a context that retrieves nothing relevant should count as 0, not
        vanish).
        """
        out = {q: dict.fromkeys(self.measures, 0.0) for q in run if q in self.qrels_ids}
        # any decreasing scores give the context's order (trec_eval sorts by score)
        scores = [-float(i) for i in range(max((len(run[q]) for q in out), default=0))]
        ranked = {q: dict(zip(run[q], scores, strict=False)) for q in out if run[q]}
        if not ranked:
            return out
        if self._trec_evaluators is not None:
            for trec, names in self._trec_evaluators:
                for q, values in trec.evaluate(ranked).items():
                    if q in out:
                        row = out[q]
                        for trec_name, value in values.items():
                            row[names[trec_name]] = float(value)
            return out
        for m in self.evaluator.iter_calc(ranked):
            if m.query_id in out:   # the evaluator also reports the qrels' other queries
                out[m.query_id][self.names[m.measure]] = float(m.value)
        return out


def per_query(run: dict[str, list[str]], qrels: dict[str, dict[str, int]],
              measures: dict | None = None) -> dict[str, dict[str, float]]:
    """:meth:`RelevanceEvaluator.per_query` for one run (build the evaluator once for many)."""
    return RelevanceEvaluator(qrels, measures).per_query(run)


def per_query_ndeval(run: dict[str, list[str]], diversity: pd.DataFrame,
                     alpha: float = DEFAULTS.alpha) -> dict[str, float]:
    """alpha-nDCG as the CRUX paper's tables computed it (``alpha-nDCG (published
    computation)``): ndeval's alpha-nDCG@20 through ir_measures.

    ``diversity`` holds every passage of P* that answers a question at eta (subtopic = the
    question), so ndeval's ideal ranking is its greedy one over all of P*, not over Z* as in
    Eq. 4: redundant passages add discounted gains to the ideal, and the oracle context Z*
    scores below 1 (the paper's oracle row, 80.6 on both datasets). Like ndeval, the score
    counts the first 20 passages of a longer context. The context's own rank order is used;
    the CRUX authors' code gave ndeval every passage the same score, so their ndeval ordered a
    context by passage id (ascending) instead (docs/paper-parity.md).
    """
    judged = set(diversity["query_id"])
    qids = [q for q in run if q in judged]
    out = dict.fromkeys(qids, 0.0)
    if not qids or not any(run[q] for q in qids):
        return out
    measure = ir_measures.alpha_nDCG(alpha=alpha) @ NDEVAL_CUTOFF
    for m in ir_measures.iter_calc([measure], diversity, _run_frame({q: run[q] for q in qids})):
        out[m.query_id] = float(m.value)
    return out


def rac_eval_values(qrels, top, k: int, alpha: float) -> dict[str, dict[str, float]]:
    """The CRUX authors' rac_eval.py's P@k, nDCG@k and alpha_nDCG@k per topic, as the script
    gets them: from pytrec_eval (``P_k``, ``ndcg_cut_k`` over the diversity qrels read as
    binary qrels, relevance level 1) and pyndeval (``alpha-nDCG@k`` over the diversity qrels,
    beta 0.5), called as ir_measures' providers call them, on a run's lines of rank <= k
    (``top``: a :class:`cruxflow.data.runs.RunFile`; ``qrels``: a
    :class:`cruxflow.data.ingest.crux_common.DiversityQrels`). Keys ``P``, ``nDCG``,
    ``alpha_nDCG``; a topic a library does not evaluate is absent."""
    import pyndeval
    import pytrec_eval

    out: dict[str, dict[str, float]] = {"P": {}, "nDCG": {}, "alpha_nDCG": {}}
    scores = top.scores()
    binary = qrels.binary()
    if binary and scores:
        trec = {f"P_{k}": "P", f"ndcg_cut_{k}": "nDCG"}
        evaluator = pytrec_eval.RelevanceEvaluator(binary, list(trec), relevance_level=1,
                                                   judged_docs_only_flag=0)
        for tid, values in evaluator.evaluate(scores).items():
            for name, value in values.items():
                out[trec[name]][tid] = float(value)
    if k <= NDEVAL_CUTOFF and scores:
        ndeval = pyndeval.RelevanceEvaluator(qrels.rows, [f"alpha-nDCG@{k}"],
                                             relevance_level=1, alpha=alpha, beta=0.5)
        lines = ((tid, pid, score) for tid, rows in top.topics.items() for pid, score, _ in rows)
        out["alpha_nDCG"] = {rec["query_id"]: float(rec[f"alpha-nDCG@{k}"])
                             for rec in ndeval.evaluate_iter(lines)}
    return out

"""CRUX's measures as ir_measures measures: ``Cov@10``, ``alpha_nDCG_crux@10``, ``Den@10``.

The CRUX authors' script notes "integrate to ir_measures?"; this is that integration. Each
measure is an :class:`ir_measures.Measure` with a ``runtime_impl``, the hook through which
ir_measures' own *runtime* provider (the one behind ``ir_measures.define``) evaluates measures
it does not know, so they work the ir_measures way: ``Cov@10``, ``Cov(rel=4)@5``,
``ir_measures.calc_aggregate([Cov@10, alpha_nDCG_crux@10], qrels, run)``, ``iter_calc``,
``Cov@10.calc_aggregate(qrels, run)``, and (once this module is imported)
``ir_measures.parse_measure("Cov@10")``.

**Qrels** are *graded diversity qrels*: ``topic subtopic passage rating``, one line per
(passage, sub-question) with the 0-5 answerability rating in the relevance column, which
carries a topic's whole answerability matrix (-1, "no rating", answers nothing). A passage
without a line for a sub-question answers nothing, as does a passage without lines.
:func:`graded_qrels` builds them from ratings.

* ``Cov`` (Eq. 3): the share of the answerable sub-questions (those some judged passage rates
  >= ``rel``, the paper's eta; every sub-question of the qrels with ``questions=all``) that
  some passage of the top ``cutoff`` answers. Undefined (NaN) without answerable questions.
* ``alpha_nDCG_crux`` (Eq. 4-5): alpha-nDCG over the answerable sub-questions whose ideal is
  the oracle context Z* = P** (the greedy required set, Sec. 3.2) with its |Z*| ranks.
  ndeval's alpha-nDCG (ideal over every judged passage, cut at the same rank), the name
  ``alpha_nDCG`` of the other doors, is ir_measures' own ``alpha_nDCG(rel=3)`` on these qrels
  (``rel`` = eta: the other doors pass diversity qrels already cut at eta), exported here as
  :data:`alpha_nDCG_ndeval`.
* ``Den`` (Eq. 6): ``((Cov / tokens) / (Cov(Z*) / tokens(Z*))) ** weight``; it needs a
  ``tokens`` column (the passage's token count) in the run and in the qrels
  (:func:`with_tokens`).

The run is ordered as every door of ours orders it (:func:`cruxflow.data.io.trec_order`:
score descending, then passage id descending, as trec_eval); when ties decide which passages
fall inside the top ``cutoff``, a warning counts the topics. Aggregates are means over the
topics where a measure is defined. The names and their definitions: :mod:`.names`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping

import ir_measures
from ir_measures import Metric
from ir_measures import measures as _im
from ir_measures.measures.base import Agg

from cruxflow.data.io import RunRow, tie_warning, ties_at_cutoff, trec_order
from cruxflow.data.model import parse_passage_id
from cruxflow.metrics.crux import (
    alpha_ndcg,
    answerable_questions,
    coverage,
    density,
    select_required,
)
from cruxflow.metrics.names import REGISTRY


def _param(measure: str, name: str) -> _im.ParamInfo:
    """ir_measures' view of a parameter of the registry (:mod:`.names`): one default."""
    p = REGISTRY[measure].params[name]
    return _im.ParamInfo(dtype=p.dtype, default=p.default, desc=p.desc)


_CUTOFF = _im.ParamInfo(dtype=int, required=False, desc="ranking cutoff threshold")


class _DefinedMean(Agg):
    """The mean of the defined (non-NaN) values; NaN when none is."""

    def __init__(self):
        self.values: list[float] = []

    def add(self, value):
        if not math.isnan(value):
            self.values.append(value)

    def result(self):
        return math.fsum(self.values) / len(self.values) if self.values else math.nan


def _natural(pid: str):
    """Passages in their topic's order: by the running number of ``<topic>:<doc>#<n>``."""
    try:
        return (0, parse_passage_id(pid)[2], pid)
    except ValueError:
        return (1, 0, pid)


def _subtopic_key(s: str):
    return (0, int(s), s) if s.isdigit() else (1, 0, s)


class _Topic:
    """One topic of graded diversity qrels: its answerability matrix and token counts."""

    def __init__(self, frame):
        self.subtopics = sorted(set(frame["iteration"].astype(str)), key=_subtopic_key)
        col = {s: i for i, s in enumerate(self.subtopics)}
        self.matrix: dict[str, list[int]] = {}
        for pid in sorted(set(frame["doc_id"]), key=_natural):
            self.matrix[pid] = [0] * len(self.subtopics)
        for pid, sub, rel in zip(frame["doc_id"], frame["iteration"].astype(str),
                                 frame["relevance"], strict=True):
            self.matrix[pid][col[sub]] = int(rel)
        self.tokens = dict(zip(frame["doc_id"], frame["tokens"], strict=False)) \
            if "tokens" in frame else None

    def rows(self, pids) -> list[list[int]]:
        missing = [0] * len(self.subtopics)
        return [self.matrix.get(p, missing) for p in pids]


class _CruxMeasure(_im.Measure):
    QREL_INPUTS = ["query_id", "iteration", "doc_id", "relevance"]
    RUN_INPUTS = ["query_id", "doc_id", "score"]

    def aggregator(self):
        return _DefinedMean()

    def runtime_impl(self, qrels, run) -> Iterator[Metric]:
        """Called by ir_measures' runtime provider with the qrels and run as frames; yields
        one value per qrels topic (a topic the run lacks has an empty context)."""
        ranked: dict[str, list[RunRow]] = {}
        if len(run):
            for qid, doc, score in zip(run["query_id"].astype(str), run["doc_id"],
                                       run["score"], strict=True):
                ranked.setdefault(qid, []).append(RunRow(qid, doc, 0, float(score)))
            ranked = {qid: trec_order(rows) for qid, rows in ranked.items()}
        cutoff = self["cutoff"]
        topics = [str(q) for q in qrels["query_id"].unique()]
        if cutoff is not None:
            line = tie_warning(ties_at_cutoff({q: ranked[q] for q in topics if q in ranked},
                                              cutoff), len(topics))
            if line:
                warnings.warn(f"{self}: {line}", stacklevel=2)
        for qid, frame in qrels.groupby("query_id", sort=True):
            context = [r.doc_id for r in ranked.get(str(qid), [])]
            if cutoff is not None:
                context = context[:cutoff]
            yield Metric(str(qid), self, self._value(_Topic(frame), context, run, str(qid)))

    def _questions(self, topic: _Topic) -> tuple[list[int], list[int]]:
        """(the answerable sub-questions, those this measure counts)."""
        kept = answerable_questions(topic.matrix, len(topic.subtopics), self["rel"])
        everyone = list(range(len(topic.subtopics)))
        return kept, (everyone if self["questions"] == "all" else kept)

    def _value(self, topic: _Topic, context: list[str], run, qid: str) -> float:
        raise NotImplementedError


class _Cov(_CruxMeasure):
    """Cov (CRUX, Eq. 3): share of the answerable sub-questions the top passages answer."""

    __name__ = NAME = "Cov"
    PRETTY_NAME = "CRUX coverage"
    SHORT_DESC = "Share of a topic's answerable sub-questions answered by the top k passages."
    SUPPORTED_PARAMS = {"cutoff": _CUTOFF, "rel": _param("Cov", "rel"),
                        "questions": _param("Cov", "questions")}

    def _value(self, topic, context, run, qid):
        _, questions = self._questions(topic)
        return coverage(topic.rows(context), questions, self["rel"])


class _AlphaNDCGCrux(_CruxMeasure):
    """alpha-nDCG (CRUX, Eq. 4) with the oracle context Z* as the ideal."""

    __name__ = NAME = "alpha_nDCG_crux"
    PRETTY_NAME = "CRUX alpha-nDCG (ideal over Z*)"
    SHORT_DESC = "alpha-nDCG over the answerable sub-questions, ideal = the oracle context."
    SUPPORTED_PARAMS = {"cutoff": _CUTOFF, "rel": _param("alpha_nDCG_crux", "rel"),
                        "alpha": _param("alpha_nDCG_crux", "alpha")}

    def _value(self, topic, context, run, qid):
        kept = answerable_questions(topic.matrix, len(topic.subtopics), self["rel"])
        oracle = select_required(topic.matrix, kept, self["rel"])
        return alpha_ndcg(topic.rows(context), topic.rows(oracle), kept, self["rel"],
                          self["alpha"])


class _Den(_CruxMeasure):
    """Den (CRUX, Eq. 6): coverage per token relative to the oracle context."""

    __name__ = NAME = "Den"
    PRETTY_NAME = "CRUX density"
    SHORT_DESC = "Coverage per token of the top k passages relative to the oracle context."
    RUN_INPUTS = ["query_id", "doc_id", "score", "tokens"]
    QREL_INPUTS = ["query_id", "iteration", "doc_id", "relevance", "tokens"]
    SUPPORTED_PARAMS = {"cutoff": _CUTOFF, "rel": _param("Den", "rel"),
                        "weight": _param("Den", "weight")}

    def _value(self, topic, context, run, qid):
        if topic.tokens is None or "tokens" not in run:
            raise ValueError("Den needs a 'tokens' column in the qrels and in the run "
                             "(cruxflow.metrics.measures.with_tokens)")
        kept = answerable_questions(topic.matrix, len(topic.subtopics), self["rel"])
        questions = kept
        oracle = select_required(topic.matrix, kept, self["rel"])
        tokens = dict(zip(run.loc[run["query_id"] == qid, "doc_id"],
                          run.loc[run["query_id"] == qid, "tokens"], strict=True))
        cov = coverage(topic.rows(context), questions, self["rel"])
        cov_star = coverage(topic.rows(oracle), questions, self["rel"])
        return density(cov, int(sum(tokens[p] for p in context)), cov_star,
                       int(sum(topic.tokens[p] for p in oracle)), self["weight"])


Cov = _Cov()
alpha_nDCG_crux = _AlphaNDCGCrux()
Den = _Den()
# The ndeval variant of CRUX's alpha-nDCG: ndeval's own (ideal over every judged passage) on
# the same graded qrels, a passage relevant to a sub-question when its rating is >= 3.
alpha_nDCG_ndeval = ir_measures.alpha_nDCG(rel=3)

for _measure in (Cov, alpha_nDCG_crux, Den):
    if _measure.NAME not in _im.registry:   # so that ir_measures.parse_measure knows them
        _im.register(_measure)


def graded_qrels(ratings_by_topic: Mapping[str, Mapping[str, list[int]]]):
    """Graded diversity qrels as a frame (``query_id, iteration, doc_id, relevance``): one row
    per rated (passage, sub-question), the sub-question index as subtopic."""
    import pandas as pd

    rows = [(tid, str(i), pid, int(r)) for tid, m in ratings_by_topic.items()
            for pid, ratings in m.items() for i, r in enumerate(ratings)]
    return pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id", "relevance"])


def ratings_from_graded(qrels) -> dict[str, dict[str, list[int]]]:
    """The answerability matrix ``{topic: {passage: ratings}}`` of graded diversity qrels, in
    the order these measures read them (sub-questions by number, passages by their running
    number): the inverse of :func:`graded_qrels`."""
    return {str(qid): _Topic(frame).matrix
            for qid, frame in qrels.groupby("query_id", sort=False)}


def with_tokens(frame, counts: Mapping[str, int]):
    """``frame`` (qrels or run) with a ``tokens`` column from passage token counts."""
    missing = sorted(set(frame["doc_id"]) - set(counts))
    if missing:
        raise KeyError(f"no token count for {len(missing)} passages, e.g. {missing[0]!r}")
    return frame.assign(tokens=frame["doc_id"].map(counts).astype(int))

"""The registry's measures as ir_measures measures: ``Cov@10``, ``alpha_nDCG_crux@10``,
``Den@10`` and every other name of :mod:`.names`, built from :data:`.names.REGISTRY`.

The CRUX authors' script notes "integrate to ir_measures?"; this is that integration. Each
measure is an :class:`ir_measures.Measure` with a ``runtime_impl``, the hook through which
ir_measures' own *runtime* provider (the one behind ``ir_measures.define``) evaluates measures
it does not know, so they work the ir_measures way: ``Cov@10``, ``Cov(rel=4)@5``,
``ir_measures.calc_aggregate([Cov@10, alpha_nDCG_crux@10], qrels, run)``, ``iter_calc``,
``Cov@10.calc_aggregate(qrels, run)``, and (once this module is imported)
``ir_measures.parse_measure("Cov@10")``. ``cruxflow.Cov``, ``cruxflow.alpha_nDCG_crux`` and
``cruxflow.Den`` are these objects.

They compute what :func:`cruxflow.evaluate` computes under the same name (it is called with
the frames ir_measures hands over): the same contexts (ties broken by passage id, descending),
the same topics (by default the topics with an answerable question; a topic of the qrels the
run lacks is an empty context), so ``ir_measures.calc_aggregate`` and ``cruxflow.evaluate``
give one number (``tests/test_measures.py``).

**Qrels** are *graded diversity qrels*: ``topic subtopic passage rating``, one line per
(passage, sub-question) with the 0-5 answerability rating in the relevance column, which
carries a topic's whole answerability matrix (-1, "no rating", answers nothing). A passage
without a line for a sub-question answers nothing, as does a passage without lines.
:func:`graded_qrels` builds them from ratings. ``Den`` needs a ``tokens`` column (the
passage's token count) in the run and in the qrels (:func:`with_tokens`).

**Names ir_measures defines too** (``P``, ``R``, ``AP``, ``nDCG``, ``alpha_nDCG``): cruxflow's
objects (:data:`MEASURES`, e.g. ``MEASURES["alpha_nDCG"]``) carry their topic set in their
name, ``alpha_nDCG(topics='judged')@10``, so that they never pass for ir_measures' own
(``ir_measures.alpha_nDCG@10``: ndeval's ties by passage id ascending, every qrels topic), and
are not registered with ir_measures' parser; :func:`cruxflow.parse_measure` reads the name.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from ir_measures import Metric
from ir_measures import measures as _im
from ir_measures.measures.base import Agg

from cruxflow.metrics import names as N

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


class RegistryMeasure(_im.Measure):
    """An ir_measures measure computed by cruxflow's engine (:func:`cruxflow.evaluate`)."""

    QREL_INPUTS = ["query_id", "iteration", "doc_id", "relevance"]
    RUN_INPUTS = ["query_id", "doc_id", "score"]
    DEFINITION: N.MeasureDef
    DEFAULT = math.nan   # a qrels topic outside the name's topics: left out of the mean

    def aggregator(self):
        return _DefinedMean()

    def name(self) -> N.Name:
        """This measure's registry name."""
        params = {k: v for k, v in self.params.items() if k != "cutoff"}
        return N.parse(N.Name(self.DEFINITION.name, tuple(params.items()), self["cutoff"]))

    def __repr__(self):
        name = self.name()
        # a name ir_measures has too reads other qrels here (P* graded from the ratings; the
        # diversity qrels at eta): namespaced, never passing for ir_measures' own
        return str(name) if self.DEFINITION.name not in _OWN else f"{N.NAMESPACE}{name}"

    def runtime_impl(self, qrels, run) -> Iterator[Metric]:
        """Called by ir_measures' runtime provider with the qrels and run as frames; yields
        one value per topic of the name's topic set (NaN where undefined)."""
        from cruxflow.metrics.api import evaluate
        from cruxflow.metrics.inputs import Judgments

        name = self.name()
        if name.cutoff is None and not name.definition.cutoff_optional:
            raise ValueError(f"{self}: give a cutoff ({self}@10)")
        tokens = None
        if N.TOKENS in name.reads:
            if "tokens" not in qrels or "tokens" not in run:
                raise ValueError(f"{self} needs a 'tokens' column in the qrels and in the run "
                                 "(cruxflow.metrics.measures.with_tokens)")
            tokens = dict(zip(qrels["doc_id"], qrels["tokens"], strict=True))
            tokens.update(zip(run["doc_id"], run["tokens"], strict=True))
        judgments = Judgments(ratings=qrels[["query_id", "iteration", "doc_id", "relevance"]],
                              source="qrels")
        frame = evaluate(run[["query_id", "doc_id", "score"]], judgments, [name],
                         tokens=tokens)
        for qid, value in frame[str(name)].items():
            yield Metric(str(qid), self, float(value))


# the names ir_measures defines itself: ours are not registered with its parser
_OWN = {m for m in N.REGISTRY
        if m in _im.registry and getattr(_im.registry[m], "DEFINITION", None) is None}


def _measure(d: N.MeasureDef) -> RegistryMeasure:
    params = {"cutoff": _CUTOFF, **{k: _im.ParamInfo(dtype=p.dtype, default=p.default,
                                                      desc=p.desc) for k, p in d.params.items()}}
    inputs = {"RUN_INPUTS": [*RegistryMeasure.RUN_INPUTS, "tokens"],
              "QREL_INPUTS": [*RegistryMeasure.QREL_INPUTS, "tokens"]} \
        if N.TOKENS in d.reads else {}
    cls = type(f"_{d.name}", (RegistryMeasure,), {
        "__name__": d.name, "NAME": d.name if d.name not in _OWN else f"cruxflow.{d.name}",
        "DEFINITION": d, "PRETTY_NAME": d.label or d.name, "SHORT_DESC": d.definition,
        "SUPPORTED_PARAMS": params, **inputs})
    return cls()


MEASURES: dict[str, RegistryMeasure] = {d.name: _measure(d) for d in N.REGISTRY.values()}
Cov = MEASURES["Cov"]
alpha_nDCG_crux = MEASURES["alpha_nDCG_crux"]
Den = MEASURES["Den"]
alpha_nDCG_published = MEASURES["alpha_nDCG_published"]

for _name, _measure_object in MEASURES.items():
    if _name not in _OWN and _name not in _im.registry:   # ir_measures.parse_measure knows them
        _im.register(_measure_object)


def with_tokens(frame, counts: Mapping[str, int]):
    """``frame`` (qrels or run) with a ``tokens`` column from passage token counts."""
    missing = sorted(set(frame["doc_id"]) - set(counts))
    if missing:
        raise KeyError(f"no token count for {len(missing)} passages, e.g. {missing[0]!r}")
    return frame.assign(tokens=frame["doc_id"].map(counts).astype(int))


__all__ = ["MEASURES", "Cov", "Den", "RegistryMeasure", "alpha_nDCG_crux",
           "alpha_nDCG_published", "with_tokens"]

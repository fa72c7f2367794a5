"""``cruxflow.evaluate``: score a run from Python, under the names of :mod:`.names`.

    import cruxflow
    scores = cruxflow.evaluate("my.run", "crux-mds-duc04/judge",
                               measures=["Cov@10", "alpha_nDCG@10", "nDCG@10"])
    scores.mean()          # the defined mean: NaN (undefined, or outside a name's topics) left out

The argument order is ir_measures' (``calc_aggregate(measures, qrels, run)`` takes the
measures first; ``evaluate(run, judgments, measures)`` the run first, as ranx's
``evaluate(qrels, run, metrics)`` takes qrels first: docs/evaluate.md compares the three).
The values are those of the workflow's scorer and ``cruxflow evaluate``: the same
:class:`~cruxflow.metrics.scorer.ContextScorer`, the same definitions (each name's compute
function in the registry). Only the measures asked for are computed, each cutoff's contexts
once. What each argument may be: :mod:`cruxflow.metrics.inputs` (files, dicts, ir_measures
tuples, ranx objects, DataFrames with ir_measures' or PyTerrier's columns).

* ``judgments``: the ratings, relevance qrels and diversity qrels each measure reads
  (:data:`cruxflow.metrics.names.READS`): a dataset directory, a CRUX release subset folder
  (``crux-mds-duc04``: ``judge/`` and ``qrels/div_qrels-tau<eta>.txt``, so that every name
  crux-eval prints recomputes), a judge folder, graded diversity qrels, relevance qrels, or
  :class:`~cruxflow.metrics.inputs.Judgments` to say which is which.
* ``measures``: names (:mod:`cruxflow.metrics.names`); by default the CRUX paper's Table 1
  measures, ``Cov@oracle``, ``alpha_nDCG_crux@oracle`` and ``Den@oracle`` (Den where the
  texts are at hand: otherwise left out, with a warning and ``attrs["left_out"]``).
* ``texts`` (passage -> text, counted with the options' tokenizer; or the path of a passage
  collection, a JSONL file or a folder, or of a prepared dataset) or ``tokens`` (passage ->
  token count): needed by ``Den`` only. Without either, a dataset folder or a CRUX release
  subset folder given as ``judgments`` brings its own, as ``cruxflow evaluate`` finds them
  (a dataset's ``passages.jsonl``; the subset's ``docs/``, or ``crux-mds-corpus`` beside it).
  Where the texts are known, run lines ranking a passage outside them are counted.
* ``options``: :class:`~cruxflow.metrics.options.MetricOptions` (eta, alpha, density weight,
  relevance grades, tokenizer); a name's ``rel``, ``alpha`` or ``weight`` overrides it.

Topics (a name's ``topics`` parameter, docs/evaluate.md "Which topics a mean covers"): by
default, for CRUX's measures, the judged topics with an answerable question, and for a name
ir_measures has too (P, R, AP, nDCG, alpha_nDCG, Judged), every topic of the judgments it
reads, as ir_measures averages; a judged topic missing from the run has
an empty context (listed in ``frame.attrs["missing_in_run"]``); a run topic the judgments lack
is an error. What ``cruxflow evaluate`` says beside its table the frame says too, under the
same names and counts, in ``attrs`` and as Python warnings: ``missing_in_run``,
``topics_not_evaluated`` (judged topics without an answerable question, outside CRUX's
measures), ``run_lines_outside_collection``, ``den_undefined_no_text``, ``tied_topics``, and
``undefined`` (per name, the topics it covers where its value is undefined, NaN). Ratings read
from files that hold added ratings beside the original ones
(``cruxflow judge``'s, docs/ratings.md "Holes"; a list of paths is read as one) are counted by
source in ``frame.attrs["ratings_sources"]``. The frame has one row per topic some name covers,
in natural order; a cell outside a name's topics is NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import tie_warning
from cruxflow.datasets import resolve_judgments
from cruxflow.metrics import names as N
from cruxflow.metrics.options import DEFAULTS, MetricOptions

# The CRUX paper's measures of a retrieval context (Table 1: Cov(Z), alpha-nDCG and Den(Z) at
# k = |Z*|); Den where the passages' texts or token counts are at hand
DEFAULT_MEASURES = tuple(f"{m}@oracle" for m in N.PAPER_COLUMNS if m != "Judged")


def evaluate(run, judgments, measures=None, *, options: MetricOptions | None = None,
             texts=None, tokens: Mapping[str, int] | None = None):
    """One row per topic (index ``topic``), one column per measure name (in its canonical
    form, :func:`cruxflow.metrics.names.parse`). See the module's docstring."""
    import numpy as np
    import pandas as pd

    from cruxflow.data.runs import as_run
    from cruxflow.metrics.inputs import as_judgments, read_texts, texts_beside
    from cruxflow.metrics.scorer import ContextScorer

    base = options or DEFAULTS
    if not isinstance(base, MetricOptions):
        raise TypeError(f"options: a MetricOptions, not {type(base).__name__}")
    wanted = N.parse_all(DEFAULT_MEASURES if measures is None else measures)
    for name in wanted:
        if name.cutoff is None and not name.definition.cutoff_optional:
            raise ValueError(f"{name}: give a cutoff ({name}@10, or {name}@oracle for k = |Z*|)")
    if texts is not None and tokens is not None:
        raise ValueError("give texts or tokens, not both")
    resolved = resolve_judgments(judgments)
    given = as_judgments(resolved, base.eta)   # a set's name: its judgments
    lines = as_run(run)
    texts_from = None if texts is None else "texts="
    if texts is not None:
        texts = read_texts(texts)
    elif tokens is None and any(N.TOKENS in n.reads for n in wanted):
        texts, texts_from = texts_beside(resolved)   # as the command line finds them
    left_out = {}
    if texts is None and tokens is None:
        needs = [n for n in wanted if N.TOKENS in n.reads]
        if measures is None:   # the default: the paper's measures that can be computed
            wanted = [n for n in wanted if n not in needs]
            left_out = {str(n): "no passage texts (texts=) or token counts (tokens=), and the "
                        "judgments have none beside them" for n in needs}
        elif needs:
            raise ValueError(f"{needs[0]} needs the passages' texts (texts=: a mapping, or a "
                             "passage collection's path) or token counts (tokens=); a dataset "
                             "or CRUX release folder as judgments brings its own")
    if tokens is not None:
        texts, count = {p: p for p in tokens}, lambda p: int(tokens[p])
    else:
        count = _counter(base.tokenizer)
    scorer = ContextScorer(given, None, texts, count, base)
    if any(n["topics"] != "run" for n in wanted):   # as the command line refuses it
        unknown = scorer.unknown_topics(lines)
        if unknown:
            raise DataError(f"unknown topic {unknown[0]!r}: the judgments ({given.source}) do "
                            f"not hold it ({len(unknown)} run topics unknown); a name with "
                            "topics='run' leaves such topics out", record=f"query {unknown[0]}",
                            field="query_id")
    outside = 0
    if texts is not None and tokens is None:   # the collection: run lines outside it counted
        from cruxflow.data.runs import check_run

        outside = check_run(lines, set(lines.topics), texts,
                            run if isinstance(run, (str, Path)) else None)
    columns, tied = {}, np.zeros(len(scorer.topic_ids), dtype=bool)
    no_text: dict[str, list[str]] = {}
    topic_ids = np.array(scorer.topic_ids, dtype=object)
    for name in wanted:
        if N.TOKENS in name.reads:
            missing = scorer.oracle_without_text(scorer.arrays(*_eta_alpha(name, base)))
            if missing:
                raise DataError(f"no text or token count for passage {missing[0][1]!r} of Z* "
                                f"({len(missing)} passages): {name} needs every passage of Z*")
        columns[str(name)] = scorer.values(lines, name)
        tied |= scorer.tied(lines, name) & ~np.isnan(columns[str(name)])
        if N.TOKENS in name.reads:
            lacking = scorer.without_text(lines, name) & scorer.covered(lines, name)
            if lacking.any():
                no_text[str(name)] = topic_ids[lacking].tolist()
    # the rows: every topic some name covers (an undefined value of a covered topic is NaN)
    covered = np.zeros(len(scorer.topic_ids), dtype=bool)
    undefined = {}
    for name in wanted:
        mine = scorer.covered(lines, name)
        covered |= mine
        nan = mine & np.isnan(columns[str(name)])
        if nan.any():
            undefined[str(name)] = topic_ids[nan].tolist()
    judged = scorer.judged_mask(scorer.arrays())
    if not judged.any() and any(n["topics"] == "judged" for n in wanted):
        raise DataError(f"no topic to score: no judged topic has an answerable question at "
                        f"eta={base.eta}")
    out = pd.DataFrame({k: v[covered] for k, v in columns.items()},
                       index=pd.Index(topic_ids[covered].tolist(), name="topic"))
    present = scorer.run_index(lines).present
    out.attrs["missing_in_run"] = topic_ids[covered & ~present].tolist()
    out.attrs["tied_topics"] = topic_ids[tied].tolist()
    # what the command line says beside its table, under the same names and counts
    out.attrs["topics_not_evaluated"] = topic_ids[~judged].tolist() \
        if any(n["topics"] == "judged" for n in wanted) else []
    out.attrs["run_lines_outside_collection"] = outside
    out.attrs["den_undefined_no_text"] = no_text
    out.attrs["undefined"] = undefined
    out.attrs["texts"] = texts_from
    if left_out:
        out.attrs["left_out"] = left_out
    if given.sources:   # original and added ratings (cruxflow judge's): how many of each
        out.attrs["ratings_sources"] = given.sources
    for line in _notes(out.attrs, len(out)):
        warnings.warn(line, stacklevel=2)
    return out


def _notes(attrs: dict, rows: int) -> list[str]:
    """The frame's warnings, as the command line words them
    (:func:`cruxflow.metrics.evaluate.evaluation_notes`), and the tie warning."""
    from cruxflow.metrics.evaluate import evaluation_notes

    lines = [line.removeprefix("warning: ") for line in evaluation_notes(attrs)]
    for name, why in attrs.get("left_out", {}).items():
        lines.append(f"{name} left out of the default measures: {why}")
    tie = tie_warning(attrs["tied_topics"], rows)
    return lines + ([tie] if tie else [])


def _eta_alpha(name: N.Name, base: MetricOptions) -> tuple[int, float]:
    opts = name.options(base)
    return opts.eta, opts.alpha


def _counter(tokenizer):
    from cruxflow.metrics.tokens import make_token_counter

    return make_token_counter(tokenizer)

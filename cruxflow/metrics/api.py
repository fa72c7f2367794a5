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
* ``texts`` (passage -> text, counted with the options' tokenizer) or ``tokens`` (passage ->
  token count): needed by ``Den`` only.
* ``options``: :class:`~cruxflow.metrics.options.MetricOptions` (eta, alpha, density weight,
  relevance grades, tokenizer); a name's ``rel``, ``alpha`` or ``weight`` overrides it.

Topics (a name's ``topics`` parameter, docs/evaluate.md "Which topics a mean covers"): by
default the judged topics with an answerable question; a judged topic missing from the run has
an empty context (listed in ``frame.attrs["missing_in_run"]``); a run topic the judgments lack
is an error. Ratings read from files that hold added ratings beside the original ones
(``cruxflow judge``'s, docs/ratings.md "Holes"; a list of paths is read as one) are counted by
source in ``frame.attrs["ratings_sources"]``. The frame has one row per topic some name covers,
in natural order; a cell outside a name's topics is NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from cruxflow.data.errors import DataError
from cruxflow.data.io import tie_warning
from cruxflow.datasets import resolve_judgments
from cruxflow.metrics import names as N
from cruxflow.metrics.options import DEFAULTS, MetricOptions

DEFAULT_MEASURES = ("Cov@oracle", "alpha_nDCG_crux@oracle", "Cov@10", "alpha_nDCG@10",
                    "nDCG@10")


def evaluate(run, judgments, measures=DEFAULT_MEASURES, *, options: MetricOptions | None = None,
             texts: Mapping[str, str] | None = None, tokens: Mapping[str, int] | None = None):
    """One row per topic (index ``topic``), one column per measure name (in its canonical
    form, :func:`cruxflow.metrics.names.parse`). See the module's docstring."""
    import numpy as np
    import pandas as pd

    from cruxflow.data.runs import as_run
    from cruxflow.metrics.inputs import as_judgments
    from cruxflow.metrics.scorer import ContextScorer

    base = options or DEFAULTS
    wanted = N.parse_all(measures)
    for name in wanted:
        if name.cutoff is None and not name.definition.cutoff_optional:
            raise ValueError(f"{name}: give a cutoff ({name}@10, or {name}@oracle for k = |Z*|)")
    given = as_judgments(resolve_judgments(judgments), base.eta)   # a set's name: its judgments
    lines = as_run(run)
    if texts is not None and tokens is not None:
        raise ValueError("give texts or tokens, not both")
    if tokens is not None:
        texts, count = {p: p for p in tokens}, lambda p: int(tokens[p])
    else:
        count = _counter(base.tokenizer)
    scorer = ContextScorer(given, None, texts, count, base)
    for name in wanted:
        if N.TOKENS in name.reads and texts is None:
            raise ValueError(f"{name} needs the passages' texts (texts=) or token counts "
                             "(tokens=)")
    if any(n["topics"] != "run" for n in wanted):   # as the command line refuses it
        unknown = scorer.unknown_topics(lines)
        if unknown:
            raise DataError(f"unknown topic {unknown[0]!r}: the judgments ({given.source}) do "
                            f"not hold it ({len(unknown)} run topics unknown); a name with "
                            "topics='run' leaves such topics out", record=f"query {unknown[0]}",
                            field="query_id")
    columns, tied = {}, np.zeros(len(scorer.topic_ids), dtype=bool)
    for name in wanted:
        if N.TOKENS in name.reads:
            missing = scorer.oracle_without_text(scorer.arrays(*_eta_alpha(name, base)))
            if missing:
                raise DataError(f"no text or token count for passage {missing[0][1]!r} of Z* "
                                f"({len(missing)} passages): {name} needs every passage of Z*")
        columns[str(name)] = scorer.values(lines, name)
        tied |= scorer.tied(lines, name) & ~np.isnan(columns[str(name)])
    # the rows: every topic some name covers (an undefined value of a covered topic is NaN)
    covered = np.zeros(len(scorer.topic_ids), dtype=bool)
    for name in wanted:
        covered |= scorer.covered(lines, name)
    if not scorer.judged_mask(scorer.arrays()).any() and \
            any(n["topics"] == "judged" for n in wanted):
        raise DataError(f"no topic to score: no judged topic has an answerable question at "
                        f"eta={base.eta}")
    topic_ids = np.array(scorer.topic_ids, dtype=object)
    out = pd.DataFrame({k: v[covered] for k, v in columns.items()},
                       index=pd.Index(topic_ids[covered].tolist(), name="topic"))
    present = scorer.run_index(lines).present
    out.attrs["missing_in_run"] = topic_ids[covered & ~present].tolist()
    out.attrs["tied_topics"] = topic_ids[tied].tolist()
    if given.sources:   # original and added ratings (cruxflow judge's): how many of each
        out.attrs["ratings_sources"] = given.sources
    line = tie_warning(out.attrs["tied_topics"], len(out))
    if line:
        warnings.warn(line, stacklevel=2)
    return out


def _eta_alpha(name: N.Name, base: MetricOptions) -> tuple[int, float]:
    opts = name.options(base)
    return opts.eta, opts.alpha


def _counter(tokenizer):
    from cruxflow.metrics.tokens import make_token_counter

    return make_token_counter(tokenizer)

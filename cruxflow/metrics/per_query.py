"""The per-query table of a run's contexts: one row per evaluated topic and context size k,
every column of :func:`cruxflow.metrics.names.table_columns` (what the workflow's
``context_metrics`` writes and ``cruxflow evaluate`` prints), computed by a
:class:`~cruxflow.metrics.scorer.ContextScorer`, and the means over topics (:func:`aggregate`).

:func:`many_rows` scores several runs (and sizes) in one call: the contexts of one k and one
width are stacked as the rows of one matrix and every measure is called once per stack,
against the judgments' arrays gathered per row (:meth:`~cruxflow.metrics.judged.TopicArrays.
take`): the same values, to the last bit, as run by run, without numpy's and pandas' cost per
call for every run (21 runs x 3 sizes over 200 topics: 0.09 s, not 0.14 s;
``benchmarks/metrics.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cruxflow.metrics import names
from cruxflow.metrics.cuts import Contexts, Cut

# many_rows' stacks: about this many topic rows (runs x topics) per call of a measure
STACK_ROWS = 1 << 13


def many_rows(scorer, cases) -> pd.DataFrame:
    """The per-query table's rows of each ``(run, system, k)`` of ``cases`` (``scorer``: the
    engine, :class:`~cruxflow.metrics.scorer.ContextScorer`; every column of
    :func:`~cruxflow.metrics.scorer.measure_columns` at cutoff k, over the evaluated topics),
    as one frame (their rows in the order of ``cases``): the same values as case by case,
    with one call of each measure for a stack of contexts (the cases of one k whose contexts
    have the same width, up to about :data:`STACK_ROWS` topic rows) instead of one call per
    case."""
    cases = list(cases)
    arrays = scorer.arrays()
    keep = scorer.judged_mask(arrays)
    n_topics = len(scorer.topic_ids)
    parts: list[dict] = []
    found: list[Contexts] = []
    stacks: dict[tuple, list[int]] = {}
    for i, (run, _, k) in enumerate(cases):
        ctx = scorer.contexts(run, scorer.columns_at(k)["Cov"])
        tokens, no_text = ctx.tokens()
        found.append(ctx)
        parts.append({"context_size": ctx.n[keep], "tokens": tokens[keep],
                      "in_run": scorer.run_index(run).present[keep], "no_text": no_text})
        stacks.setdefault((k, ctx.rows.shape[1]), []).append(i)
    per_stack = max(1, STACK_ROWS // max(1, n_topics))
    for (k, _), members in stacks.items():
        columns = scorer.columns_at(k)
        for group in np.array_split(members, -(-len(members) // per_stack)):
            group = group.tolist()
            ctx = _stacked(scorer, [found[i] for i in group])
            for column in scorer.columns:
                value = scorer.values_on(ctx, columns[column]).reshape(len(group), n_topics)
                for i, row in zip(group, value, strict=True):
                    parts[i][column] = row[keep]
    for (_, _, k), part in zip(cases, parts, strict=True):   # as rows() one case after another
        scorer.den_undefined[str(k)] = scorer.topic_array[keep & part["no_text"]].tolist()
    topic = scorer.topic_column(arrays, keep)
    n = len(topic)
    table = {"system": _repeated([s for _, s, _ in cases], n, topic),
             "k": _repeated([str(k) for _, _, k in cases], n, topic),
             "topic": topic if len(cases) == 1 else topic.take(np.tile(np.arange(n),
                                                                      len(cases)))}
    for column in ["context_size", "in_run", "tokens", *scorer.columns]:
        table[column] = np.concatenate([part[column] for part in parts]) if parts else []
    return pd.DataFrame(table)


def _repeated(values: list[str], n: int, like):
    """``values[0]`` n times, then ``values[1]`` n times, ..., as a column of ``like``'s type:
    taken from an array of the values (quicker than a string per row); one value stays a
    scalar over many rows (pandas broadcasts it quicker still) and a list over a few."""
    if len(values) == 1:
        return values[0] if n > 2000 else pd.array(values * n, dtype=like.dtype)
    return pd.array(values, dtype=like.dtype).take(np.repeat(np.arange(len(values)), n))


def _stacked(scorer, found: list[Contexts]) -> Contexts:
    """Contexts of one width and one arrays as one: their rows stacked, against the arrays
    taken for the stack's height, with the token counts each already has."""
    if len(found) == 1:
        return found[0]
    arrays = found[0].arrays
    cut = Cut(*(np.concatenate([getattr(c.cut, part) for c in found]) for part in
                ("rows", "code", "n", "size", "in_run", "tied")), None)
    tokens = [c.tokens() for c in found]
    cut.cache[("tokens", arrays.eta, arrays.alpha)] = tuple(
        np.concatenate([t[i] for t in tokens]) for i in (0, 1))
    return Contexts(cut, scorer.stacked_arrays(arrays, len(found)), scorer)


def aggregate(per_query: pd.DataFrame) -> pd.DataFrame:
    """Means over topics per (system, k); NaN values (undefined for a topic) are skipped. Each
    mean is a correctly rounded sum (``math.fsum``) over the count: the same whatever the
    order of the topics."""
    cols = [c for c in per_query.columns if _is_measure(c)]
    grouped = per_query.groupby(["system", "k"], sort=False)
    table = grouped[cols].agg(_mean)
    table.insert(0, "topics", grouped["topic"].nunique())
    table.insert(1, "missing_in_run", grouped["in_run"].apply(lambda s: int((~s).sum())))
    return table.reset_index()


def _mean(values: pd.Series) -> float:
    kept = [v for v in values.tolist() if not math.isnan(v)]
    return math.fsum(kept) / len(kept) if kept else math.nan


def _is_measure(column: str) -> bool:
    try:
        names.parse(column)
    except ValueError:
        return False
    return True

"""The compute functions of the registered measures (:data:`cruxflow.metrics.names.REGISTRY`).

Each takes the run's contexts at one cutoff (:class:`cruxflow.metrics.scorer.Contexts`: the
contexts as rows of each topic's matrices, the arrays of the judgments at the name's eta and
alpha, the passages' token counts) and the parsed name, and returns one value per topic of
the judgments (``contexts.topic_ids``), NaN where the measure is undefined for the topic.
Which topics enter a mean is not decided here: the scorer applies the name's ``topics``
parameter to these values. The arithmetic is on arrays, for every topic at once
(:mod:`cruxflow.metrics.judged`); ``tests/test_metrics_fast.py`` checks it against the
per-topic reference functions and ir_measures.
"""

from __future__ import annotations

import math

import numpy as np

from cruxflow.metrics.options import NDEVAL_CUTOFF


def _divide(numerator, denominator) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (a count: no division by 0
    happens, so no error state needs setting)."""
    return np.where(denominator > 0, numerator / np.maximum(denominator, 1), np.nan)


def _answered_and_dcg(ctx) -> tuple[np.ndarray, np.ndarray]:
    """How many answerable questions each context answers and its alpha-DCG (Eq. 4's
    numerator), from one pass over the context (shared by Cov, alpha_nDCG_crux and Den)."""
    return ctx.shared("crux", lambda: ctx.arrays.answered_and_dcg(ctx.rows))


def _answered(ctx) -> np.ndarray:
    return _answered_and_dcg(ctx)[0]


# --- CRUX -------------------------------------------------------------------------------------

def coverage(ctx, name) -> np.ndarray:
    """Cov (Eq. 3): answered questions / the answerable ones (``questions='all'``: / all)."""
    a = ctx.arrays
    total = a.index.n_questions if name["questions"] == "all" else a.n_kept
    return _divide(_answered(ctx), total)


def alpha_ndcg_crux(ctx, name) -> np.ndarray:
    """alpha-nDCG of Eq. 4-5, the ideal over Z* (NaN without an answerable question)."""
    return ctx.arrays.alpha_ndcg(ctx.rows, _answered_and_dcg(ctx)[1])


def density(ctx, name) -> np.ndarray:
    """Den (Eq. 6) against Z*; undefined where a passage of the context has no text."""
    a = ctx.arrays
    cov = _divide(_answered(ctx), a.n_kept)
    tokens, no_text = ctx.tokens()
    value = a.density(cov, tokens, ctx.oracle_tokens(), name["weight"])
    return np.where(no_text, np.nan, value)


def judged(ctx, name) -> np.ndarray:
    """Judged@k (ir_measures' ``Judged``): the share of the top k passages that the topic's
    judge rated, over the passages the context holds (a list shorter than k: its length);
    undefined for an empty context."""
    rated = ctx.arrays.index.rated[np.arange(len(ctx.rows))[:, None], ctx.rows]
    return _divide(rated.sum(axis=1), ctx.n)


# --- trec_eval's measures on the relevance (or binary diversity) qrels --------------------------

def _qrels(ctx, name) -> tuple[np.ndarray, np.ndarray]:
    """(``grade[t, row]``, the topics these qrels hold) of the qrels the name reads, made once
    per judgments."""
    a = ctx.arrays
    if name["qrels"] != "diversity":
        return a.grades, a.relevance_topics

    def binary():       # rac_eval.py's binary qrels: relevant lines only
        grade = a.ndeval_rel.any(axis=2).astype(np.int64)
        return grade, a.diversity_topics & grade.any(axis=1)
    return a.memo("binary qrels", binary)


def _relevance(ctx, name) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(``grade[t, row]``, how many passages are relevant at the name's ``rel`` per topic,
    each context's hits in rank order, the topics these qrels hold) for the qrels the name
    reads; each made once per judgments or context and shared by the measures."""
    grade, topics = _qrels(ctx, name)
    key = (name["qrels"], name.get("rel", 1))
    relevant = ctx.arrays.memo(("relevant", *key), lambda: grade >= key[1])
    n_rel = ctx.arrays.memo(("relevant count", *key), lambda: relevant.sum(axis=1))
    hits = ctx.shared(("hits", *key), lambda: relevant[np.arange(len(grade))[:, None],
                                                        ctx.rows])
    return grade, n_rel, hits, topics


def _discount(width: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..width, with the C library's log2 (trec_eval's)."""
    return np.array([math.log2(r + 2) for r in range(width)])


def _last(cumulative: np.ndarray) -> np.ndarray:
    """The last column of a cumulative sum (0 for no column): sums in rank order."""
    return cumulative[:, -1] if cumulative.shape[1] else np.zeros(cumulative.shape[0])


def recall(ctx, name) -> np.ndarray:
    """R@k: relevant passages in the context / relevant passages (0 where none is)."""
    _, n_rel, hits, topics = _relevance(ctx, name)
    value = np.where(n_rel > 0, hits.sum(axis=1) / np.maximum(n_rel, 1), 0.0)
    return np.where(topics, value, np.nan)


def precision(ctx, name) -> np.ndarray:
    """P@k: relevant passages in the context / k (trec_eval's P_k divides by k)."""
    _, _, hits, topics = _relevance(ctx, name)
    return np.where(topics, _divide(hits.sum(axis=1), ctx.size), np.nan)


def average_precision(ctx, name) -> np.ndarray:
    """AP@k (trec_eval's map_cut_k): the precision at each relevant passage of the context,
    summed in rank order, over the topic's relevant passages."""
    _, n_rel, hits, topics = _relevance(ctx, name)
    ranks = np.arange(1, hits.shape[1] + 1)
    precisions = np.where(hits, np.cumsum(hits, axis=1) / ranks, 0.0)
    total = _last(np.cumsum(precisions, axis=1))
    value = np.where(n_rel > 0, total / np.maximum(n_rel, 1), 0.0)
    return np.where(topics, value, np.nan)


def ndcg(ctx, name) -> np.ndarray:
    """nDCG@k (trec_eval's ndcg_cut_k): the grades as gains over log2(rank + 1), over the same
    for the topic's grades sorted, both cut at k; 0 where the ideal is 0."""
    grade, topics = _qrels(ctx, name)
    gains = np.maximum(grade, 0)
    ranked = gains[np.arange(len(grade))[:, None], ctx.rows]
    dcg = _last(np.cumsum(ranked / _discount(ranked.shape[1]), axis=1))

    def ideal():        # the DCG of the topic's grades sorted, at every rank (one per qrels)
        best = -np.sort(-gains[:, :-1], axis=1)
        return np.cumsum(best / _discount(best.shape[1]), axis=1)
    ideal_dcg = ctx.arrays.memo(("ideal DCG", name["qrels"]), ideal)
    if ideal_dcg.shape[1]:
        at = np.minimum(ctx.size, ideal_dcg.shape[1])
        ideal_dcg = np.where(at > 0, ideal_dcg[np.arange(len(at)), np.maximum(at, 1) - 1], 0.0)
    else:
        ideal_dcg = np.zeros(len(grade))
    value = np.where(ideal_dcg > 0, dcg / np.where(ideal_dcg > 0, ideal_dcg, 1.0), 0.0)
    return np.where(topics, value, np.nan)


# --- ndeval -----------------------------------------------------------------------------------

def _ndeval_dcg(ctx) -> np.ndarray:
    """ndeval's cumulative alpha-DCG of each context at ranks 1..20, computed once."""
    return ctx.shared("ndeval", lambda: ctx.arrays.ndeval_ranked_dcg(ctx.rows))


def _ratio(dcg: np.ndarray, ideal: np.ndarray) -> np.ndarray:
    return np.where((dcg == 0) | (ideal == 0), 0.0, dcg / np.where(ideal == 0, 1, ideal))


def alpha_ndcg_ndeval(ctx, name) -> np.ndarray:
    """ndeval's alpha-nDCG@k (the ideal over the diversity qrels at rank k; 0 where nothing
    is gained; NaN above rank 20, where ndeval stops)."""
    a = ctx.arrays
    at = np.clip(ctx.size, 1, NDEVAL_CUTOFF)[:, None] - 1
    value = _ratio(np.take_along_axis(_ndeval_dcg(ctx), at, axis=1)[:, 0],
                   np.take_along_axis(a.ndeval_ideal, at, axis=1)[:, 0])
    value = np.where(ctx.size > NDEVAL_CUTOFF, np.nan, value)
    return np.where(a.diversity_topics, value, np.nan)


def alpha_ndcg_published(ctx, name) -> np.ndarray:
    """The CRUX paper's tables' alpha-nDCG: ndeval's alpha-nDCG@20 of the context (its first
    20 passages) against ndeval's ideal over P* at rank 20, whatever the context's size."""
    a = ctx.arrays
    value = _ratio(_ndeval_dcg(ctx)[:, -1], a.ndeval_ideal[:, -1])
    return np.where(a.diversity_topics, value, np.nan)

"""ndeval's alpha-nDCG arithmetic on arrays, for every topic at once (ndeval.c's computeDCG and
idealResult, as pyndeval runs them): used by the judgments' arrays (:mod:`cruxflow.metrics.judged`)
and the compute functions (:mod:`cruxflow.metrics.compute`), and checked against pyndeval value
for value (``tests/oracles/libraries.py``)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from cruxflow.metrics.options import NDEVAL_CUTOFF


def ndeval_dcg(rel: np.ndarray, alpha: float, actual: np.ndarray,
               ideal_ideal: np.ndarray | None = None) -> np.ndarray:
    """alpha-DCG at ranks 1..20 of ranked judgments ``rel`` (topics x ranks x subtopics,
    subtopics in ndeval's order), as ndeval.c's computeDCG forms it: column r - 1 holds the
    cumulative gain at rank r, from rank 2 on divided by the "ideal ideal" gain (each of the
    topic's ``actual`` subtopics, those with a relevant passage in the qrels, covered at every
    rank; ``ideal_ideal``: :func:`ideal_ideal_gain` of ``actual``, where already made). ndeval's
    alpha-nDCG@k divides the run's value by the ideal ranking's (both from here), so the
    operations are ndeval's own, in its order, for the quotient to come out the same to the
    last bit."""
    if ideal_ideal is None:
        ideal_ideal = ideal_ideal_gain(actual, alpha)
    # a block of topics at a time, whose arrays stay in the cache (1.7x faster at 5,000
    # topics than all at once)
    step = max(1, _BLOCK_CELLS // max(1, rel.shape[1] * rel.shape[2]))
    if rel.shape[0] > step:
        return np.concatenate([ndeval_dcg(rel[s:s + step], alpha, actual[s:s + step],
                                          ideal_ideal[:, s:s + step])
                               for s in range(0, rel.shape[0], step)])
    n_topics, ranks = rel.shape[0], min(NDEVAL_CUTOFF, rel.shape[1])
    # subtopics x ranks x topics, so that each rank's rows are contiguous; a subtopic's gain
    # at a rank: 1 - alpha to the power of the ranks above that are judged for it, the power
    # formed as ndeval forms it (multiplied in rank after rank)
    judged = np.ascontiguousarray(np.moveaxis(rel[:, :ranks], (2, 1), (0, 1)))
    gain = np.take(_powers(1.0 - alpha, ranks), seen_before(judged))
    gain *= judged
    dcg = np.zeros((NDEVAL_CUTOFF, n_topics))     # ranks x topics, then cumulated
    dcg[:ranks] = _sum_in_order(gain) * _DISCOUNT_COLUMN[:ranks]
    np.cumsum(dcg, axis=0, out=dcg)
    positive = ideal_ideal[1:] > 0
    dcg[1:] = np.where(positive, dcg[1:] / np.where(positive, ideal_ideal[1:], 1.0), 0.0)
    return np.ascontiguousarray(dcg.T)


def ideal_ideal_gain(actual: np.ndarray, alpha: float) -> np.ndarray:
    """ndeval's "ideal ideal" cumulative gain (ranks x topics): every one of a topic's
    ``actual`` subtopics covered at every rank. It depends on the topic's number of actual
    subtopics only (one row per number)."""
    counts, row = np.unique(np.asarray(actual, dtype=float), return_inverse=True)
    ideal_ideal = np.zeros((NDEVAL_CUTOFF, len(counts)))
    for rank in range(NDEVAL_CUTOFF):
        ideal_ideal[rank] = counts * _DISCOUNT[rank]
        counts = counts * (1.0 - alpha)
    return np.cumsum(ideal_ideal, axis=0)[:, row.reshape(-1)]


def ndeval_ideal(rel: np.ndarray, id_rank: np.ndarray, alpha: float,
                 depth: int = NDEVAL_CUTOFF) -> np.ndarray:
    """ndeval.c's idealResult as :func:`ndeval_dcg`'s cumulative alpha-DCG: rank by the
    largest gain given the ranks above, ties to the larger passage id (``id_rank[t, p]``: the
    passage's place among the topic's ids in string order, as strcmp orders them); only the
    passages judged for some subtopic (``rel``: topics x passages x subtopics) take part, and
    only its first 20 ranks count. ``depth``: only the first ``depth`` ranks are chosen (the
    value at rank ``depth`` is the same; the columns past it are not ndeval's)."""
    n_topics = rel.shape[0]
    judged = rel.any(axis=2)
    gain = np.ones((n_topics, rel.shape[2]))
    ranked = np.zeros((n_topics, NDEVAL_CUTOFF, rel.shape[2]), dtype=bool)
    everyone = np.arange(n_topics)
    by_subtopic = _by_subtopic(rel)
    for rank in range(min(NDEVAL_CUTOFF, depth, judged.shape[1])):
        if not judged.any():
            break
        score = _ndeval_score(by_subtopic, gain.T[:, :, None])
        best = np.where(judged, score, -np.inf).max(axis=1)
        tied = judged & (score == best[:, None])
        pick = np.argmax(np.where(tied, id_rank, -2), axis=1)
        active = judged[everyone, pick]
        ranked[:, rank] = rel[everyone, pick] & active[:, None]
        judged[everyone, pick] = False
        gain = np.where(ranked[:, rank], gain * (1.0 - alpha), gain)
    return ndeval_dcg(ranked, alpha, actual_subtopics(rel))


def actual_subtopics(rel: np.ndarray) -> np.ndarray:
    """ndeval's "actual subtopics" of each topic of ``rel`` (topics x passages x subtopics):
    those with a relevant passage."""
    return rel.any(axis=1).sum(axis=1)


@lru_cache(maxsize=64)
def _powers(base: float, n: int) -> np.ndarray:
    """base ** 0, base ** 1, ..., base ** n, each the one before multiplied by base (ndeval's
    gains are so formed, rank after rank); made once per (base, n), read only."""
    out = np.ones(n + 1)
    for i in range(1, n + 1):
        out[i] = out[i - 1] * base
    out.flags.writeable = False
    return out


# ndeval.c's discount: log(2) / log(rank + 2) for ranks from 0
_DISCOUNT = [1.0] + [math.log(2.0) / math.log(rank + 2.0) for rank in range(1, NDEVAL_CUTOFF)]
_DISCOUNT_COLUMN = np.array(_DISCOUNT)[:, None]
# cells (topics x ranks x subtopics) of ranked judgments handled at once
_BLOCK_CELLS = 1 << 19


def _by_subtopic(rel: np.ndarray) -> np.ndarray:
    """Judgments (... x subtopics, bool), subtopics first: one contiguous array each."""
    return np.ascontiguousarray(np.moveaxis(rel, -1, 0))


def seen_before(hits: np.ndarray) -> np.ndarray:
    """``hits`` (bool, ranks on axis 1) counted over the ranks before each: ``cumsum(hits,
    axis=1) - hits`` (exact: integers). A small array in two calls; a large one a rank at
    a time (numpy's cumsum along an inner axis is several times slower per element)."""
    if hits.size <= _CUMSUM_CELLS:
        seen = np.cumsum(hits, axis=1, dtype=np.intp)   # np.take reads the index type as is
        seen -= hits
        return seen
    seen = np.empty(hits.shape, dtype=np.intp)
    if hits.shape[1]:
        seen[:, 0] = 0
    for r in range(1, hits.shape[1]):
        np.add(seen[:, r - 1], hits[:, r - 1], out=seen[:, r])
    return seen


# arrays of at most this many cells are counted by one cumsum (seen_before)
_CUMSUM_CELLS = 1 << 16


def _sum_in_order(gain: np.ndarray) -> np.ndarray:
    """The sum over the first axis (subtopics), added one subtopic after the other as ndeval
    adds them (0 without a subtopic)."""
    if not len(gain):
        return np.zeros(gain.shape[1:])
    score = gain[0].copy()
    for s in range(1, len(gain)):
        score += gain[s]
    return score


def _ndeval_score(by_subtopic: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Sum of the gains of the subtopics a passage is judged for, added one subtopic after
    the other in ndeval's order (``by_subtopic[s]``: True where judged for subtopic s, taken
    as 1.0; a 0.0 * gain added for the others leaves the sum unchanged, bit for bit)."""
    score = by_subtopic[0] * gain[0]
    for s in range(1, len(by_subtopic)):
        score += by_subtopic[s] * gain[s]
    return score

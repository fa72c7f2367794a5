"""CRUX's context metrics and ndeval's alpha-nDCG for every topic at once, on arrays.

The per-topic functions (:mod:`cruxflow.metrics.crux`, :func:`cruxflow.metrics.ir.
per_query_ndeval`) are the reference; these compute the same numbers for a whole run's
contexts with numpy, because at the paper's scale (4,986 topics x 21 pipelines x 3 sizes) a
Python loop over topics, or ndeval's per-query conversions, cost minutes (issue 19).
``tests/test_metrics_fast.py`` compares both routes on random cases.

What is built once per dataset (:class:`TopicArrays`): per topic, which rated passage answers
which answerable question (Eq. 2), the ideal DCG of Eq. 4 over Z*, and ndeval's ideal DCG@20
over P*. Per run (:meth:`TopicArrays.flatten`): the rows of the rating matrix that its ranked
passages are. Per context size: the metrics, by gathering those rows.

Where a choice depends on comparing floats (the greedy ideal orders), the sums are formed in
the reference's order so that ties break the same way: Eq. 4's ideal sums a passage's gains
over the answerable questions as numpy does for one row (topics are grouped by their number of
answerable questions, so every row has the reference's length); ndeval's ideal adds the gains
one subtopic after another in ndeval's subtopic order and multiplies them by 1 - alpha in
place, as ndeval.c does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np

from cruxflow.metrics.options import NDEVAL_CUTOFF

# Arrays of (topics x ranks x questions) floats are built in chunks of about this many cells.
_CHUNK_CELLS = 1 << 22


class FlatRun:
    """One run's ranked lists as arrays (see :meth:`TopicArrays.flatten`): ``row[t, r]`` is
    the row of the rating matrix of topic t that its rank r holds (the "not rated" row for a
    passage the topic did not rate, or past the list's end), ``code[t, r]`` the passage's
    number (-1 past the end), ``length[t]`` the list's length and ``doc_ids[t]`` the ids."""

    def __init__(self, row: np.ndarray, code: np.ndarray, length: np.ndarray,
                 doc_ids: list[list[str]], in_run: np.ndarray):
        self.row, self.code, self.length = row, code, length
        self.doc_ids, self.in_run = doc_ids, in_run


class TopicArrays:
    """Everything a context of one of ``judgments``' topics is scored against, as arrays.

    ``judgments`` are the evaluated topics (each with at least one answerable question), in
    the order of the scorer's output; ``matrix`` is ``Dataset.ratings_by_topic()``.
    """

    def __init__(self, judgments: Mapping, matrix: Mapping[str, Mapping[str, Sequence[int]]],
                 eta: int, alpha: float):
        self.topic_ids = list(judgments)
        self.eta, self.alpha = eta, alpha
        n_topics = len(self.topic_ids)
        self.row_of: list[dict[str, int]] = []
        # every passage a run has shown, numbered, with its token count (-1: not counted yet)
        self.passage_code: dict[str, int] = {}
        self.passage_ids: list[str] = []
        self.passage_tokens = np.zeros(0, dtype=np.int64)
        self.n_kept = np.array([len(judgments[t].kept) for t in self.topic_ids], dtype=int)
        n_q = int(self.n_kept.max(initial=1))
        n_rows = max((len(matrix.get(t, {})) for t in self.topic_ids), default=0)
        self.none = n_rows   # the row index of "not rated": it answers nothing
        # answers[t, row, i]: the passage answers the topic's i-th answerable question (Eq. 2)
        self.answers = np.zeros((n_topics, n_rows + 1, n_q), dtype=bool)
        for t, tid in enumerate(self.topic_ids):
            rated = matrix.get(tid, {})
            self.row_of.append({p: r for r, p in enumerate(rated)})
            if rated:
                kept = judgments[tid].kept
                m = np.asarray(list(rated.values()), dtype=int)[:, kept]
                self.answers[t, :len(rated), :len(kept)] = m >= eta
        # (topic, passage number) -> row, as sorted keys: a run's passages find their rows at once
        rated_codes = self._codes([list(rated) for rated in self.row_of])
        keys = _keys(rated_codes)[rated_codes >= 0]
        rows = np.broadcast_to(np.arange(rated_codes.shape[1]), rated_codes.shape)
        order = np.argsort(keys)
        self._rated_keys, self._rated_rows = keys[order], rows[rated_codes >= 0][order]
        self.required_rows = self._rows([judgments[t].required for t in self.topic_ids])
        self.oracle_coverage = self.coverage(self.required_rows)
        self.ideal_dcg = self._ideal_dcg(self.required_rows)
        self._ndeval_qrels(judgments)

    # --- building blocks ------------------------------------------------------------------

    def _codes(self, lists: Sequence[Sequence[str]]) -> np.ndarray:
        """The passages' numbers (new passages get the next ones; -1 past a list's end)."""
        length = np.array([len(x) for x in lists], dtype=int)
        codes = np.full((len(lists), int(length.max(initial=0))), -1, dtype=np.int64)
        known, ids = self.passage_code, self.passage_ids
        flat = list(chain.from_iterable(lists))
        numbers = [known.get(p, -1) for p in flat]
        for i in [i for i, c in enumerate(numbers) if c < 0]:
            c = known.get(flat[i])         # a passage ranked twice is numbered once
            if c is None:
                c = known[flat[i]] = len(ids)
                ids.append(flat[i])
            numbers[i] = c
        codes[np.arange(codes.shape[1])[None, :] < length[:, None]] = numbers
        grown = len(ids) - len(self.passage_tokens)
        self.passage_tokens = np.concatenate([self.passage_tokens, np.full(grown, -1)])
        return codes

    def _rows_of(self, codes: np.ndarray) -> np.ndarray:
        """The row of each passage in its topic's rating matrix (``none``: not rated)."""
        keys = _keys(codes)
        at = np.minimum(np.searchsorted(self._rated_keys, keys), len(self._rated_keys) - 1)
        if not len(self._rated_keys):
            return np.full(codes.shape, self.none)
        found = (self._rated_keys[at] == keys) & (codes >= 0)
        return np.where(found, self._rated_rows[at], self.none)

    def _rows(self, lists: Sequence[Sequence[str]]) -> np.ndarray:
        return self._rows_of(self._codes(lists))

    def _chunks(self, width: int):
        step = max(1, _CHUNK_CELLS // max(1, width * self.answers.shape[2]))
        for start in range(0, len(self.topic_ids), step):
            yield slice(start, min(start + step, len(self.topic_ids)))

    def _hits(self, rows: np.ndarray, topics: slice) -> np.ndarray:
        index = np.arange(len(self.topic_ids))[topics, None]
        return self.answers[index, rows[topics]]

    # --- the metrics -------------------------------------------------------------------------

    def coverage(self, rows: np.ndarray) -> np.ndarray:
        """Cov(Z) (Eq. 3) of every topic's context, given as rows (:func:`crux.coverage`)."""
        out = np.empty(len(self.topic_ids))
        for part in self._chunks(rows.shape[1]):
            answered = self._hits(rows, part).any(axis=1).sum(axis=1)
            out[part] = answered / self.n_kept[part]
        return out

    def _dcg(self, rows: np.ndarray) -> np.ndarray:
        """The numerator of Eq. 4 (``crux._dcg(crux._novelty_gains(...))``) per topic."""
        out = np.zeros(len(self.topic_ids))
        discount = np.log2(np.arange(1, rows.shape[1] + 1) + 1)
        for part in self._chunks(rows.shape[1]):
            hits = self._hits(rows, part).astype(float)
            seen_before = np.cumsum(hits, axis=1) - hits
            gains = (hits * (1.0 - self.alpha) ** seen_before).sum(axis=2)
            out[part] = (gains / discount).sum(axis=1)
        return out

    def alpha_ndcg(self, rows: np.ndarray) -> np.ndarray:
        """alpha-nDCG of Eq. 4-5 over Z* (:func:`crux.alpha_ndcg`)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.ideal_dcg == 0, np.nan, self._dcg(rows) / self.ideal_dcg)

    def _ideal_dcg(self, oracle: np.ndarray) -> np.ndarray:
        """Eq. 4's denominator: Z* in :func:`crux.ideal_order`'s greedy order.

        Topics are grouped by their number of answerable questions so that each gain is the
        sum numpy forms for one row of that length, as the reference does: equal gains then
        compare equal here too, and ties go to the earlier passage in both.
        """
        order = np.tile(np.arange(oracle.shape[1]), (len(self.topic_ids), 1))
        size = (oracle != self.none).sum(axis=1)
        for n_q in np.unique(self.n_kept):
            group = np.flatnonzero(self.n_kept == n_q)
            hits = self.answers[group[:, None], oracle[group]][:, :, :n_q]
            remaining = np.arange(oracle.shape[1])[None, :] < size[group, None]
            counts = np.zeros((len(group), n_q))
            for rank in range(oracle.shape[1]):
                gains = (hits * (1.0 - self.alpha) ** counts[:, None, :]).sum(axis=2)
                pick = np.argmax(np.where(remaining, gains, -np.inf), axis=1)
                active = remaining[np.arange(len(group)), pick]
                order[group[active], rank] = pick[active]
                remaining[np.arange(len(group)), pick] = False
                counts += hits[np.arange(len(group)), pick] * active[:, None]
        ideal = np.take_along_axis(oracle, order, axis=1)
        return self._dcg(ideal)

    def density(self, cov: np.ndarray, tokens: np.ndarray, oracle_tokens: np.ndarray,
                weight: float) -> np.ndarray:
        """Den (Eq. 6) per topic, with :func:`crux.density`'s undefined cases."""
        cov_star = self.oracle_coverage
        with np.errstate(divide="ignore", invalid="ignore"):
            value = ((cov / tokens) / (cov_star / oracle_tokens)) ** weight
        undefined = np.isnan(cov) | np.isnan(cov_star) | (cov_star == 0) | (oracle_tokens <= 0)
        value = np.where(cov == 0, 0.0, np.where(tokens <= 0, np.nan, value))
        return np.where(undefined, np.nan, value)

    # --- ndeval's alpha-nDCG@20 (the paper's published computation) --------------------------

    def _ndeval_qrels(self, judgments: Mapping) -> None:
        """ndeval's view of the diversity qrels (``judgments.diversity_rows``): a passage of P*
        is judged for the answerable questions it answers; ndeval numbers the subtopics in the
        order they first appear in the qrels, and its ideal ranking is greedy over P*."""
        subtopic: dict[int, int] = {}
        judged = []     # per topic: (question index, subtopic, rows of P* answering it)
        for t, tid in enumerate(self.topic_ids):
            in_p_star = np.zeros(self.answers.shape[1], dtype=bool)
            in_p_star[[self.row_of[t].get(p, self.none) for p in judgments[tid].relevant]] = True
            in_p_star[self.none] = False
            hits = self.answers[t] & in_p_star[:, None]
            for i, q in enumerate(judgments[tid].kept):
                if hits[:, i].any():
                    judged.append((t, subtopic.setdefault(q, len(subtopic)), hits[:, i]))
        self.ndeval_rel = np.zeros((*self.answers.shape[:2], max(1, len(subtopic))), dtype=bool)
        for t, s, hits in judged:
            self.ndeval_rel[t, :, s] = hits
        self.ndeval_ideal = self._ndeval_ideal()

    def _ndeval_ideal(self) -> np.ndarray:
        """ndeval's ideal over the passages of the diversity qrels, ties to the larger id."""
        id_rank = np.full(self.ndeval_rel.shape[:2], -1)
        for t in range(len(self.topic_ids)):
            for position, p in enumerate(sorted(self.row_of[t])):
                id_rank[t, self.row_of[t][p]] = position
        return ndeval_ideal(self.ndeval_rel, id_rank, self.alpha)

    def _ndeval_ranked_dcg(self, rows: np.ndarray) -> np.ndarray:
        rows = rows[:, :NDEVAL_CUTOFF]
        rel = self.ndeval_rel[np.arange(len(self.topic_ids))[:, None], rows]
        return ndeval_dcg(rel, self.alpha, actual_subtopics(self.ndeval_rel))

    @staticmethod
    def _ratio(dcg: np.ndarray, ideal: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((dcg == 0) | (ideal == 0), 0.0, dcg / ideal)

    def alpha_ndcg_ndeval(self, rows: np.ndarray, cutoff: np.ndarray) -> np.ndarray:
        """ndeval's alpha-nDCG@k per topic (``cutoff[t]`` = k; NaN above 20, where ndeval
        stops), as ir_measures' ``alpha_nDCG@k`` on the diversity qrels (ideal over P* at
        rank k); 0 where nothing is gained. ``rows``: the contexts, cut at k."""
        dcg = self._ndeval_ranked_dcg(rows)
        at = np.clip(cutoff, 1, NDEVAL_CUTOFF)[:, None] - 1
        value = self._ratio(np.take_along_axis(dcg, at, axis=1)[:, 0],
                            np.take_along_axis(self.ndeval_ideal, at, axis=1)[:, 0])
        return np.where(cutoff > NDEVAL_CUTOFF, np.nan, value)

    def alpha_ndcg_published(self, rows: np.ndarray) -> np.ndarray:
        """:func:`ir.per_query_ndeval` per topic (the CRUX paper's tables): ndeval's
        alpha-nDCG@20 of the context (its first 20 passages) against ndeval's ideal over P*
        at rank 20, whatever the context's size; 0 where nothing is gained."""
        dcg = self._ndeval_ranked_dcg(rows)
        return self._ratio(dcg[:, -1], self.ndeval_ideal[:, -1])

    # --- runs ----------------------------------------------------------------------------------

    def flatten(self, run: Mapping[str, Sequence]) -> FlatRun:
        """A run (``{topic: [RunRow, ...]}``) as rows of the rating matrices."""
        doc_ids = [[r.doc_id for r in run.get(tid, ())] for tid in self.topic_ids]
        codes = self._codes(doc_ids)
        rows = self._rows_of(codes)
        length = np.array([len(x) for x in doc_ids], dtype=int)
        in_run = np.array([tid in run for tid in self.topic_ids], dtype=bool)
        return FlatRun(rows, codes, length, doc_ids, in_run)

    def cut(self, flat: FlatRun, size: np.ndarray, count_tokens
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of every topic's context (its first ``size[t]`` passages), its length and
        its token count; ``count_tokens(passage_ids)`` counts the passages not counted yet."""
        n = np.minimum(flat.length, size)
        width = int(n.max(initial=0))
        inside = np.arange(width)[None, :] < n[:, None]
        rows = np.where(inside, flat.row[:, :width], self.none)
        codes = flat.code[:, :width]
        new = np.unique(codes[inside & (self.passage_tokens[codes] < 0)])
        if new.size:
            self.passage_tokens[new] = count_tokens([self.passage_ids[c] for c in new])
        return rows, n, np.where(inside, self.passage_tokens[codes], 0).sum(axis=1)


def ndeval_dcg(rel: np.ndarray, alpha: float, actual: np.ndarray) -> np.ndarray:
    """alpha-DCG at ranks 1..20 of ranked judgments ``rel`` (topics x ranks x subtopics,
    subtopics in ndeval's order), as ndeval.c's computeDCG forms it: column r - 1 holds the
    cumulative gain at rank r, from rank 2 on divided by the "ideal ideal" gain (each of the
    topic's ``actual`` subtopics, those with a relevant passage in the qrels, covered at every
    rank). ndeval's
    alpha-nDCG@k divides the run's value by the ideal ranking's (both from here), so the
    operations are ndeval's own, in its order, for the quotient to come out the same to the
    last bit."""
    n_topics = rel.shape[0]
    gain = np.ones((n_topics, rel.shape[2]))
    step = np.zeros((n_topics, NDEVAL_CUTOFF))
    by_subtopic = _by_subtopic(rel)
    for rank in range(min(NDEVAL_CUTOFF, rel.shape[1])):
        score = _ndeval_score(by_subtopic[:, :, rank], gain.T)
        gain = np.where(rel[:, rank], gain * (1.0 - alpha), gain)
        step[:, rank] = score * _DISCOUNT[rank]
    actual = np.asarray(actual, dtype=float)
    ideal_ideal = np.zeros((n_topics, NDEVAL_CUTOFF))
    for rank in range(NDEVAL_CUTOFF):
        ideal_ideal[:, rank] = actual * _DISCOUNT[rank]
        actual = actual * (1.0 - alpha)
    dcg, ideal_ideal = np.cumsum(step, axis=1), np.cumsum(ideal_ideal, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dcg[:, 1:] = np.where(ideal_ideal[:, 1:] > 0, dcg[:, 1:] / ideal_ideal[:, 1:], 0.0)
    return dcg


def ndeval_ideal(rel: np.ndarray, id_rank: np.ndarray, alpha: float) -> np.ndarray:
    """ndeval.c's idealResult as :func:`ndeval_dcg`'s cumulative alpha-DCG: rank by the
    largest gain given the ranks above, ties to the larger passage id (``id_rank[t, p]``: the
    passage's place among the topic's ids in string order, as strcmp orders them); only the
    passages judged for some subtopic (``rel``: topics x passages x subtopics) take part, and
    only its first 20 ranks count."""
    n_topics = rel.shape[0]
    judged = rel.any(axis=2)
    gain = np.ones((n_topics, rel.shape[2]))
    ranked = np.zeros((n_topics, NDEVAL_CUTOFF, rel.shape[2]), dtype=bool)
    everyone = np.arange(n_topics)
    by_subtopic = _by_subtopic(rel)
    for rank in range(min(NDEVAL_CUTOFF, judged.shape[1])):
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


# ndeval.c's discount: log(2) / log(rank + 2) for ranks from 0
_DISCOUNT = [1.0] + [math.log(2.0) / math.log(rank + 2.0) for rank in range(1, NDEVAL_CUTOFF)]


def _keys(codes: np.ndarray) -> np.ndarray:
    """One integer per (topic, passage number): the topic is the row of ``codes``."""
    return (np.arange(codes.shape[0], dtype=np.int64)[:, None] << 32) | codes


def _by_subtopic(rel: np.ndarray) -> np.ndarray:
    """Judgments (... x subtopics, bool), subtopics first: one contiguous array each."""
    return np.ascontiguousarray(np.moveaxis(rel, -1, 0))


def _ndeval_score(by_subtopic: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Sum of the gains of the subtopics a passage is judged for, added one subtopic after
    the other in ndeval's order (``by_subtopic[s]``: True where judged for subtopic s, taken
    as 1.0; a 0.0 * gain added for the others leaves the sum unchanged, bit for bit)."""
    score = by_subtopic[0] * gain[0]
    for s in range(1, len(by_subtopic)):
        score += by_subtopic[s] * gain[s]
    return score

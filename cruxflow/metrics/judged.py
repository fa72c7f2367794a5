"""The judgments as arrays, for every topic at once: the one builder every door's measures read
(issues 19, 36, 41, 51).

The paper's formulas topic by topic and trec_eval's and ndeval's own routes are the tests'
oracles (``tests/oracles/``); these arrays give the same numbers for a whole run's contexts
with numpy, because at the paper's scale (4,986 topics x 21 pipelines x 3 sizes) a Python loop
over topics, or the libraries' per-query conversions, cost minutes.
``tests/test_metrics_fast.py`` compares both routes on random cases.

What is built, and how often:

* :class:`JudgedIndex`, once per judgments: the topics (in natural order, so that no number
  and no row depends on the order of a file), each topic's judged passages (in their natural
  order, :func:`cruxflow.data.model.passage_order`) as the rows of its matrices, every
  rating, the qrels given as such, and the numbers a run's passages are looked up by.
* :class:`TopicArrays`, once per (judgments, eta, alpha, relevance grades), each part when
  first asked: the answerable questions and which row answers which (Eq. 2), P** = Z* (the
  greedy of Sec. 3.2, vectorised), the ideal DCG of Eq. 4 over Z*, the relevance grades of
  P*, ndeval's judgments and its ideal DCG.
* :class:`~cruxflow.metrics.cuts.Cut` (:mod:`cruxflow.metrics.cuts`), once per (run, k, cut,
  order): each topic's context as rows of its matrix,
  its length and its passages; what several measures share (ndeval's ranked DCG, the
  answered questions) is kept on it and computed once.

Where a choice depends on comparing floats (the greedy ideal orders), the sums are formed in
the reference's order so that ties break the same way: Eq. 4's ideal sums a passage's gains
over the answerable questions as numpy does for one row (topics are grouped by their number of
answerable questions, so every row has the reference's length); ndeval's ideal adds the gains
one subtopic after another in ndeval's subtopic order and multiplies them by 1 - alpha in
place, as ndeval.c does. Sums over ranks are cumulative (in rank order), as trec_eval's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from itertools import chain, repeat

import numpy as np

from cruxflow.data.columns import Codes, IdTable
from cruxflow.data.model import passage_order_arrays
from cruxflow.metrics.ndeval import (
    actual_subtopics,
    ideal_ideal_gain,
    ndeval_dcg,
    ndeval_ideal,
    seen_before,
)
from cruxflow.metrics.options import DEFAULTS, NDEVAL_CUTOFF, RELEVANCE_GRADES

# Arrays of (topics x ranks x questions) are built in chunks of about this many cells.
_CHUNK_CELLS = 1 << 22
UNRATED = -2     # the rating of a passage the topic did not rate: below any rating, -1 included


def natural_key(text: str) -> tuple:
    """Ids in natural order: runs of digits compared as numbers (``t2`` before ``t10``)."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


class RatingPairs:
    """Answerability ratings by (topic, passage) pair, as arrays: what :class:`JudgedIndex`
    is built from, whatever form the ratings came in (a dataset's or a judge file's pairs,
    ``{topic: {passage: ratings}}``).

    ``topic_ids``: the topics (those without a rated passage included); ``topic``: each pair's
    index into them; ``pids``: each pair's passage; ``flat``: every rating, pair after pair;
    ``lengths``: each pair's number of ratings (one per sub-question of its topic)."""

    def __init__(self, topic_ids: list[str], topic: np.ndarray, pids: list[str],
                 flat: np.ndarray, lengths: np.ndarray):
        self.topic_ids, self.topic, self.pids = topic_ids, topic, pids
        self.flat, self.lengths = flat, lengths

    @classmethod
    def of(cls, ratings) -> RatingPairs:
        """``ratings`` as pairs: :class:`RatingPairs` itself; a judge file's ratings read
        (anything with ``flat()`` and ``rows()``: their arrays as read); ``{(topic,
        passage): ratings}``; or ``{topic: {passage: ratings}}``."""
        if isinstance(ratings, RatingPairs):
            return ratings
        if callable(getattr(ratings, "flat", None)) and callable(getattr(ratings, "rows",
                                                                         None)):
            flat, lengths = ratings.flat()
            row_of, topics, topic = ratings.rows()
            return cls(list(topics), np.asarray(topic, dtype=np.int64),
                       [p for _, p in row_of], np.asarray(flat, dtype=np.int64),
                       np.asarray(lengths, dtype=np.int64))
        first = next(iter(ratings), None)
        if isinstance(first, tuple):
            return cls.from_pairs(ratings)
        topic_ids = list(ratings)
        counts = [len(m) for m in ratings.values()]
        pids = list(chain.from_iterable(ratings.values()))
        values = list(chain.from_iterable(m.values() for m in ratings.values()))
        return cls._made(topic_ids, np.repeat(np.arange(len(topic_ids), dtype=np.int64),
                                              counts), pids, values)

    @classmethod
    def from_pairs(cls, pairs: Mapping[tuple[str, str], Sequence[int]],
                   topics: Iterable[str] = ()) -> RatingPairs:
        """``{(topic, passage): ratings}`` (a dataset's), ``topics`` added where they have no
        pair."""
        index = dict.fromkeys(topics)
        index.update(dict.fromkeys(t for t, _ in pairs))
        number = {t: i for i, t in enumerate(index)}
        topic = np.fromiter((number[t] for t, _ in pairs), np.int64, len(pairs))
        return cls._made(list(index), topic, [p for _, p in pairs], list(pairs.values()))

    @classmethod
    def _made(cls, topic_ids, topic, pids, values) -> RatingPairs:
        lengths = np.fromiter(map(len, values), np.int64, len(values))
        flat = np.fromiter(chain.from_iterable(values), np.int64, int(lengths.sum()))
        return cls(topic_ids, topic, pids, flat, lengths)

    def __len__(self) -> int:
        return len(self.pids)


class JudgedIndex:
    """The judgments' topics and passages, numbered once (what every eta shares).

    ``ratings``: the answerability ratings (any form :meth:`RatingPairs.of` takes, e.g.
    ``{topic: {passage: [0-5 rating per sub-question]}}``); ``relevance``: relevance qrels
    given as such (``{topic: {passage: grade}}``); ``diversity``: diversity qrels given as such
    (a :class:`~cruxflow.data.ingest.crux_common.DiversityQrels`); ``topics``: topics judged
    beyond those (a dataset's topics without a rated passage). Any may be None.

    Each topic's judged passages are the rows of its matrices: with ratings, in the topic's
    natural passage order (:func:`~cruxflow.data.model.passage_order`), which P**'s greedy
    breaks ties by; without, in the order given (relevance qrels, then diversity qrels).
    Built from arrays, for every pair at once (no loop over topics or passages in Python but
    the one that reads each distinct passage id's running number).
    """

    def __init__(self, ratings=None, relevance: Mapping[str, Mapping[str, int]] | None = None,
                 diversity=None, topics: Iterable[str] | None = None):
        relevance = relevance or {}
        pairs = RatingPairs.of(ratings) if ratings is not None else None
        if pairs is not None and not pairs.topic_ids:
            pairs = None        # no rated topic: as without ratings
        found = dict.fromkeys(topics or ())
        if pairs is not None:
            found.update(dict.fromkeys(pairs.topic_ids))
        found.update(dict.fromkeys(relevance))
        div = None
        if diversity is not None:
            div = diversity.codes()
            found.update(dict.fromkeys(div[0][0]))
        self.topic_ids = sorted(found, key=natural_key)
        self.topic_index = {t: i for i, t in enumerate(self.topic_ids)}
        self.has_ratings = pairs is not None
        # every (topic, passage) judged, from every source, as (topic index, passage code)
        codes = Codes()
        parts_t = []
        if pairs is not None:
            parts_t.append(self._indices(pairs.topic_ids)[pairs.topic])
            codes.add(pairs.pids)
        rel_pairs = [(self.topic_index[t], p) for t, m in relevance.items() for p in m]
        if rel_pairs:
            parts_t.append(np.fromiter((t for t, _ in rel_pairs), np.int64, len(rel_pairs)))
            codes.add([p for _, p in rel_pairs])
        if div is not None and len(div[0][1]):
            (d_topics, d_t), _, (d_pids, d_p) = div
            d_of = self._indices(d_topics)[d_t]
            n = max(1, len(d_pids))
            keys = np.unique(d_of * n + d_p)       # each pair once, by passage code in topic
            parts_t.append(keys // n)
            codes.add([d_pids[i] for i in (keys % n).tolist()])
        source_t = np.concatenate(parts_t) if parts_t else np.zeros(0, dtype=np.int64)
        source_p = codes.codes()
        pid_values = codes.values
        n_p = max(1, len(pid_values))
        key = source_t * n_p + source_p
        uniq, first = np.unique(key, return_index=True)
        t_u, p_u = uniq // n_p, uniq % n_p
        if pairs is not None:    # natural passage order within each topic
            flag, running, by_id = passage_order_arrays(pid_values)
            placed = np.lexsort((by_id[p_u], running[p_u], flag[p_u], t_u))
        else:                    # the order given
            placed = np.lexsort((first, t_u))
        t_u, p_u = t_u[placed], p_u[placed]
        n_topics = len(self.topic_ids)
        self.n_rows = np.bincount(t_u, minlength=n_topics).astype(np.int64)
        self.width = int(self.n_rows.max(initial=0))
        self.none = self.width          # the row of "not judged": it answers nothing
        starts = np.cumsum(self.n_rows) - self.n_rows
        rows = np.arange(len(t_u)) - starts[t_u]
        # every judged passage numbered, in order of (topic, row)
        ordered = [pid_values[i] for i in p_u.tolist()]
        self.number = {x: i for i, x in enumerate(dict.fromkeys(ordered))}
        numbers = np.fromiter(map(self.number.__getitem__, ordered), np.int64, len(ordered))
        self.passages = [ordered[a:b] for a, b in zip(starts.tolist(),
                                                      (starts + self.n_rows).tolist(),
                                                      strict=True)]
        keys = (t_u << 32) | numbers
        order = np.argsort(keys)
        self._keys, self._rows = keys[order], rows[order]
        self._pair = (t_u, rows)
        self._row_number = np.full((n_topics, self.width + 1), -1, dtype=np.int64)
        self._row_number[t_u, rows] = numbers
        # each source pair's row, through its key (``uniq``'s order)
        row_of_key = np.empty(len(uniq), dtype=np.int64)
        row_of_key[placed] = rows
        self._n_codes = n_p
        self._build_ratings(pairs, source_t, source_p, uniq, row_of_key)
        self._build_relevance(relevance, rel_pairs, source_t, source_p, uniq, row_of_key,
                              0 if pairs is None else len(pairs))
        self._build_diversity(diversity, div)

    def _indices(self, topics: list[str]) -> np.ndarray:
        return np.fromiter(map(self.topic_index.__getitem__, topics), np.int64, len(topics))

    # --- what was given --------------------------------------------------------------------

    def _build_ratings(self, pairs, source_t, source_p, uniq, row_of_key) -> None:
        """``ratings[t, row, q]`` (int8; :data:`UNRATED` where the topic rated no such passage
        or has no such question), ``n_questions[t]`` (0: no ratings), ``rated[t, row]``."""
        n_topics = len(self.topic_ids)
        self.n_questions = np.zeros(n_topics, dtype=np.int64)
        n = 0 if pairs is None else len(pairs)
        if n:
            self.n_questions[source_t[:n]] = pairs.lengths
        self.ratings = np.full((n_topics, self.width + 1, int(self.n_questions.max(initial=0))),
                               UNRATED, dtype=np.int8)
        self.rated = np.zeros((n_topics, self.width + 1), dtype=bool)
        if not n:
            return
        t, rows = source_t[:n], self._source_rows(source_t[:n], source_p[:n], uniq, row_of_key)
        width = int(pairs.lengths.max(initial=0))
        matrix = np.full((n, width), UNRATED, dtype=np.int8)
        matrix[np.arange(width)[None, :] < pairs.lengths[:, None]] = pairs.flat
        self.ratings[t, rows, :width] = matrix
        self.rated[t, rows] = True

    def _source_rows(self, t, p, uniq, row_of_key) -> np.ndarray:
        n_p = self._n_codes
        return row_of_key[np.searchsorted(uniq, t * n_p + p)]

    def _build_relevance(self, relevance, rel_pairs, source_t, source_p, uniq, row_of_key,
                         start: int) -> None:
        """The relevance qrels given as such: ``grade[t, row]`` and the topics they hold."""
        self.given_grades = None
        self.relevance_topics = np.zeros(len(self.topic_ids), dtype=bool)
        if not relevance:
            return
        self.given_grades = np.zeros((len(self.topic_ids), self.width + 1), dtype=np.int64)
        self.relevance_topics[self._indices(list(relevance))] = True
        if not rel_pairs:
            return
        end = start + len(rel_pairs)
        t = source_t[start:end]
        rows = self._source_rows(t, source_p[start:end], uniq, row_of_key)
        grades = np.fromiter((g for m in relevance.values() for g in m.values()), np.int64,
                             len(rel_pairs))
        self.given_grades[t, rows] = grades

    def _build_diversity(self, diversity, div) -> None:
        """The diversity qrels given as such: ``given_rel[t, row, s]`` (relevance >= 1 for the
        topic's s-th subtopic, numbered as ndeval numbers them: by first appearance in the
        file) and the topics they hold (a topic with only 0 lines included)."""
        self.given_rel = None
        self.diversity_topics = np.zeros(len(self.topic_ids), dtype=bool)
        if div is None:
            return
        (d_topics, d_t), (subtopics, d_s), (d_pids, d_p) = div
        t_of = np.array([self.topic_index[t] for t in d_topics], dtype=np.int64)[d_t]
        self.diversity_topics[t_of] = True
        n_sub = max(1, len(subtopics))
        pairs, slot_of_line = np.unique(t_of * n_sub + d_s, return_inverse=True)
        slots = _rank_within(pairs // n_sub, np.arange(len(pairs)), len(self.topic_ids))
        depth = int(slots.max(initial=-1)) + 1 or 1
        self.given_rel = np.zeros((len(self.topic_ids), self.width + 1, depth), dtype=bool)
        relevant = np.asarray(diversity.relevance, dtype=np.int64).reshape(-1)
        numbers = np.fromiter(map(self.number.__getitem__, d_pids), np.int64, len(d_pids))
        rows = self.rows_of(t_of, numbers[d_p])
        at = relevant >= 1
        self.given_rel[t_of[at], rows[at], slots[slot_of_line.reshape(-1)[at]]] = True

    # --- lookups ---------------------------------------------------------------------------

    def rows_of(self, topic: np.ndarray, number: np.ndarray) -> np.ndarray:
        """The row of each (topic index, passage number) pair; ``none`` where the topic did
        not judge the passage (or either is -1)."""
        out = np.full(len(topic), self.none, dtype=np.int64)
        if not len(self._keys):
            return out
        # only the pairs of a judged topic and a passage judged for some topic are searched
        # for (in a TREC run, most lines are neither)
        at = np.flatnonzero((topic >= 0) & (number >= 0))
        keys = (topic[at] << 32) | number[at]
        place = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        found = self._keys[place] == keys
        out[at[found]] = self._rows[place[found]]
        return out

    def numbers(self, pids: Sequence[str]) -> np.ndarray:
        """Each passage id's number (-1: judged for no topic), looked up on the ids' bytes
        (:class:`~cruxflow.data.columns.IdTable`: a run's 100,000 ids in about a third of
        the dict's time)."""
        if len(pids) < 64:      # a few ids: the dict is quicker than numpy's set-up
            return np.fromiter(map(self.number.get, pids, repeat(-1)), np.int64, len(pids))
        return self._id_table.numbers(list(pids))

    @cached_property
    def _id_table(self) -> IdTable:
        return IdTable(list(self.number))

    def pid(self, t: int, row: int) -> str:
        return self.passages[t][row]

    def row_numbers(self, rows: np.ndarray) -> np.ndarray:
        """The passage number of each topic's ``rows`` (topics x places; -1 for ``none``)."""
        return self._row_number[np.arange(len(self.topic_ids))[:, None], rows]

    def take(self, at: np.ndarray) -> JudgedIndex:
        """The topics at positions ``at`` (repeats allowed) as an index of their own: what
        the measures read per topic, gathered (:meth:`TopicArrays.take`). It numbers no
        passage: ids are looked up on the index it was taken from."""
        new = object.__new__(JudgedIndex)
        new.topic_ids = [self.topic_ids[i] for i in at.tolist()]
        new.passages = [self.passages[i] for i in at.tolist()]
        new.none, new.width, new.number = self.none, self.width, self.number
        new.has_ratings = self.has_ratings
        for attr in ("n_rows", "n_questions", "ratings", "rated", "relevance_topics",
                     "diversity_topics", "_row_number"):
            setattr(new, attr, getattr(self, attr)[at])
        for attr in ("given_grades", "given_rel"):
            given = getattr(self, attr)
            setattr(new, attr, None if given is None else given[at])
        return new

    @cached_property
    def id_rank(self) -> np.ndarray:
        """``id_rank[t, row]``: the passage id's place among its topic's ids in string order
        (Python's, which is strcmp's on UTF-8), as ndeval breaks ties; -1 for no passage."""
        topic_of, rows = self._pair
        out = np.full((len(self.topic_ids), self.width + 1), -1, dtype=np.int64)
        if len(rows):
            pids = np.array([x for p in self.passages for x in p])
            out[topic_of, rows] = _rank_within(topic_of, np.lexsort((pids, topic_of)),
                                               len(self.topic_ids))
        return out


class TopicArrays:
    """Everything a context of one of the judgments' topics is scored against, at one eta.

    ``judgments`` (``{topic: TopicJudgments}``, e.g. a workflow's judgments.jsonl made for
    this eta) gives the answerable questions and Z* where it has them; otherwise they are
    derived from the ratings, as :func:`cruxflow.metrics.judgments.derive` derives them.
    """

    def __init__(self, index: JudgedIndex, eta: int = DEFAULTS.eta,
                 alpha: float = DEFAULTS.alpha, grades: str = DEFAULTS.relevance_grades,
                 judgments: Mapping | None = None):
        self.index, self.eta, self.alpha = index, eta, alpha
        self.grades_name, self.judgments = grades, judgments
        self.topic_ids = index.topic_ids
        self.none = index.none
        self._memo: dict = {}

    def memo(self, key, make):
        """What ``make()`` returns, made once per ``key`` for these arrays (what the measures
        derive from the judgments alone: one qrels' relevant passages, its ideal DCG)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    # per topic: what :meth:`take` gathers (made here first, once)
    _PER_TOPIC = ("required_rows", "oracle_size", "oracle_coverage", "ideal_dcg", "grades",
                  "relevance_topics", "ndeval_rel", "diversity_topics", "ndeval_ideal",
                  "ndeval_actual")

    def take(self, at: np.ndarray) -> TopicArrays:
        """These arrays for the topics at positions ``at`` (repeats allowed): several runs'
        contexts stacked as the rows of one matrix are scored against ``take(np.tile(
        np.arange(n_topics), n_runs))`` in one call of each measure. Every per-topic array
        is made on these arrays, once, and gathered, so the stack's values are these
        arrays' own; what the measures memoise (:meth:`memo`) starts anew."""
        new = TopicArrays(self.index.take(at), self.eta, self.alpha, self.grades_name)
        new.__dict__["_kept"] = (self.answers[at], self.n_kept[at], self.answerable[at])
        for attr in self._PER_TOPIC:
            new.__dict__[attr] = getattr(self, attr)[at]
        new.__dict__["ndeval_ideal_ideal"] = self.ndeval_ideal_ideal[:, at]   # ranks x topics
        return new

    # --- Eq. 2: the answerable questions -------------------------------------------------

    @cached_property
    def _kept(self) -> tuple[np.ndarray, np.ndarray]:
        """(``answers[t, row, i]``: the passage answers the topic's i-th answerable question,
        ``n_kept[t]``)."""
        ix = self.index
        n_topics, n_q = len(self.topic_ids), ix.ratings.shape[2]
        answerable = np.zeros((n_topics, n_q), dtype=bool)
        if self.judgments is not None:
            for tid, j in self.judgments.items():
                if tid in ix.topic_index:
                    answerable[ix.topic_index[tid], j.kept] = True
        else:
            answerable = (ix.ratings >= self.eta).any(axis=1)
        n_kept = answerable.sum(axis=1)
        # the answerable questions first, in question order (the reference's columns)
        order = np.argsort(~answerable, axis=1, kind="stable")[:, :int(n_kept.max(initial=0))]
        answers = np.take_along_axis(ix.ratings, order[:, None, :], axis=2) >= self.eta
        answers &= np.arange(order.shape[1])[None, None, :] < n_kept[:, None, None]
        return answers, n_kept, answerable

    @property
    def answers(self) -> np.ndarray:
        return self._kept[0]

    @property
    def n_kept(self) -> np.ndarray:
        return self._kept[1]

    @property
    def answerable(self) -> np.ndarray:
        """``answerable[t, q]``: the topic's q-th sub-question is answerable (Eq. 2)."""
        return self._kept[2]

    @cached_property
    def kept(self) -> list[list[int]]:
        """Q of each topic: its answerable sub-questions' indices."""
        return [np.flatnonzero(a).tolist() for a in self.answerable]

    # --- Sec. 3.2: P** = Z* ----------------------------------------------------------------

    @cached_property
    def required_rows(self) -> np.ndarray:
        """Z* of every topic as rows (``none``-padded), in selection order."""
        if self.judgments is not None:
            return self._rows_of_lists(
                [self.judgments[t].required if t in self.judgments else []
                 for t in self.topic_ids])
        return select_required_rows(self.answers, self.n_kept, self.none)

    def _rows_of_lists(self, lists: Sequence[Sequence[str]]) -> np.ndarray:
        ix = self.index
        length = np.array([len(x) for x in lists], dtype=np.int64)
        out = np.full((len(lists), int(length.max(initial=0))), self.none, dtype=np.int64)
        topic = np.repeat(np.arange(len(lists), dtype=np.int64), length)
        flat = [p for x in lists for p in x]
        inside = np.arange(out.shape[1])[None, :] < length[:, None]
        out[inside] = ix.rows_of(topic, ix.numbers(flat))
        return out

    @cached_property
    def oracle_size(self) -> np.ndarray:
        return (self.required_rows != self.none).sum(axis=1)

    @cached_property
    def oracle_coverage(self) -> np.ndarray:
        return self.coverage(self.required_rows)

    @cached_property
    def ideal_dcg(self) -> np.ndarray:
        """Eq. 4's denominator: the alpha-DCG of Z* in its ideal order."""
        return self._dcg(self.ideal_rows)

    # --- the relevance qrels -----------------------------------------------------------------

    @cached_property
    def grades(self) -> np.ndarray:
        """``grade[t, row]``: the relevance qrels (given, or P* graded by the relevance grades:
        P** ``required``, P* passages below P**'s element-wise maximum on every question
        ``redundant``, the rest of P* ``relevant``; :func:`cruxflow.metrics.judgments.
        relevance_qrels`)."""
        ix = self.index
        if ix.given_grades is not None:
            return ix.given_grades
        g = RELEVANCE_GRADES[self.grades_name]
        out = np.where(ix.rated, g.relevant, 0).astype(np.int64)
        required = self.required_rows
        if g.redundant != g.relevant and required.shape[1]:
            ratings = ix.ratings.astype(np.int64)
            best = np.take_along_axis(ratings, required[:, :, None], axis=1)
            best = np.where((required != self.none)[:, :, None], best, -10).max(axis=1)
            asked = np.arange(ratings.shape[2])[None, None, :] < ix.n_questions[:, None, None]
            below = ((ratings < best[:, None, :]) | ~asked).all(axis=2)
            has_required = (required != self.none).any(axis=1)
            out = np.where(below & ix.rated & has_required[:, None], g.redundant, out)
        topics = np.arange(len(self.topic_ids))[:, None]
        out[topics, required] = np.where(required != self.none, g.required, out[topics, required])
        out[:, self.none] = 0
        return out

    @cached_property
    def relevance_topics(self) -> np.ndarray:
        """The topics the relevance qrels hold (derived: those with a rated passage)."""
        ix = self.index
        return ix.relevance_topics if ix.given_grades is not None else ix.rated.any(axis=1)

    # --- ndeval's judgments: the diversity qrels -----------------------------------------------

    @cached_property
    def ndeval_rel(self) -> np.ndarray:
        """``rel[t, row, s]``: judged relevant for the topic's s-th subtopic: the diversity
        qrels given, or (derived at eta) a passage of P* for each answerable question it
        answers, the questions numbered in order."""
        ix = self.index
        if ix.given_rel is not None:
            return ix.given_rel
        return self.answers & ix.rated[:, :, None]

    @cached_property
    def diversity_topics(self) -> np.ndarray:
        """The topics the diversity qrels hold (derived from the ratings: those with an
        answerable question, the topics of the diversity qrels written from them)."""
        ix = self.index
        return ix.diversity_topics if ix.given_rel is not None else self.n_kept > 0

    @cached_property
    def ndeval_ideal(self) -> np.ndarray:
        return ndeval_ideal(self.ndeval_rel, self.index.id_rank, self.alpha)

    @cached_property
    def ndeval_actual(self) -> np.ndarray:
        return actual_subtopics(self.ndeval_rel)

    # --- building blocks ------------------------------------------------------------------

    def _chunks(self, width: int, cells: int | None = None):
        cells = _CHUNK_CELLS if cells is None else cells
        step = max(1, cells // max(1, width * max(1, self.answers.shape[2])))
        for start in range(0, len(self.topic_ids), step):
            yield slice(start, min(start + step, len(self.topic_ids)))

    def _hits(self, rows: np.ndarray, topics: slice) -> np.ndarray:
        index = np.arange(len(self.topic_ids))[topics, None]
        return self.answers[index, rows[topics]]

    # --- CRUX's measures -----------------------------------------------------------------------

    def answered(self, rows: np.ndarray) -> np.ndarray:
        """How many answerable questions some passage of each topic's ``rows`` answers."""
        return self.answered_and_dcg(rows)[0]

    def coverage(self, rows: np.ndarray) -> np.ndarray:
        """Cov(Z) (Eq. 3) of every topic's context, given as rows (:func:`crux.coverage`)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.n_kept > 0, self.answered(rows) / self.n_kept, np.nan)

    def answered_and_dcg(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per topic, for the context ``rows``: how many answerable questions it answers, and
        the numerator of Eq. 4 (``crux._dcg(crux._novelty_gains(...))``), from one look-up
        of which passage answers which question. A question's gain at a rank is
        (1 - alpha) ** (the ranks above that answer it), the power taken from a table."""
        answered = np.zeros(len(self.topic_ids), dtype=np.int64)
        dcg = np.zeros(len(self.topic_ids))
        width, n_q = rows.shape[1], self.answers.shape[2]
        if not width or not n_q:
            return answered, dcg
        powers = (1.0 - self.alpha) ** np.arange(width, dtype=float)
        discount = np.log2(np.arange(1, width + 1) + 1)
        ones = np.ones(n_q)
        for part in self._chunks(width, _CHUNK_CELLS >> 4):   # in the cache, no page faults
            hits = self._hits(rows, part)
            seen = seen_before(hits)
            answered[part] = np.count_nonzero(seen[:, -1] + hits[:, -1], axis=1)
            gains = np.take(powers, seen)
            gains *= hits
            dcg[part] = ((gains @ ones) / discount).sum(axis=1)
        return answered, dcg

    def _dcg(self, rows: np.ndarray) -> np.ndarray:
        """The numerator of Eq. 4 per topic (:meth:`answered_and_dcg`)."""
        return self.answered_and_dcg(rows)[1]

    def alpha_ndcg(self, rows: np.ndarray, dcg: np.ndarray | None = None) -> np.ndarray:
        """alpha-nDCG of Eq. 4-5 over Z* (:func:`crux.alpha_ndcg`); ``dcg``: the context's
        numerator, where already computed."""
        dcg = self._dcg(rows) if dcg is None else dcg
        ideal = self.ideal_dcg
        return np.where(ideal == 0, np.nan, dcg / np.where(ideal == 0, 1.0, ideal))

    @cached_property
    def ideal_rows(self) -> np.ndarray:
        """Z* of every topic as rows in the ideal order of Eq. 4 (``none``-padded): greedy by
        novelty gain given the ranks above, ties to the passage selected earlier (the usual
        approximation of the ideal alpha-nDCG ranking).

        Topics are grouped by their number of answerable questions so that each gain is the
        sum numpy forms for one row of that length, as the paper's formula computed topic by
        topic does: equal gains then compare equal here too, and ties go to the earlier
        passage in both (the oracle of ``tests/oracles``).
        """
        oracle = self.required_rows
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
        return np.take_along_axis(oracle, order, axis=1)

    def density(self, cov: np.ndarray, tokens: np.ndarray, oracle_tokens: np.ndarray,
                weight: float) -> np.ndarray:
        """Den (Eq. 6) per topic, with :func:`crux.density`'s undefined cases."""
        cov_star = self.oracle_coverage
        with np.errstate(divide="ignore", invalid="ignore"):
            value = ((cov / tokens) / (cov_star / oracle_tokens)) ** weight
        undefined = np.isnan(cov) | np.isnan(cov_star) | (cov_star == 0) | (oracle_tokens <= 0)
        value = np.where(cov == 0, 0.0, np.where(tokens <= 0, np.nan, value))
        return np.where(undefined, np.nan, value)

    # --- ndeval's alpha-nDCG ------------------------------------------------------------------

    def ndeval_ranked_dcg(self, rows: np.ndarray) -> np.ndarray:
        """ndeval's cumulative alpha-DCG at ranks 1..20 of each topic's ``rows``."""
        rows = rows[:, :NDEVAL_CUTOFF]
        rel = self.ndeval_rel[np.arange(len(self.topic_ids))[:, None], rows]
        return ndeval_dcg(rel, self.alpha, self.ndeval_actual, self.ndeval_ideal_ideal)

    @cached_property
    def ndeval_ideal_ideal(self) -> np.ndarray:
        return ideal_ideal_gain(self.ndeval_actual, self.alpha)


def _rank_within(group: np.ndarray, order: np.ndarray, n_groups: int) -> np.ndarray:
    """Each item's place within its group, in ``order`` (a permutation that lists every
    group's items together, groups ascending)."""
    counts = np.bincount(group, minlength=n_groups)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    place = np.empty(len(group), dtype=np.int64)
    place[order] = np.arange(len(group)) - first[group[order]]
    return place


def select_required_rows(answers: np.ndarray, n_kept: np.ndarray, none: int) -> np.ndarray:
    """The greedy required subset P** of Sec. 3.2 for every topic at once: ``answers[t,
    row, i]`` (rows in the topic's natural passage order), the rows chosen in selection order,
    ``none``-padded: repeatedly the row that answers the most still-unanswered questions,
    until none answers anything new. Ties go to the first row (argmax's first maximum): the
    topic's natural passage order, as the CRUX authors' greedy takes the first maximum
    (DylanJoo/crux ``augmentation/create_diversity_qrels.py``)."""
    n_topics = answers.shape[0]
    chosen = np.full((n_topics, max(1, answers.shape[2])), none, dtype=np.int64)
    open_q = np.arange(answers.shape[2])[None, :] < n_kept[:, None]
    everyone = np.arange(n_topics)
    steps = 0
    for step in range(answers.shape[2]):
        gains = (answers & open_q[:, None, :]).sum(axis=2)
        best = np.argmax(gains, axis=1)
        take = gains[everyone, best] > 0
        if not take.any():
            break
        chosen[take, step] = best[take]
        open_q[take] &= ~answers[everyone[take], best[take]]
        steps = step + 1
    return chosen[:, :steps]

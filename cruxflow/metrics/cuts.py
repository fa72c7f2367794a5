"""A run's contexts, cut from its lines by column (no object per line): which lines of each
topic form its context at a cutoff (``cut``), in which order (``order``, the tie policy),
sorted once per order and shared by every cutoff (issues 36, 41); and :class:`Contexts`, what
a compute function of :mod:`cruxflow.metrics.compute` is given."""

from __future__ import annotations

import numpy as np

from cruxflow.data.runs import RunLines, ids_breaking_ties, score_order, tie_ranks
from cruxflow.metrics.judged import JudgedIndex, TopicArrays


class Cut:
    """One run's contexts at one cutoff: ``rows[t, r]`` (the row of each topic's r-th passage
    in its matrix; ``none`` past the context's end or for a passage the topic did not judge),
    ``code[t, r]`` (the run's number of that passage, -1 past the end), ``n[t]`` (the
    context's length), ``size[t]`` (the cutoff k, |Z*| for ``oracle``), ``in_run[t]`` (the
    topic has a line inside the cut: any line, or one of rank <= k), ``tied[t]`` (the line
    at place k and the one after it score the same: the tie policy decides the context), and
    ``cache`` for what several measures share; ``run`` is the :class:`RunIndex` it was cut
    from."""

    def __init__(self, rows, code, n, size, in_run, tied, run):
        self.rows, self.code, self.n, self.size, self.in_run = rows, code, n, size, in_run
        self.tied, self.run = tied, run
        self.cache: dict = {}


class RunIndex:
    """A run's lines against one :class:`JudgedIndex`: each line's topic index (-1: not a
    judged topic), its row in that topic's matrix and its place among equal scores (the
    passage ids' string order, for the tie policies)."""

    def __init__(self, index: JudgedIndex, lines: RunLines):
        self.lines = lines
        run_topic = np.array([index.topic_index.get(t, -1) for t in lines.topics] or [-1],
                             dtype=np.int64)
        self.topic = run_topic[lines.topic] if len(lines.topic) else lines.topic.copy()
        # each distinct passage's number among the judged ones (-1: judged for no topic)
        self.number = index.numbers(lines.passages)
        self.row = index.rows_of(self.topic, self.number[lines.passage]
                                 if len(lines.passage) else lines.passage)
        self.tokens: np.ndarray | None = None   # the scorer's: tokens per passage, -2 unknown
        # the lines by run topic and score, descending: what the tie ranks and both score
        # orders start from (one sort, none for a run written in that order)
        self._by_score = score_order(lines.topic, lines.score)
        self.tie = tie_ranks(lines, self._by_score)
        self.present = np.zeros(len(index.topic_ids), dtype=bool)   # the run has the topic
        self.present[run_topic[run_topic >= 0]] = True
        self.n_topics, self.none = len(index.topic_ids), index.none
        self._orders: dict[str, np.ndarray] = {}
        self.cuts: dict[tuple, Cut] = {}     # the scorer's: its cuts of this run, by key

    def ordered(self, order: str) -> np.ndarray:
        """The judged topics' lines, topic by topic (ascending), each topic's in ``order``:
        computed once per order and shared by every cutoff."""
        cached = self._orders.get(order)
        if cached is None:
            if order == "file":
                at = np.flatnonzero(self.topic >= 0)
                cached = at[np.lexsort((self.lines.line[at], self.topic[at]))]
            else:
                cached = self._score_ordered(order == "ndeval")
            self._orders[order] = cached
        return cached

    def _score_ordered(self, ascending_ids: bool) -> np.ndarray:
        """The judged topics' lines by topic index, score descending, tied scores by passage
        id (ascending: ndeval's order; descending: trec_eval's), from the lines by run topic
        and score (``_by_score``): the tied lines reordered among themselves, then the run
        topics' blocks put in the judged topics' order. The same order as sorting by
        (topic index, -score, -/+ tie rank), without sorting every line again."""
        at = self._by_score[self.topic[self._by_score] >= 0]
        if not len(at):
            return at
        at = ids_breaking_ties(self.lines, at, self.tie, ascending_ids)
        r = self.lines.topic[at]
        # each run topic's lines are one block; the blocks in ascending judged topic index
        starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
        block_topic = self.topic[at[starts]]
        if (block_topic[1:] < block_topic[:-1]).any():
            blocks = np.argsort(block_topic)
            lengths = np.diff(np.append(starts, len(at)))[blocks]
            first = np.repeat(starts[blocks] - (np.cumsum(lengths) - lengths), lengths)
            at = at[first + np.arange(len(at))]
        return at

    def cut(self, size: np.ndarray, cut: str = "score", order: str = "score") -> Cut:
        """The contexts: per topic the first ``size[t]`` lines in ``order`` among the lines
        ``cut`` keeps (every line, or those of rank <= ``size[t]``)."""
        lines = self.lines
        keep = self.topic >= 0
        if cut == "rank":
            if lines.rank is None:
                raise ValueError("cut='rank' reads the run's rank column: give a TREC run "
                                 "file, or a frame with a rank column")
            keep &= lines.rank <= size[np.maximum(self.topic, 0)]
        at = self.ordered(order)    # sorted once per order; a cut keeps its lines' order
        if cut == "rank":           # (the order holds the judged topics' lines only)
            at = at[keep[at]]
        t = self.topic[at]
        starts = np.searchsorted(t, np.arange(self.n_topics))
        place = np.arange(len(at)) - starts[t]
        count = np.bincount(t, minlength=self.n_topics)
        more = np.flatnonzero((count > size) & (size > 0))
        tied = np.zeros(self.n_topics, dtype=bool)
        if order != "file" and len(more):
            last = at[starts[more] + size[more] - 1]
            tied[more] = lines.score[last] == lines.score[at[starts[more] + size[more]]]
        inside = place < size[t]
        n = count
        if not inside.all():        # (a copy of every line only where the cut drops some)
            at, t, place = at[inside], t[inside], place[inside]
            n = np.bincount(t, minlength=self.n_topics)
        width = int(n.max(initial=0))
        rows = np.full((self.n_topics, width), self.none, dtype=np.int64)
        code = np.full((self.n_topics, width), -1, dtype=np.int64)
        rows[t, place] = self.row[at]
        code[t, place] = lines.passage[at]
        in_run = count > 0          # a line of the topic that the cut keeps
        return Cut(rows, code, n, np.asarray(size), in_run, tied, self)


class Contexts:
    """A run's contexts at one cutoff as one measure sees them: the contexts (``rows``,
    ``size``, ``n``: :class:`Cut`), the judgments' arrays at the name's eta and alpha
    (``arrays``), the passages' token counts (:meth:`tokens`, :meth:`oracle_tokens`, from
    ``counter``: the engine, :class:`~cruxflow.metrics.scorer.ContextScorer`), and
    :meth:`shared` for what several measures reuse."""

    def __init__(self, cut: Cut, arrays: TopicArrays, counter):
        self.cut, self.arrays, self.counter = cut, arrays, counter
        self.rows, self.size, self.n = cut.rows, cut.size, cut.n
        self.topic_ids = arrays.topic_ids

    def shared(self, what, make):
        """What ``make()`` returns, made once per (``what``, the arrays' eta and alpha) for
        these contexts."""
        key = (what, self.arrays.eta, self.arrays.alpha)
        if key not in self.cut.cache:
            self.cut.cache[key] = make()
        return self.cut.cache[key]

    def tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens of each context, whether a passage of it has no text or token count)."""
        return self.shared("tokens", lambda: self.counter.context_tokens(self.cut))

    def oracle_tokens(self) -> np.ndarray:
        """Tokens of each topic's Z*."""
        return self.counter.oracle_token_counts(self.arrays)

"""rac_eval.py's P@k, nDCG@k and alpha_nDCG@k for every topic of a run at once, on arrays, and
the registry's names of the script's measures (:func:`measure_names`).

The script gets them from ir_measures: trec_eval (pytrec_eval) for P and nDCG over the
diversity qrels read as binary qrels, ndeval (pyndeval) for alpha-nDCG over the diversity
qrels. Building those two evaluators for CRUX-Multi-News (180,000 qrels lines) and converting
a run for them costs more than the rest of a ``crux-eval`` call (issue 26), so the same
computations are done here with numpy, in the libraries' own orders, and
``tests/test_crux_eval_measures.py`` compares both routes, value for value, on the release's
files and on random qrels and runs with ties. :class:`cruxflow.metrics.crux_eval.
CruxEvalInputs` uses the libraries instead where these arrays would be too large.

What is copied from the libraries' definitions (trec_eval ``m_P.c``, ``m_ndcg_cut.c``; ndeval
``ndeval.c`` as :mod:`cruxflow.metrics.batch` reproduces it):

* trec_eval orders a topic's lines by score, descending, ties by passage id descending;
  ``P_k`` is the number of relevant passages in the first k over k; ``ndcg_cut_k`` sums
  ``gain / log2(rank + 1)`` over the first k in rank order (gain 1: the binary qrels), the
  ideal the same over the topic's relevant passages; topics without a relevant passage are
  not evaluated;
* pyndeval orders a topic's lines by score, descending, ties by passage id ascending;
  alpha-nDCG@k is alpha-DCG@k over ndeval's greedy ideal at k (0 where either is 0), every
  topic of the qrels evaluated (one with only 0 lines gets 0); subtopics are numbered in the
  order they first appear in the file, as pyndeval numbers them.
"""

from __future__ import annotations

import math
from itertools import repeat

import numpy as np

from cruxflow.data.columns import Codes, IdTable
from cruxflow.data.ingest.crux_common import DiversityQrels
from cruxflow.metrics.batch import _rank_within
from cruxflow.metrics.crux_eval_io import RunLines
from cruxflow.metrics.ndeval import actual_subtopics, ndeval_dcg, ndeval_ideal
from cruxflow.metrics.options import DEFAULTS

# the (topics x passages x subtopics) judgments above this many cells are left to the libraries
MAX_CELLS = 50_000_000


class QrelsArrays:
    """The diversity qrels of one call as arrays (built once for all its runs).

    ``rel[t, j, s]``: the j-th passage of topic t is judged relevant (>= 1) for its s-th
    subtopic.
    """

    def __init__(self, qrels: DiversityQrels, k: int, alpha: float):
        self.k, self.alpha = k, alpha
        (topics, t_code), (subtopics, s_code), (passages, p_code) = qrels.codes()
        # topics and subtopics numbered by first appearance (pyndeval's numbering of subtopics)
        self.topic_index = {t: i for i, t in enumerate(topics)}
        relevant = qrels.relevance >= 1
        # a (topic, passage) pair by number: by the passage id alone where no id is judged
        # for two topics (CRUX's ids carry their topic), which is faster to look up
        pair_of_row = p_code
        pair_topic = np.zeros(len(passages), dtype=np.int64)
        pair_topic[pair_of_row] = t_code
        self.by_passage = bool((pair_topic[pair_of_row] == t_code).all())
        if self.by_passage:
            self.pair_index = qrels.passage_index()
            self._passage_table = IdTable(passages)   # the same numbers, looked up on bytes
            pair_passage = np.arange(len(passages))
        else:
            pairs = Codes()   # (topic code, passage code), by first appearance
            pairs.add(list(zip(t_code.tolist(), p_code.tolist(), strict=True)))
            pair_of_row = pairs.codes()
            pair_topic, pair_passage = (np.array(c, dtype=np.int64).reshape(-1)
                                        for c in zip(*pairs.values, strict=True))
            self.pair_index = {(topics[t], passages[p]): i
                               for i, (t, p) in enumerate(pairs.values)}
        self.pair_topic = pair_topic
        n_topics = len(self.topic_index)
        # each passage's place within its topic (j), and among its topic's ids in string order
        self.pair_slot = _rank_within(pair_topic, np.argsort(pair_topic, kind="stable"),
                                      n_topics)
        id_rank = _rank_within(pair_topic, _by_topic_and_id(
            pair_topic, passages, pair_passage,
            self._passage_table if self.by_passage else None), n_topics)
        # each subtopic's place within its topic, in pyndeval's order
        n_sub = max(1, len(subtopics))
        topic_subtopic, slot_of_row = np.unique(t_code * n_sub + s_code, return_inverse=True)
        slots = _rank_within(topic_subtopic // n_sub, np.arange(len(topic_subtopic)), n_topics)
        width = int(np.bincount(pair_topic, minlength=1).max()) if len(pair_topic) else 1
        depth = int(slots.max()) + 1 if len(slots) else 1
        self.too_large = n_topics * width * depth > MAX_CELLS
        if self.too_large:
            return
        self.rel = np.zeros((n_topics, width + 1, depth), dtype=bool)   # last: not judged
        at = relevant
        self.rel[t_code[at], self.pair_slot[pair_of_row[at]], slots[slot_of_row[at]]] = True
        self.n_relevant = self.rel.any(axis=2).sum(axis=1)
        ranks = np.full((n_topics, width + 1), -1, dtype=np.int64)
        ranks[pair_topic, self.pair_slot] = id_rank
        # (only the value at rank k is read: the ideal's first k ranks chosen)
        self.ideal_alpha = ndeval_ideal(self.rel, ranks, alpha, depth=k)
        self.actual = actual_subtopics(self.rel)
        self.none = width
        self.discount = np.array([1.0 / math.log2(i + 2) for i in range(k)])
        self.ideal_dcg = np.concatenate(([0.0], np.cumsum(self.discount)))  # by relevant count

    def evaluate(self, run: RunLines
                 ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """``({topic: P@k}, {topic: nDCG@k}, {topic: alpha_nDCG@k})`` of a run's kept lines
        over the topics each library evaluates."""
        k, n_lines, run_topics = self.k, len(run.topic), run.topics
        r, score = run.topic, run.score
        topic = np.array([self.topic_index.get(t, -1) for t in run_topics], dtype=np.int64)
        if self.by_passage:
            known = self._passage_table.numbers(run.passages)
            pair = known[run.passage]
            pair = np.where(self.pair_topic[pair] == topic[r], pair, -1)   # -1: not judged
        else:
            pairs = zip(map(run_topics.__getitem__, r.tolist()),
                        map(run.passages.__getitem__, run.passage.tolist()), strict=True)
            pair = np.fromiter(map(self.pair_index.get, pairs, repeat(-1)), np.int64, n_lines)
        by_score = score_order(r, score)
        id_rank = _tie_ranks(run, by_score)
        slot = np.where(pair >= 0, self.pair_slot[np.maximum(pair, 0)], self.none)
        starts = np.searchsorted(r, np.arange(len(run_topics)))
        by_trec = ids_breaking_ties(run, by_score, id_rank, ascending_ids=False)
        by_ndeval = ids_breaking_ties(run, by_score, id_rank, ascending_ids=True)
        judged = topic >= 0
        rel_run = np.zeros((len(run_topics), k), dtype=bool)
        rel_sub = np.zeros((len(run_topics), k, self.rel.shape[2]), dtype=bool)
        t_of = np.maximum(topic, 0)
        for order, relevant_only in ((by_trec, True), (by_ndeval, False)):
            place = np.arange(n_lines) - starts[r[order]]
            inside = place < k
            rows, cols = r[order][inside], place[inside]
            found = self.rel[t_of[rows], slot[order][inside]] & judged[rows, None]
            if relevant_only:
                rel_run[rows, cols] = found.any(axis=1)
            else:
                rel_sub[rows, cols] = found
        relevant = self.n_relevant[t_of] * judged
        p = rel_run.sum(axis=1) / k
        dcg = np.cumsum(rel_run * self.discount, axis=1)[:, -1]
        ndcg = dcg / np.where(relevant > 0, self.ideal_dcg[np.minimum(relevant, k)], 1.0)
        alpha_dcg = ndeval_dcg(rel_sub, self.alpha, self.actual[t_of])[:, k - 1]
        ideal = self.ideal_alpha[t_of, k - 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = np.where((alpha_dcg == 0) | (ideal == 0), 0.0, alpha_dcg / ideal)
        has_relevant = (relevant > 0).tolist()
        out_p, out_ndcg, out_alpha = {}, {}, {}
        for i, (tid, ok, in_qrels) in enumerate(zip(run_topics, has_relevant, judged.tolist(),
                                                     strict=True)):
            if ok:
                out_p[tid], out_ndcg[tid] = float(p[i]), float(ndcg[i])
            if in_qrels:
                out_alpha[tid] = float(alpha[i])
        return out_p, out_ndcg, out_alpha


class RatingRowIndex:
    """The row of the judge's ratings matrix of each (topic, passage) of a run's lines: by the
    passage id alone where no id is rated for two topics (CRUX's ids carry their topic),
    looked up on its bytes (:class:`~cruxflow.data.columns.IdTable`), else by the pair in the
    dict ``row_of`` (``topic_of_row``: each row's topic code; ``unjudged``: the row of a pair
    the judge did not rate)."""

    def __init__(self, row_of: dict, topic_of_row: np.ndarray, unjudged: int):
        self.row_of, self.topic_of_row, self.unjudged = row_of, topic_of_row, unjudged
        self._table: IdTable | None | bool = False       # made when first asked

    def rows(self, run: RunLines, at: np.ndarray, known: np.ndarray) -> np.ndarray:
        """The row of each line ``at`` of ``run`` (``known``: each run topic's code)."""
        if self._table is False:
            pids = [p for _, p in self.row_of]
            self._table = IdTable(pids) if len(set(pids)) == len(pids) else None
        if self._table is None:
            keys = zip(map(run.topics.__getitem__, run.topic[at].tolist()),
                       map(run.passages.__getitem__, run.passage[at].tolist()), strict=True)
            return np.fromiter(map(self.row_of.get, keys, repeat(self.unjudged)), np.int64,
                               len(at))
        rows = self._table.numbers(run.passages)[run.passage[at]]
        same = (rows >= 0) & (self.topic_of_row[np.maximum(rows, 0)] == known[run.topic[at]])
        return np.where(same, rows, self.unjudged)


def _by_topic_and_id(topic: np.ndarray, passages: list[str], passage: np.ndarray,
                     table: IdTable | None) -> np.ndarray:
    """The order of (topic, passage id) pairs (``passage``: codes into ``passages``) by
    topic, then by id in string order (Python's, strcmp's on UTF-8): on the ids' bytes
    where the table holds them (ASCII ids, zero-padded, compare as big-endian words in that
    order), else on the strings."""
    found = None if table is None else table._bytes
    if found is None:
        pids = np.array(passages or [""])[passage]
        return np.lexsort((pids, topic))
    words = found[0].view(">u8").astype(np.uint64)[passage]
    return np.lexsort((*words.T[::-1], topic))


def score_order(topic: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The lines by topic code, then score descending, in their given order among equal
    scores (a stable sort). A run already in that order, as runs are written (each topic's
    lines together, best first), is recognised in one pass instead of sorted."""
    if len(topic) < 2:
        return np.arange(len(topic))
    step = topic[1:] - topic[:-1]
    if (step >= 0).all() and ((step > 0) | (score[1:] <= score[:-1])).all():
        return np.arange(len(topic))
    return np.lexsort((-score, topic))


def ids_breaking_ties(run: RunLines, order: np.ndarray, tie: np.ndarray,
                      ascending_ids: bool) -> np.ndarray:
    """``order`` (lines by topic, then score descending: :func:`score_order`, or a selection
    of it) with each stretch of tied scores put in passage id order, ascending (ndeval's) or
    descending (trec_eval's), by the lines' tie ranks (:func:`_tie_ranks`): the order of a
    sort by (topic, -score, -/+ tie rank), with only the tied lines sorted again."""
    r, score = run.topic[order], run.score[order]
    same = (r[1:] == r[:-1]) & (score[1:] == score[:-1])   # tied with the line before
    if not same.any():
        return order
    order = order.copy()
    tied = np.flatnonzero(np.concatenate(([False], same)) | np.append(same, False))
    group = np.cumsum(np.concatenate(([True], ~same)))[tied]
    rank = tie[order[tied]]
    order[tied] = order[tied][np.lexsort((rank if ascending_ids else -rank, group))]
    return order


def _tie_ranks(run: RunLines, order: np.ndarray | None = None) -> np.ndarray:
    """For each line tied in score with another of its topic, its passage id's place among
    the tied lines' ids in string order (Python's, which is strcmp's on UTF-8); 0 for the
    others, whose place no order needs. ``order``: :func:`score_order` of the run, where
    made already."""
    r, score = run.topic, run.score
    if order is None:
        order = score_order(r, score)
    same = (r[order][1:] == r[order][:-1]) & (score[order][1:] == score[order][:-1])
    tied = np.zeros(len(r), dtype=bool)
    tied[order[1:][same]] = True
    tied[order[:-1][same]] = True
    at = np.flatnonzero(tied)
    ranks = np.zeros(len(r), dtype=np.int64)
    if len(at):
        pids = list(map(run.passages.__getitem__, run.passage[at].tolist()))
        ranks[at[sorted(range(len(at)), key=pids.__getitem__)]] = np.arange(len(at))
    return ranks


# --- the script's measures under the registry's names ------------------------------------------

# What each of rac_eval's measures differs in from the registry's measure of the same name
# (cruxflow.metrics.names), as the registry's parameters (docs/evaluate.md, "Names"):
#   cut='rank'        the run's lines with rank column <= k (ours: the top k by score)
#   order='file'      Cov and Den take the first k kept lines in the file's order
#   order='ndeval'    alpha-nDCG breaks score ties by passage id ascending (ndeval's own;
#                     ours descending, trec_eval's: P and nDCG keep it)
#   topics='run'      the mean over the run's topics the measure is defined for (ours: every
#                     judged topic with an answerable question, a missing one 0); alpha-nDCG's
#                     is topics='all' (every topic of the diversity qrels) for a run that
#                     lacks only qrels topics with 0 lines, which the script then keeps at 0
#   qrels='diversity' P and nDCG on the diversity qrels read as binary (relevant: a passage
#                     with a line of relevance >= 1; ours: the relevance qrels, P* graded)
#   questions='all'   Cov counts every sub-question (without --filter-by-oracle)
# plus, as the registry writes them, rel (eta), alpha and weight where not the default. Every
# name parses (cruxflow.parse_measure) and cruxflow.evaluate(run, the release subset folder,
# [name]) recomputes its value (tests/test_printed_names.py).
NAME_PARAMETERS = {
    "P": {"cut": "rank", "qrels": "diversity", "topics": "run"},
    "nDCG": {"cut": "rank", "qrels": "diversity", "topics": "run"},
    "alpha_nDCG": {"cut": "rank", "order": "ndeval", "topics": "run"},
    "Cov": {"cut": "rank", "order": "file", "topics": "run"},
    "Den": {"cut": "rank", "order": "file", "topics": "run"},
    # not the script's: the judged share of the lines its Cov reads (Judged@k, issue 39)
    "Judged": {"cut": "rank", "order": "file", "topics": "run"},
}
# the registry's defaults (cruxflow.metrics.options): a parameter at its default is not written
DEFAULT_ETA, DEFAULT_ALPHA, DEFAULT_WEIGHT = DEFAULTS.eta, DEFAULTS.alpha, DEFAULTS.density_weight


def _name(measure: str, k: int, **extra) -> str:
    """The registry's canonical name of the script's ``measure`` at ``k``."""
    from cruxflow.metrics.names import Name, parse

    params = {**NAME_PARAMETERS[measure], **extra}
    return str(parse(Name(measure, tuple(params.items()), k)))


def measure_names(k: int, filter_by_oracle: bool = False, with_density: bool = False, *,
                  eta: int = DEFAULT_ETA, alpha: float = DEFAULT_ALPHA,
                  density_weight: float = DEFAULT_WEIGHT) -> dict[str, str]:
    """``{our name: the script's name}`` of the measures of one call, in the script's order."""
    rel = {"rel": eta}
    questions = {} if filter_by_oracle else {"questions": "all"}
    names = {_name("P", k): f"P@{k}", _name("nDCG", k): f"nDCG@{k}",
             _name("alpha_nDCG", k, alpha=alpha): f"alpha_nDCG@{k}",
             _name("Cov", k, **rel, **questions): f"Cov@{k}"}
    if with_density:
        names[_name("Den", k, **rel, weight=density_weight)] = f"Den@{k}"
    return names


def judged_name(k: int) -> str:
    """The registry's name of the judged share of the lines the script's Cov reads (its
    first k kept lines in file order): not one of the script's measures, so not in its
    line (:meth:`cruxflow.metrics.crux_eval.CruxEvalResult.line`)."""
    return _name("Judged", k)


def all_topics_name(name: str) -> str:
    """alpha-nDCG's name over every topic of the diversity qrels (the script's mean for a run
    that lacks only qrels topics with 0 lines)."""
    from cruxflow.metrics.names import parse

    return str(parse(name).with_(topics="all"))

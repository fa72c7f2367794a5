"""TREC runs as the scorers read them: the one run reader of every door that scores.

A run becomes :class:`RunLines`, its lines by column (topic and passage ids as codes into their
distinct values, scores, file line numbers and the rank column), with no Python object per
line: from a file (:func:`read_run_file`, a block of bytes at a time, optionally only the lines
whose rank column is at most a depth, as the CRUX authors' loader cuts a run) or from any
in-memory form a Python user has (:func:`as_run`: ``{query: {passage: score}}``, a ranx
``Run``, ir_measures ``ScoredDoc`` tuples, a DataFrame with ir_measures' or PyTerrier's
columns). The one tie policy orders the lines (:func:`score_order`, :func:`ids_breaking_ties`):
score descending, ties by passage id (descending, trec_eval's, by default). :func:`check_run`
checks a run against a dataset's topics and passage collection, naming file, line and field.

The pipeline's stages read a run as ranked lists of :class:`~cruxflow.data.io.RunRow`
(:func:`cruxflow.data.io.read_run`), whose line-by-line checks name a bad line here too.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from cruxflow.data.bounded import read_bytes, read_line_blocks
from cruxflow.data.columns import (
    Codes,
    blocks,
    decimals,
    has_repeat,
    id_bytes,
    integers,
    plain_decimals,
    split_fields,
)
from cruxflow.data.errors import DataError
from cruxflow.data.io import decode_text, read_run

# a run is read in blocks of about this many bytes: of a 500,000-line run only the few lines of
# rank <= k are kept, and a block's numpy calls on them cost more than its fresh memory does
# (blocks of 128 KiB: 0.17 s for such a run; 512 KiB: 0.12 s)
RUN_BLOCK_BYTES = 1 << 19


@dataclass
class RunLines:
    """A run's kept lines by column, each topic's lines together (topics in the order they
    first appear, a topic's lines in file order): what Cov and the arrays of
    the engine's contexts read (:mod:`cruxflow.metrics.cuts`), without a Python object per line."""

    topics: list[str]        # the run's topics
    topic: np.ndarray        # each line's index into ``topics``, ascending
    passages: list[str]      # the passage ids (distinct, or one per line: ``passage`` says)
    passage: np.ndarray      # each line's index into ``passages``
    score: np.ndarray        # float64
    line: np.ndarray         # the line number in the file, from 1 (or the given order)
    rank: np.ndarray | None = None   # the rank column (int64), where the input has one

    @classmethod
    def from_topics(cls, topics: Mapping[str, list[tuple[str, float, int]]]) -> RunLines:
        rows = [(t, *row) for t, lines in topics.items() for row in lines]
        passages = Codes()
        passages.add([pid for _, pid, _, _ in rows])
        return cls(list(topics), np.repeat(np.arange(len(topics)), [len(v) for v in
                                                                     topics.values()]),
                   passages.values, passages.codes(),
                   np.array([s for _, _, s, _ in rows], dtype=np.float64),
                   np.array([ln for _, _, _, ln in rows], dtype=np.int64))

    @classmethod
    def from_columns(cls, qids: list[str], pids: list[str], scores, ranks=None,
                     topics: list[str] | None = None) -> RunLines:
        """Lines given by column, in their order (the order is the "file order"); each
        topic's lines are brought together, in that order. ``topics``: the run's topics in
        order, those with no line (an empty list) included."""
        import pandas as pd

        seeded = list(dict.fromkeys(topics or ()))
        topic, topic_values = pd.factorize(np.array(seeded + list(qids), dtype=object))
        topic = topic[len(seeded):].astype(np.int64)
        passage, passage_values = pd.factorize(np.array(pids, dtype=object))
        order = np.argsort(topic, kind="stable")
        score = np.asarray(scores, dtype=np.float64).reshape(-1)
        rank = None if ranks is None else np.asarray(ranks, dtype=np.int64)[order]
        return cls(list(topic_values), topic[order], list(passage_values),
                   passage.astype(np.int64)[order], score[order],
                   np.arange(1, len(topic) + 1, dtype=np.int64)[order], rank)

    def starts(self) -> np.ndarray:
        """Where each topic's lines start."""
        return np.searchsorted(self.topic, np.arange(len(self.topics)))

    def by_topic(self) -> dict[str, list[tuple[str, float, int]]]:
        pids = map(self.passages.__getitem__, self.passage.tolist())
        out: dict[str, list[tuple[str, float, int]]] = {t: [] for t in self.topics}
        for t, row in zip(self.topic.tolist(), zip(pids, self.score.tolist(),
                                                    self.line.tolist(), strict=True),
                          strict=True):
            out[self.topics[t]].append(row)
        return out


class RunFile:
    """The lines of a run with rank <= k, per topic in file order: ``topics`` maps each topic
    to its lines (passage, score, line); :attr:`lines` holds the same by column. Either is
    given and the other made when first asked.

    What the cut did: ``beyond_k`` lines cut (rank > k), :attr:`file_topics` every topic of
    the file (also those whose every line was cut) and :attr:`not_a_rank` where the rank
    column is not 1..n within each topic (:class:`RankColumn`). Reading checks the rank column
    on the ranks and the kept lines alone (``steady``: each topic's lines together, ranked
    1, 2, 3, ... in file order); the file is read again for the topics of every line only
    where that check fails, or where the topics of the cut lines are asked for."""

    def __init__(self, path, k: int, topics: dict | None = None, beyond_k: int = 0, *,
                 lines: RunLines | None = None, steady: bool = True):
        self.path, self.k, self.beyond_k = Path(path), k, beyond_k   # beyond_k: lines cut
        self._topics, self._lines = topics, lines
        if topics is None and lines is None:
            self._topics = {}
        self.steady = steady
        self._whole: tuple[list[str], RankColumn | None] | None = None

    def _every_line(self) -> tuple[list[str], RankColumn | None]:
        if self._whole is None:
            self._whole = ((self.lines.topics, None) if not self.beyond_k and self.steady
                           else read_every_topic(self.path))
        return self._whole

    @property
    def file_topics(self) -> list[str]:
        """Every topic the file names, in order of first appearance."""
        return self._every_line()[0]

    @property
    def not_a_rank(self) -> RankColumn | None:
        """Where the rank column is not a rank. Without reading the file again (``steady``),
        one blind spot: a topic whose every line continues the ranks of the topic before
        beyond k (a line counter across topics) is seen once the file is read again, as it
        is where that topic is a qrels topic the run misses."""
        return self._whole[1] if self._whole is not None \
            else None if self.steady else self._every_line()[1]

    def cut_topics(self) -> list[str]:
        """The topics of the file with no line of rank <= k."""
        kept = set(self.lines.topics)
        return [t for t in self.file_topics if t not in kept]

    @property
    def topics(self) -> dict[str, list[tuple[str, float, int]]]:
        if self._topics is None:
            self._topics = self._lines.by_topic()
        return self._topics

    @property
    def lines(self) -> RunLines:
        """The kept lines by column. Given as ``topics``, every line given is one the cut
        kept: each gets rank 1 (within any cut by rank), its third field as its line."""
        if self._lines is None:
            self._lines = RunLines.from_topics(self._topics)
            self._lines.rank = np.ones(len(self._lines.topic), dtype=np.int64)
        return self._lines

    def scores(self) -> dict[str, dict[str, float]]:
        return {t: {pid: score for pid, score, _ in rows} for t, rows in self.topics.items()}

    def __eq__(self, other) -> bool:
        return isinstance(other, RunFile) and (self.path, self.k, self.topics, self.beyond_k) \
            == (other.path, other.k, other.topics, other.beyond_k)

    def __repr__(self) -> str:
        return f"RunFile({str(self.path)!r}, k={self.k}, {len(self.lines.topics)} topics)"


@dataclass
class RankColumn:
    """Where a run's rank column is not a rank (1..n within each topic): how many of its
    topics, and the first such topic with its ranks in file order (the first few)."""

    topics: int
    of: int
    example: str
    ranks: list[int]

    def line(self, k: int) -> str:
        shown = ", ".join(map(str, self.ranks[:5])) + (", ..." if len(self.ranks) > 5 else "")
        return (f"ranks not 1..n in {self.topics} of {self.of} topics ({self.example}: "
                f"{shown}); cut at rank <= {k} all the same")


def rank_column(topic: np.ndarray, rank: np.ndarray, names: list[str]) -> RankColumn | None:
    """None when, within each topic (``topic``: every line's code into ``names``, numbered by
    first appearance), the ranks are 1..n; else where they are not."""
    n = len(rank)
    if not n:
        return None
    starts = np.flatnonzero(np.diff(topic, prepend=-1))
    if len(starts) == len(names):   # each topic's lines together: 1..n in file order?
        if np.array_equal(rank, np.arange(n) - np.repeat(starts, np.diff(starts, append=n)) + 1):
            return None
    order = np.lexsort((rank, topic))            # any order: each topic's ranks sorted
    sorted_topic, sorted_rank = topic[order], rank[order]
    first = np.flatnonzero(np.diff(sorted_topic, prepend=-1))
    place = np.arange(n) - np.repeat(first, np.diff(first, append=n)) + 1
    bad = np.unique(sorted_topic[sorted_rank != place])
    if not len(bad):
        return None
    example = int(bad.min())   # codes number topics by first appearance
    return RankColumn(len(bad), len(names), names[example],
                      rank[topic == example][:7].tolist())


def read_run_file(path, max_rank: int | None = None) -> RunFile:
    """A run's lines (only those whose rank column is <= ``max_rank``, where given: the CRUX
    authors' loader's cut), in file order, the file read once; the kept lines' rank column is
    kept too (``lines.rank``).

    Every line is checked (six columns, an integer rank, a score that is a number and not
    NaN) and the kept lines for a passage given twice for a topic; a file that fails a check
    is read again by :func:`cruxflow.data.io.read_run`, whose error names the file, line and
    field. (A passage repeated below the cut changes no number, as in the script, whose loader
    keeps the lines of rank <= k only.)

    Half a million lines split one by one cost more than the rest of the evaluation, so a
    file of plain ASCII lines ending in LF is read from the file a block of bytes at a time
    (:func:`~cruxflow.data.io.read_line_blocks`; never held whole), each block checked with
    numpy (:func:`_plain_rows`: six fields a line, digit ranks, plain decimal scores), and of
    its rows within the cut only the topic, passage and score fields are cut out. A block
    with an exponent or a sign in a score, or a control character, gets its columns from one
    ``str.split`` and the same six-columns check on its bytes (a block with other white space
    than ASCII's between fields is checked line by line instead); a file with a byte-order
    mark, CRLF line ends or non-ASCII text is read whole as
    :func:`~cruxflow.data.io.read_text` reads it, in blocks cut from the text, the same way.
    The kept lines come back by column (:class:`RunLines`), the topics and passages as codes.
    Every line's rank is checked to be 1, 2, 3, ... within each topic's lines in file order
    (with the kept lines' topics: :class:`RunFile`, ``steady``), to say whether the rank column
    is a rank at all; the topics of the cut lines are read only when asked
    (:func:`read_every_topic`).
    """
    # a file of ASCII lines ending in LF is read block by block and never held whole (see
    # cruxflow.data.io.read_line_blocks); any other is read whole as text
    top = _read_top(path, max_rank, read_line_blocks(path, RUN_BLOCK_BYTES), plain=True)
    if top is None:
        top = _read_top(path, max_rank, blocks(decode_text(read_bytes(path), path)),
                        plain=False)
    return top


def _read_top(path, k: int | None, text_blocks: Iterable[bytes | str], plain: bool
              ) -> RunFile | None:
    """:func:`read_run_file` over the blocks of a file (bytes if ``plain``); None when a block
    of bytes is not ASCII lines ending in LF (a byte-order mark, CRLF, UTF-8 text)."""
    topics, passages = Codes(), Codes()
    scores, lines, kept_ranks = [], [], []
    rows = kept = 0
    first_line = 1
    last_rank, steady = 0, True   # each rank 1 or the line before's + 1 (see RunFile)
    for block in text_blocks:
        if plain and (not block.isascii() or b"\r" in block):
            return None
        fast = _plain_rows(block, k) if plain else None
        n_lines = block.count(b"\n" if plain else "\n")
        if plain:
            block = block.decode("ascii")   # ASCII: byte offsets are character offsets
        if fast is not None:
            data, n_rows, line_of_kept, (s0, e0), (s2, e2), (s4, e4), rank, at = fast
            # a topic's id cut out where it changes from the kept row before's
            new, (sa, ea) = _topic_changes(data, s0, e0) if len(s0) else (None, (s0, e0))
            qids = [block[a:b] for a, b in zip(sa.tolist(), ea.tolist(), strict=True)]
            repeats = None if new is None else np.diff(np.append(np.flatnonzero(new), len(s0)))
            pids = [block[a:b] for a, b in zip(s2.tolist(), e2.tolist(), strict=True)]
            score = decimals(data, s4, e4)
            if score is None:
                score = np.fromiter(map(float, [block[a:b] for a, b in zip(
                    s4.tolist(), e4.tolist(), strict=True)]), np.float64, len(s4))
        else:
            tokens = block.split()
            line_of_row = _six_fields(block, len(tokens))
            if line_of_row is None:
                _refuse(path)
            n_rows = len(tokens) // 6
            try:
                rank = np.fromiter(map(int, tokens[3::6]), np.int64, n_rows)
                score = np.fromiter(map(float, tokens[4::6]), np.float64, n_rows)
            except ValueError:
                _refuse(path)
            if np.isnan(score).any():
                _refuse(path)
            at = np.flatnonzero(rank <= k) if k is not None else np.arange(n_rows)
            qids = [tokens[6 * j] for j in at.tolist()]
            repeats = None
            pids = [tokens[6 * j + 2] for j in at.tolist()]
            score, line_of_kept = score[at], line_of_row[at]
        if steady and n_rows:
            before = np.empty(n_rows, dtype=np.int64)
            before[0], before[1:] = last_rank, rank[:-1]
            steady = bool(np.all((rank == 1) | (rank == before + 1)))
            last_rank = int(rank[-1])
        kept_ranks.append(rank[at])
        topics.add(qids, repeats)
        passages.add(pids)
        scores.append(score)
        lines.append(line_of_kept + (first_line - 1))
        rows += n_rows
        kept += len(pids)
        first_line += n_lines
    if not rows:
        return RunFile(path, k, {}, 0)
    topic, passage = topics.codes(), passages.codes()
    if has_repeat(topic, passage):
        _refuse(path)   # a passage twice for a topic within the cut
    if steady:   # and the kept lines' topics change where the ranks start again at 1, each once
        changes = np.flatnonzero(np.diff(topic, prepend=-1))
        steady = len(changes) == len(topics.values) and np.array_equal(
            changes, np.flatnonzero(np.concatenate(kept_ranks) == 1))
    order = np.argsort(topic, kind="stable")   # each topic's lines together, in file order
    return RunFile(path, k, beyond_k=rows - kept, steady=steady, lines=RunLines(
        topics.values, topic[order], passages.values, passage[order],
        np.concatenate(scores)[order], np.concatenate(lines)[order],
        np.concatenate(kept_ranks)[order]))


def read_every_topic(path) -> tuple[list[str], RankColumn | None]:
    """Every topic a run file names (in order of first appearance) and where its rank column
    is not a rank (:func:`rank_column`), the file read again, every line's topic and rank (the
    topic cut out of a block only where it changes from the line before's)."""
    names: dict[str, int] = {}
    all_topics, all_ranks = [], []
    text_blocks = read_line_blocks(path)
    for plain in (True, False):
        for block in text_blocks:
            if plain and (not block.isascii() or b"\r" in block):
                break
            split = split_fields(block, 6) if plain else None
            rank = None if split is None else integers(split[0], split[1][3::6],
                                                       split[2][3::6])
            if rank is not None:
                data, starts, ends, _ = split
                text = block.decode("ascii")
                new, (sa, ea) = _topic_changes(data, starts[0::6], ends[0::6])
                firsts = [text[a:b] for a, b in zip(sa.tolist(), ea.tolist(), strict=True)]
                codes = np.fromiter((names.setdefault(t, len(names)) for t in firsts),
                                    np.int64, len(firsts))
                all_topics.append(codes[np.cumsum(new) - 1] if new is not None else codes)
            else:
                tokens = (block.decode("ascii") if plain else block).split()
                rank = np.fromiter(map(int, tokens[3::6]), np.int64, len(tokens) // 6)
                all_topics.append(np.fromiter(
                    (names.setdefault(t, len(names)) for t in tokens[0::6]), np.int64,
                    len(rank)))
            all_ranks.append(rank)
        else:
            break
        # a block that is not plain ASCII: the whole file again, as read_run_file reads it
        names, all_topics, all_ranks = {}, [], []
        text_blocks = blocks(decode_text(read_bytes(path), path))
    topic = np.concatenate(all_topics) if all_topics else np.zeros(0, dtype=np.int64)
    rank = np.concatenate(all_ranks) if all_ranks else np.zeros(0, dtype=np.int64)
    return list(names), rank_column(topic, rank, list(names))


def _six_fields(text: str, n_tokens: int) -> np.ndarray | None:
    """The line number (from 1) of every row, when every non-blank line has six fields and
    ``str.split`` found the same fields; None otherwise."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    # str.split's ASCII whitespace: \t \n \v \f \r, the separators \x1c-\x1f, space
    space = ((data >= 9) & (data <= 13)) | ((data >= 28) & (data <= 32))
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    if len(starts) != n_tokens or n_tokens % 6:
        return None
    line = np.cumsum(data == 10, dtype=np.int32)[starts]   # newlines before each field
    row_line = line[0::6]
    # each row's six fields on one line, and no line holding fields of two rows
    if not (np.array_equal(row_line, line[5::6]) and np.all(np.diff(row_line) > 0)):
        return None
    return row_line + 1


def _plain_rows(block: bytes, k: int | None) -> tuple | None:
    """Of an ASCII block whose lines all have six fields separated by spaces and tabs, a rank
    of digits and a plain decimal score (:mod:`cruxflow.data.columns`): (its bytes, number of
    rows; of each row of rank <= k (every row with ``k=None``), its line number from 1, and
    where its topic, passage and score fields start and end; every row's rank; which rows are
    kept), so only those fields of the kept rows are cut out. None for any other block (a control
    character, an exponent, a sign, NaN, a bad line), which is read field by field."""
    split = split_fields(block, 6)
    if split is None:
        return None
    data, starts, ends, row_line = split
    rank = integers(data, starts[3::6], ends[3::6])
    if rank is None or not plain_decimals(data, starts[4::6], ends[4::6]):
        return None
    keep = np.flatnonzero(rank <= k) if k is not None else np.arange(len(rank))
    return (data, len(row_line), row_line[keep],
            *((starts[f::6][keep], ends[f::6][keep]) for f in (0, 2, 4)), rank, keep)


def _topic_changes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray
                   ) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray]]:
    """(per row, whether its topic field differs from the row before's, the first row's
    included; where the topic fields of those rows start and end), so that only a topic's
    first line of each stretch is cut out of the block. Fields of more than 64 bytes: (None,
    every row's)."""
    lengths = ends - starts
    longest = int(lengths.max())
    # (a field is followed by five more on its line: its window stays inside the block)
    if longest > 64 or starts[-1] + longest > len(data):
        return None, (starts, ends)
    # each row's first `longest` bytes (its field and what follows), compared with the row
    # before's inside the field only, where the two fields are as long
    chars = np.lib.stride_tricks.sliding_window_view(data, longest)[starts]
    differs = (chars[1:] != chars[:-1]) & (np.arange(longest) < lengths[1:, None])
    new = np.ones(len(starts), dtype=bool)
    new[1:] = (lengths[1:] != lengths[:-1]) | differs.any(axis=1)
    return new, (starts[new], ends[new])


def _refuse(path) -> None:
    read_run(path)   # raises the error that names the line
    raise DataError("not a TREC run (qid Q0 docid rank score tag)", path=path)



# --- the one tie policy -------------------------------------------------------------------

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
    descending (trec_eval's), by the lines' tie ranks (:func:`tie_ranks`): the order of a
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


def tie_ranks(run: RunLines, order: np.ndarray | None = None) -> np.ndarray:
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
        # the tied lines' distinct passages in string order; a line's rank is its passage's
        # (a passage appears once in a topic)
        codes, line_code = np.unique(run.passage[at], return_inverse=True)
        ranks[at] = string_ranks([run.passages[c] for c in codes.tolist()])[
            line_code.reshape(-1)]
    return ranks


def string_ranks(ids: list[str]) -> np.ndarray:
    """Each id's place among ``ids`` in string order (Python's, strcmp's on UTF-8): ASCII ids
    compared on their zero-padded bytes as big-endian words, for every id at once; others by
    Python's sort."""
    found = id_bytes(ids)
    if found is None or found[0].shape[1] > 64:
        order = sorted(range(len(ids)), key=ids.__getitem__)
    else:
        words = found[0].view(">u8").astype(np.uint64)
        order = np.lexsort(words.T[::-1])
    out = np.empty(len(ids), dtype=np.int64)
    out[order] = np.arange(len(ids))
    return out



# --- runs in memory ----------------------------------------------------------------------

RUN_COLUMNS = (("query_id", "doc_id", "score"), ("qid", "docno", "score"))


def as_run(run, *, name: str = "run"):
    """``run`` in any accepted form as :class:`RunLines` (see the module's docstring)."""
    if isinstance(run, RunLines):
        return run
    if isinstance(run, RunFile):
        return run.lines
    if isinstance(run, (str, Path)):
        return read_run_file(run, None).lines
    if hasattr(run, "columns"):
        return _run_frame(run, name)
    if not isinstance(run, Mapping) and callable(getattr(run, "to_dict", None)):
        run = run.to_dict()       # ranx's Run: {query: {passage: score}}
    if isinstance(run, Mapping) and all(isinstance(d, Mapping) for d in run.values()):
        return _score_dicts(run, name)
    if isinstance(run, Mapping):
        qids, pids, scores, ranks = [], [], [], []
        check_ids(run, "query_id", lambda i: f"query {i + 1}")
        for q, docs in run.items():
            if isinstance(docs, Mapping):
                for d, s in docs.items():
                    qids.append(str(q))
                    pids.append(str(d))
                    scores.append(s)
            else:                 # [RunRow, ...]: their order, and their rank column
                for r in docs:
                    qids.append(str(q))
                    pids.append(str(r.doc_id))
                    scores.append(r.score)
                    ranks.append(r.rank)
        return _lines(qids, pids, scores, ranks if len(ranks) == len(qids) and ranks else None,
                      name, lambda i: f"query {qids[i]} passage {pids[i]}",
                      [str(q) for q in run])
    if isinstance(run, Iterable):   # a list or a generator of ScoredDoc or 3-tuples
        rows = [_scored_doc(r, i, name) for i, r in enumerate(run)]
        for field, at in (("query_id", 0), ("doc_id", 1)):
            check_ids([r[at] for r in rows], field, lambda i: f"item {i + 1}")
        qids = [str(r[0]) for r in rows]
        pids = [str(r[1]) for r in rows]
        return _lines(qids, pids, [r[2] for r in rows], None, name,
                      lambda i: f"item {i + 1}")
    raise TypeError(f"{name}: a TREC run file, {{query: {{passage: score}}}}, a ranx Run, "
                    "ScoredDoc tuples or a DataFrame (query_id, doc_id, score or qid, docno, "
                    "score)")


def _scored_doc(row, i: int, name: str) -> tuple:
    """``(query_id, doc_id, score)`` of an item: an ir_measures ``ScoredDoc`` (or anything with
    those attributes) or a tuple of three."""
    if all(hasattr(row, a) for a in ("query_id", "doc_id", "score")):
        return row.query_id, row.doc_id, row.score
    if isinstance(row, tuple | list) and len(row) == 3:
        return tuple(row)
    raise DataError(f"{name}: expected ScoredDoc(query_id, doc_id, score) or a (query_id, "
                    f"doc_id, score) tuple, got {type(row).__name__} {row!r:.60}",
                    record=f"item {i + 1}")


def _is_missing(value) -> bool:
    """None, NaN (float or numpy) or pandas' NA: no id, though ``str`` would make one."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def check_ids(values, field: str, record) -> None:
    """Refuse a missing or empty id among ``values`` (``record(i)`` names the i-th): None,
    NaN and pandas' NA would otherwise be read as the ids 'None', 'nan' and '<NA>'. Ids that
    are all strings none of them blank, or all integers, are passed in a few passes in C (a
    qrels mapping of 5,000 topics x 100 passages: 0.023 s where a call per id took 0.131 s,
    best of 3); anything else is checked id by id, and the first bad one named."""
    if not isinstance(values, Mapping | list | tuple):
        values = list(values)          # read more than once below
    kinds = set(map(type, values))
    if kinds == {str} and "" not in values and not any(map(str.isspace, values)):
        return
    if kinds <= {int}:
        return
    for i, value in enumerate(values):
        if _is_missing(value) or (isinstance(value, str) and not value.strip()):
            raise DataError(f"{value!r} is no id", record=record(i), field=field)


def check_frame_ids(frame, columns) -> None:
    """:func:`check_ids` on a frame's id ``columns``, the missing found column-wise."""
    for column in columns:
        values = frame[column]
        missing = values.isna().to_numpy()
        if values.dtype.kind in "OUT" or values.dtype == "str":   # text ids: none blank
            text = values.astype(str)
            missing = missing | (text.str.strip() == "").to_numpy()
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise DataError(f"{values.iloc[i]!r} is no id ({int(missing.sum())} of "
                            f"{len(values)} rows)", record=f"row {i + 1}", field=column)


def _score_dicts(run: Mapping, name: str):
    """``{query: {passage: score}}`` by column at once (no check per entry: a dict holds a
    passage once per query; a score that is not a number, or NaN, is found on the whole
    column and then named)."""
    lengths = [len(d) for d in run.values()]
    total = sum(lengths)
    try:
        scores = np.fromiter(chain.from_iterable(d.values() for d in run.values()),
                             np.float64, total)
        bad = bool(np.isnan(scores).any())
    except (TypeError, ValueError):
        bad = True
    if bad:      # the slow route names the record
        qids = [str(q) for q, d in run.items() for _ in d]
        pids = [str(p) for d in run.values() for p in d]
        return _lines(qids, pids, [s for d in run.values() for s in d.values()], None, name,
                      lambda i: f"query {qids[i]} passage {pids[i]}", [str(q) for q in run])
    check_ids(run, "query_id", lambda i: f"query {i + 1}")
    topics = [str(q) for q in run]
    if len(set(topics)) != len(topics):
        raise DataError(f"{name}: two queries have the same id once written as text")
    # one passage id per line (a dict holds a passage once per query; numbering the ids
    # across queries would cost more than looking each up once)
    passages = list(map(str, chain.from_iterable(run.values())))
    if _MISSING_TEXTS.intersection(passages) or "" in passages:   # then find which one
        for q, docs in run.items():
            check_ids(docs, "doc_id", lambda i, q=q: f"query {q} passage {i + 1}")
    return RunLines(topics, np.repeat(np.arange(len(topics), dtype=np.int64), lengths),
                    passages, np.arange(total, dtype=np.int64), scores,
                    np.arange(1, total + 1, dtype=np.int64))


# what str() makes of a missing id (None, NaN, pandas' NA and NaT)
_MISSING_TEXTS = frozenset({"None", "nan", "<NA>", "NaT"})


def frame_columns(frame, choices, what: str) -> tuple[str, ...]:
    for names in choices:
        if set(names) <= set(frame.columns):
            return names
    wanted = " or ".join(", ".join(c) for c in choices)
    raise DataError(f"the {what} frame needs the columns {wanted}; it has "
                    f"{', '.join(map(str, frame.columns))}")


def _run_frame(frame, name: str):
    q, d, s = frame_columns(frame, RUN_COLUMNS, name)
    check_frame_ids(frame, (q, d))
    qids = frame[q].astype(str).tolist()
    pids = frame[d].astype(str).tolist()
    ranks = frame["rank"].tolist() if "rank" in frame.columns else None
    if ranks is not None:
        for i, value in enumerate(ranks):
            if not is_integer(value):
                raise DataError(f"rank {value!r} is not an integer", record=f"row {i + 1}",
                                field="rank")
    return _lines(qids, pids, frame[s].tolist(), ranks, name, lambda i: f"row {i + 1}")


def is_integer(value) -> bool:
    try:
        return not isinstance(value, bool) and float(value) == int(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _lines(qids, pids, scores, ranks, name: str, record, topics=None):
    values = []
    for i, s in enumerate(scores):
        try:
            value = float(s)
        except (TypeError, ValueError):
            raise DataError(f"score {s!r} is not a number", record=record(i),
                            field="score") from None
        if isinstance(s, bool) or math.isnan(value):
            raise DataError(f"score {s!r} is not a number", record=record(i), field="score")
        values.append(value)
    seen: set[tuple[str, str]] = set()
    for i, key in enumerate(zip(qids, pids, strict=True)):
        if key in seen:
            raise DataError(f"passage {key[1]!r} appears twice for query {key[0]!r}",
                            record=record(i), field="doc_id")
        seen.add(key)
    return RunLines.from_columns(qids, pids, values, ranks, topics)



# --- a run against a dataset ----------------------------------------------------------

def check_run(run, topics: Container[str], texts: Container[str] | None, path, *,
              strict_collection: bool = False) -> int:
    """Unknown topic ids in a run (not in ``topics``, a dataset's) are errors, not silent
    zeros; returns how many run lines rank a passage outside the collection (``texts``: its
    passage ids). ``texts=None`` checks the topics only (a collection that is not at hand
    cannot be checked against). ``run``: any form :func:`as_run` reads (each distinct passage
    is checked once).

    The released runs (``bm25.run``, ``dr_rankfirst.run``) retrieved from the whole CRUX corpus
    while a local copy holds the judged passages only: a passage outside the collection is an
    unjudged one (rated 0 for every question), counted here. ``strict_collection`` makes it an
    error instead. An id that is no passage id at all (where the collection's ids follow the
    ``<topic>:<doc>#<n>`` scheme and it does not) is an error naming the file and line.
    """
    lines = None
    if isinstance(run, Mapping) and isinstance(path, (str, Path)):
        try:    # the file's own line numbers, for the messages
            lines = read_run_file(path).lines
        except DataError:
            lines = None
    lines = lines if lines is not None else as_run(run)
    for qid in lines.topics:
        if qid not in topics:
            raise DataError(f"unknown topic {qid!r} (not in the dataset's topics)", path=path,
                            record=f"query {qid}", field="qid")
    if texts is None or not len(lines.passage):
        return 0
    scheme = _follows_scheme(next(iter(texts), ""))
    outside_ids = ~np.fromiter(map(texts.__contains__, lines.passages), bool,
                               len(lines.passages))
    outside = outside_ids[lines.passage]
    if not outside.any():
        return 0
    first = int(np.flatnonzero(outside)[np.argmin(lines.line[outside])])
    doc = lines.passages[lines.passage[first]]
    where = f"line {lines.line[first]}" if isinstance(path, (str, Path)) else \
        f"query {lines.topics[lines.topic[first]]}"
    if strict_collection:   # the file's first such line
        raise DataError(f"unknown passage {doc!r} (not in the passage collection; "
                        "--strict-collection)", path=path, record=where, field="docid")
    if scheme:
        bad = [i for i in np.flatnonzero(outside_ids).tolist()
               if not _follows_scheme(lines.passages[i])]
        if bad:
            at = np.flatnonzero(np.isin(lines.passage, bad))
            first = int(at[np.argmin(lines.line[at])])
            doc = lines.passages[lines.passage[first]]
            raise DataError(f"{doc!r} is not a passage id (<topic>:<doc>#<n>, as the "
                            "collection's)", path=path, record=f"line {lines.line[first]}"
                            if isinstance(path, (str, Path)) else
                            f"query {lines.topics[lines.topic[first]]}", field="docid")
    return int(outside.sum())


def _follows_scheme(pid: str) -> bool:
    from cruxflow.data.model import parse_passage_id

    try:
        parse_passage_id(pid)
    except ValueError:
        return False
    return True

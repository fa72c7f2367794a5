"""The files of ``cruxflow crux-eval`` beyond the release's qrels and ratings
(:mod:`cruxflow.data.ingest.crux_common` reads those): a TREC run cut by its rank column as the
authors' loader cuts it, read once and fast, and the token counts of Den."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cruxflow.data.columns import (
    Codes,
    blocks,
    decimals,
    has_repeat,
    integers,
    plain_decimals,
    split_fields,
)
from cruxflow.data.errors import DataError
from cruxflow.data.io import decode_text, read_bytes, read_line_blocks, read_run, read_text

# a run is read in blocks of about this many bytes: of a 500,000-line run only the few lines of
# rank <= k are kept, and a block's numpy calls on them cost more than its fresh memory does
# (blocks of 128 KiB: 0.17 s for such a run; 512 KiB: 0.12 s)
RUN_BLOCK_BYTES = 1 << 19


@dataclass
class RunLines:
    """A run's kept lines by column, each topic's lines together (topics in the order they
    first appear, a topic's lines in file order): what Cov and the arrays of
    :mod:`~cruxflow.metrics.crux_eval_measures` read, without a Python object per line."""

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


class TopRun:
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
        if self._lines is None:
            self._lines = RunLines.from_topics(self._topics)
        return self._lines

    def scores(self) -> dict[str, dict[str, float]]:
        return {t: {pid: score for pid, score, _ in rows} for t, rows in self.topics.items()}

    def __eq__(self, other) -> bool:
        return isinstance(other, TopRun) and (self.path, self.k, self.topics, self.beyond_k) \
            == (other.path, other.k, other.topics, other.beyond_k)

    def __repr__(self) -> str:
        return f"TopRun({str(self.path)!r}, k={self.k}, {len(self.lines.topics)} topics)"


@dataclass
class RankColumn:
    """Where a run's rank column is not a rank (1..n within each topic): how many of its
    topics, and the first such topic with its ranks in file order (the first few)."""

    topics: int
    of: int
    example: str
    ranks: list[int]

    def line(self, path, k: int) -> str:
        shown = ", ".join(map(str, self.ranks[:6])) + (", ..." if len(self.ranks) > 6 else "")
        return (f"the rank column of {Path(path).name} is not a rank (1..n within a topic) in "
                f"{self.topics} of its {self.of} topics, e.g. {self.example}: {shown}; the "
                f"lines of rank <= {k} are kept all the same, as the script does")


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


def read_run_top(path, k: int | None = 10) -> TopRun:
    """A run's lines whose rank column is <= ``k`` (every line with ``k=None``), in file
    order, the file read once; the kept lines' rank column is kept too (``lines.rank``).

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
    (with the kept lines' topics: :class:`TopRun`, ``steady``), to say whether the rank column
    is a rank at all; the topics of the cut lines are read only when asked
    (:func:`read_every_topic`).
    """
    # a file of ASCII lines ending in LF is read block by block and never held whole (see
    # cruxflow.data.io.read_line_blocks); any other is read whole as text
    top = _read_top(path, k, read_line_blocks(path, RUN_BLOCK_BYTES), plain=True)
    if top is None:
        top = _read_top(path, k, blocks(decode_text(read_bytes(path), path)), plain=False)
    return top


def _read_top(path, k: int | None, text_blocks: Iterable[bytes | str], plain: bool
              ) -> TopRun | None:
    """:func:`read_run_top` over the blocks of a file (bytes if ``plain``); None when a block
    of bytes is not ASCII lines ending in LF (a byte-order mark, CRLF, UTF-8 text)."""
    topics, passages = Codes(), Codes()
    scores, lines, kept_ranks = [], [], []
    rows = kept = 0
    first_line = 1
    last_rank, steady = 0, True   # each rank 1 or the line before's + 1 (see TopRun)
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
        return TopRun(path, k, {}, 0)
    topic, passage = topics.codes(), passages.codes()
    if has_repeat(topic, passage):
        _refuse(path)   # a passage twice for a topic within the cut
    if steady:   # and the kept lines' topics change where the ranks start again at 1, each once
        changes = np.flatnonzero(np.diff(topic, prepend=-1))
        steady = len(changes) == len(topics.values) and np.array_equal(
            changes, np.flatnonzero(np.concatenate(kept_ranks) == 1))
    order = np.argsort(topic, kind="stable")   # each topic's lines together, in file order
    return TopRun(path, k, beyond_k=rows - kept, steady=steady, lines=RunLines(
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
        # a block that is not plain ASCII: the whole file again, as read_run_top reads it
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


def read_token_counts(path) -> dict[str, int]:
    """Token counts per passage: TSV ``passage<TAB>tokens`` or JSONL ``{"id", "tokens"}``."""
    from cruxflow.data.io import iter_jsonl

    p = Path(path)
    counts: dict[str, int] = {}
    if p.suffix == ".jsonl":
        rows = ((f"line {ln}", obj.get("id"), obj.get("tokens")) for ln, obj in iter_jsonl(p))
    else:
        rows = ((f"line {ln}", *(line.split("\t") + [None, None])[:2])
                for ln, line in enumerate(read_text(p).split("\n"), 1) if line.strip())
    for record, pid, value in rows:
        try:
            tokens = int(value)
            if tokens < 0 or str(value).strip() not in (str(tokens), f"{tokens}.0"):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(f"expected a non-negative integer, got {value!r}", path=p,
                            record=record, field="tokens") from None
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("missing passage id", path=p, record=record, field="id")
        counts[pid.strip()] = tokens
    return counts


def collection_token_counts(collection, tokenizer: str | None, pids) -> dict[str, int]:
    """Token counts of the passages ``pids`` that the collection holds (the others are reported
    where a context needs them), counted with a local tokenizer or the regex counter."""
    from cruxflow.data.ingest.crux_common import read_collection
    from cruxflow.metrics.tokens import make_token_counter

    texts, _ = read_collection(collection)
    try:
        count = make_token_counter(tokenizer)
    except FileNotFoundError as exc:
        raise DataError(str(exc), path=tokenizer) from None
    return {pid: count(texts[pid]) for pid in pids if pid in texts}

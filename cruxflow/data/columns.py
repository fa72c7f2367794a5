"""Whitespace-separated columns (TREC runs, qrels) checked on their bytes with numpy.

A run or a qrels file of half a million lines split line by line in Python costs more than
the evaluation that reads it. These functions check a whole block of such lines at once on
its bytes and find where every field starts and ends, so that a reader splits only what it
keeps. They accept only the plain case (ASCII, fields separated by spaces and tabs, lines by
``\\n``) and answer None for anything else, which the caller then reads line by line, with
the error that names the line.

A file is handled in blocks of a few thousand lines (read from the file by
:func:`cruxflow.data.io.read_line_blocks`, or cut from a text by :func:`blocks`), and a column
of ids kept as codes into its distinct values (:class:`Codes`), because memory costs time:
each page of fresh memory is a fault, about 7 us in a virtual machine (measured: touching
176 MB took 0.27-0.34 s), and the split of a whole 180,000-line qrels file into strings alone
touches 50 MB of it, while a block reuses the memory of the block before.
"""

from __future__ import annotations

from itertools import filterfalse

import numpy as np

_DIGIT, _DOT, _MINUS = np.uint8(ord("0")), np.uint8(ord(".")), np.uint8(ord("-"))

# lines of a text handled at once (see the module's note: a 500,000-line run in blocks of
# 2,000 lines took 0.17 s and 42 MB of fresh memory, in blocks of 50,000 0.21 s and 150 MB)
BLOCK_LINES = 2_000


def blocks(text: str | bytes, lines: int = BLOCK_LINES):
    """``text`` in blocks of about ``lines`` whole lines (each but the last ending with its
    newline), sized from the first MiB's line length."""
    newline = "\n" if isinstance(text, str) else b"\n"
    start, sample = 0, min(len(text), 1 << 20)
    step = (sample // max(1, text.count(newline, 0, sample)) + 1) * lines
    while start < len(text):
        end = text.find(newline, start + step) if start + step < len(text) else -1
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


class Codes:
    """A column of ids (any hashable values) read block by block, kept as one integer per row:
    the index of its value among the column's distinct values, numbered by first appearance
    (:attr:`values`).
    A 180,000-row column of 60,000 passage ids then holds 60,000 strings, not 180,000."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self._parts: list[np.ndarray] = []

    def add(self, column: list[str]) -> None:
        index = self.index
        new = list(filterfalse(index.__contains__, dict.fromkeys(column)))
        index.update(zip(new, range(len(index), len(index) + len(new)), strict=True))
        self._parts.append(np.fromiter(map(index.__getitem__, column), np.int64, len(column)))

    @property
    def values(self) -> list[str]:
        return list(self.index)

    def codes(self) -> np.ndarray:
        if len(self._parts) != 1:
            self._parts = [np.concatenate(self._parts) if self._parts
                           else np.zeros(0, dtype=np.int64)]
        return self._parts[0]


# odd multipliers of the byte hash of ids (IdTable): any fixed odd numbers do; a hash only
# finds a candidate, which the id's bytes then confirm
_WORD_KEYS = np.random.default_rng(0x1D5).integers(1, 1 << 63, size=33, dtype=np.uint64) \
    | np.uint64(1)


def id_bytes(ids: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """``ids`` as the rows of a zero-padded byte matrix (width a multiple of 8, so that a row
    reads as 64-bit words) and their lengths; None unless every id is ASCII without a newline
    (and at most 256 bytes long). Each string is read once (a join), the rest is numpy."""
    if not ids:
        return np.zeros((0, 8), dtype=np.uint8), np.zeros(0, dtype=np.int64)
    text = "\n".join(ids)
    if not text.isascii():
        return None
    # (newlines after the text: every row's window below stays inside the buffer)
    data = np.frombuffer(text.encode("ascii") + b"\n" * 264, dtype=np.uint8)
    ends = np.flatnonzero(data[:len(text)] == 10)
    if len(ends) != len(ids) - 1:
        return None        # an id holds a newline
    starts = np.concatenate(([0], ends + 1))
    length = np.append(ends, len(text)) - starts
    width = -(-int(length.max()) // 8) * 8 or 8
    if width > 256:
        return None
    # each id's window of `width` bytes, what follows the id inside it zeroed
    matrix = np.lib.stride_tricks.sliding_window_view(data, width)[starts]
    matrix *= np.arange(width) < length[:, None]
    return matrix, length


def _id_hashes(matrix: np.ndarray, length: np.ndarray) -> np.ndarray:
    words = matrix.view(np.uint64)
    keys = _WORD_KEYS[:words.shape[1]]
    return (words * keys).sum(axis=1, dtype=np.uint64) + length.astype(np.uint64) * \
        _WORD_KEYS[-1]


class IdTable:
    """Distinct ids numbered by their place in ``ids``, looked up many at a time
    (:meth:`numbers`) on their bytes with numpy: a hash of each id's bytes finds its bucket
    in an open table (about two buckets an id), the bytes confirm the candidate. A Python
    dict's look-up costs each id a few cache misses (its hash, the table's slot, the entry,
    the number object): 0.5-0.7 us an id for 100,000 ids against 200,000, about 0.2 us here.
    Non-ASCII ids (either side) and ids whose hash another id shares are looked up in a dict
    instead, so the answer is always exact."""

    def __init__(self, ids: list[str]):
        self.ids = ids
        self._bytes = id_bytes(ids)
        self._dict: dict[str, int] | None = None
        if self._bytes is not None:
            h = _id_hashes(*self._bytes)
            self._order = np.argsort(h)
            self._hashes = h[self._order]
            # buckets by the hash's top bits: a bucket's ids are a stretch of the sorted hashes
            self._shift = np.uint64(64 - max(1, (2 * len(ids)).bit_length()))
            self._first = np.searchsorted(
                self._hashes >> self._shift,
                np.arange((1 << (64 - int(self._shift))) + 1, dtype=np.uint64))

    def _by_dict(self) -> dict[str, int]:
        if self._dict is None:
            self._dict = {x: i for i, x in enumerate(self.ids)}
        return self._dict

    def numbers(self, queries: list[str]) -> np.ndarray:
        """Each of ``queries``' number (its place in ``ids``; -1 for an id not there)."""
        found = id_bytes(queries) if self._bytes is not None and self.ids else None
        if found is None:
            get = self._by_dict().get
            return np.fromiter((get(q, -1) for q in queries), np.int64, len(queries))
        matrix, length = found
        h = _id_hashes(matrix, length)
        bucket = (h >> self._shift).astype(np.intp)
        at, end = self._first[bucket], self._first[bucket + 1]
        # the first id of the bucket whose hash is the query's: a round per id in a bucket
        pending = np.flatnonzero(at < end)
        while len(pending):
            step = pending[self._hashes[at[pending]] != h[pending]]
            at[step] += 1
            pending = step[at[step] < end[step]]
        candidate = np.where(at < end, self._order[np.minimum(at, len(self._order) - 1)], -1)
        mine, my_length = self._bytes
        width = min(matrix.shape[1], mine.shape[1]) // 8
        mine_words = mine.view(np.uint64)[:, :width]
        rows = np.take(mine_words, np.maximum(candidate, 0), axis=0)
        equal = (rows == matrix.view(np.uint64)[:, :width]).all(axis=1)
        equal &= np.take(my_length, np.maximum(candidate, 0)) == length
        equal &= candidate >= 0
        out = np.where(equal, candidate, -1)
        # a hash two ids share finds the first of them only: those the bytes refused, by dict
        doubt = np.flatnonzero((candidate >= 0) & ~equal)
        if len(doubt):
            get = self._by_dict().get
            out[doubt] = [get(queries[i], -1) for i in doubt.tolist()]
        return out


def has_repeat(*columns: np.ndarray) -> bool:
    """Whether two rows have the same codes in every one of ``columns`` (non-negative codes,
    one array per column)."""
    if not len(columns[0]):
        return False
    key, room = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column in columns:
        size = int(column.max()) + 1
        if room * size >= 1 << 62:
            order = np.lexsort(columns)
            same = np.ones(len(order) - 1, dtype=bool)
            for c in columns:
                same &= c[order][1:] == c[order][:-1]
            return bool(same.any())
        key, room = key * size + column, room * size
    key = np.sort(key)
    return bool((key[1:] == key[:-1]).any())


def split_fields(block: bytes, n_fields: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(the block's bytes as an array, where every field starts, where it ends, the line
    number from 1 of every row) of an ASCII block whose every non-blank line has
    ``n_fields`` fields separated by spaces and tabs; None for any other block (below the
    space only tabs and newlines may appear: ``str.split`` splits on ``\\v \\f \\r \\x1c-\\x1f``
    too, and a reader line by line must see what this one sees)."""
    if not block or not block.isascii():
        return None
    data = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    controls = np.count_nonzero(data < 32)
    if controls != len(newlines) and controls != len(newlines) + block.count(b"\t"):
        return None
    # where a field starts or ends: the bytes where "space or not" changes, a space taken
    # before the block and after it, so that starts and ends alternate
    space = data <= 32
    edge = np.empty(len(data) + 1, dtype=bool)
    edge[0], edge[-1] = not space[0], not space[-1]
    np.not_equal(space[1:], space[:-1], out=edge[1:-1])
    edges = np.flatnonzero(edge)
    starts, ends = edges[0::2], edges[1::2]
    # fields per line: those starting before its end, less those before the line before
    per_line = np.diff(np.searchsorted(starts, np.append(newlines, len(data))), prepend=0)
    if not np.all((per_line == 0) | (per_line == n_fields)):
        return None
    row_line = np.flatnonzero(per_line) + 1
    return (data, starts, ends, row_line) if len(row_line) else None


def _cells(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The fields' bytes as rows of a (fields x longest) matrix, and which cells are inside
    a field; None when a field is longer than ``width``."""
    longest = int((ends - starts).max())
    if longest > width:
        return None
    at = np.arange(longest)
    inside = at[None, :] < (ends - starts)[:, None]
    return data[np.minimum(starts[:, None] + at, len(data) - 1)], inside


def integers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, signed: bool = False
             ) -> np.ndarray | None:
    """The values of fields of ASCII digits (with ``signed``, a leading minus allowed), up
    to 18 characters; None if any field is not so (``int`` reads every such field)."""
    cells = _cells(data, starts, ends, 18)
    if cells is None:
        return None
    chars, inside = cells
    minus = (chars[:, 0] == _MINUS) & (ends - starts > 1) if signed \
        else np.zeros(len(starts), dtype=bool)
    inside = inside.copy()
    inside[:, 0] &= ~minus
    digits = chars - _DIGIT
    if (digits[inside] > 9).any():
        return None
    value = np.zeros(len(starts), dtype=np.int64)
    for col in range(chars.shape[1]):   # left to right in base 10, each field its length
        value = np.where(inside[:, col], value * 10 + digits[:, col], value)
    return np.where(minus, -value, value)


def plain_decimals(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Every field is a plain decimal of at most 24 characters (digits, at most one point, a
    leading minus): ``float`` reads it without fail and none is NaN."""
    cells = _cells(data, starts, ends, 24)
    if cells is None:
        return False
    chars, inside = cells
    is_digit = (chars - _DIGIT <= 9) & inside
    dots, minus = (chars == _DOT) & inside, (chars == _MINUS) & inside
    return bool((is_digit | dots | minus | ~inside).all()
                and (dots.sum(axis=1) <= 1).all() and not minus[:, 1:].any()
                and is_digit.any(axis=1).all())

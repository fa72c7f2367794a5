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

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

    def add(self, column: list[str], repeats: np.ndarray | None = None) -> None:
        """Append ``column`` (each value ``repeats`` times over, where given: a column cut
        out only where its value changes)."""
        index = self.index
        new = list(filterfalse(index.__contains__, dict.fromkeys(column)))
        index.update(zip(new, range(len(index), len(index) + len(new)), strict=True))
        codes = np.fromiter(map(index.__getitem__, column), np.int64, len(column))
        self._parts.append(codes if repeats is None else np.repeat(codes, repeats))

    def add_fields(self, text: str, data: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray) -> None:
        """Append the fields ``text[starts[i]:ends[i]]`` of an ASCII block (``data``: its
        bytes, as :func:`split_fields` gives them). Fields of at most 32 bytes are told
        apart on their bytes, as 64-bit words sorted together (exact: a field holds no
        zero byte), and only the first of each distinct field becomes a string: a column of
        180,000 qrels lines holds 5,000 topics and 10 subtopics."""
        if not len(starts) or int((ends - starts).max()) > 32:
            self.add([text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)])
            return
        words = _field_words(data, starts, ends)
        # a stretch of rows with the same field (a topic's lines) taken once
        stretch = _stretches(words)
        of_row = np.cumsum(stretch) - 1
        words, starts, ends = words[stretch], starts[stretch], ends[stretch]
        first, group = _distinct_rows(words)
        # the distinct fields in order of first appearance, each cut out once
        by_appearance = np.argsort(first, kind="stable")
        at = first[by_appearance]
        distinct = [text[a:b] for a, b in zip(starts[at].tolist(), ends[at].tolist(),
                                               strict=True)]
        index = self.index
        new = list(filterfalse(index.__contains__, distinct))
        index.update(zip(new, range(len(index), len(index) + len(new)), strict=True))
        code_of = np.empty(len(distinct), dtype=np.int64)
        code_of[by_appearance] = np.fromiter(map(index.__getitem__, distinct), np.int64,
                                             len(distinct))
        self._parts.append(code_of[group.reshape(-1)][of_row])

    @property
    def values(self) -> list[str]:
        return list(self.index)

    def codes(self) -> np.ndarray:
        if len(self._parts) != 1:
            self._parts = [np.concatenate(self._parts) if self._parts
                           else np.zeros(0, dtype=np.int64)]
        return self._parts[0]




def _odd_keys(n: int) -> np.ndarray:
    """``n`` fixed odd 64-bit multipliers (splitmix64's outputs; numpy.random is not imported
    for them, it costs a command's start 10 ms)."""
    keys, state, mask = [], 0x1D5, (1 << 64) - 1
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        keys.append((z ^ (z >> 31)) | 1)
    return np.array(keys, dtype=np.uint64)


# the multipliers of the byte hash of ids (IdTable): any fixed odd numbers do, a hash only
# finds a candidate, which the id's bytes then confirm
_WORD_KEYS = _odd_keys(33)


def id_bytes(ids: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """``ids`` as the rows of a zero-padded byte matrix (width a multiple of 8, so that a row
    reads as 64-bit words) and their lengths; None unless every id is ASCII without a newline
    (and at most 256 bytes long). Each string is read once (a join), the rest is numpy."""
    if not ids:
        return np.zeros((0, 8), dtype=np.uint8), np.zeros(0, dtype=np.int64)
    text = "\n".join(ids)
    if not text.isascii():
        return None
    data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if len(ends) != len(ids) - 1:
        return None        # an id holds a newline
    starts = np.concatenate(([0], ends + 1))
    length = np.append(ends, len(text)) - starts
    width = -(-int(length.max()) // 8) * 8 or 8
    if width > 256:
        return None
    # each id's window of `width` bytes, what follows the id inside it zeroed
    matrix = _windows(data, starts, width)
    matrix *= np.arange(width) < length[:, None]
    return matrix, length


def _id_hashes(matrix: np.ndarray, length: np.ndarray) -> np.ndarray:
    words = matrix.view(np.uint64)
    keys = _WORD_KEYS[:words.shape[1]]
    return (words * keys).sum(axis=1, dtype=np.uint64) + length.astype(np.uint64) * \
        _WORD_KEYS[-1]


# ids looked up at once by IdTable.numbers
LOOKUP_BLOCK = 1 << 16


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
        """Each of ``queries``' number (its place in ``ids``; -1 for an id not there), a block
        of :data:`LOOKUP_BLOCK` queries at a time: a block's byte matrix, hashes and
        comparisons are a few MiB whatever the number of queries (all of a run's 500,000 ids
        at once took 55 MiB)."""
        if len(queries) > LOOKUP_BLOCK:
            return np.concatenate([self._numbers(queries[i:i + LOOKUP_BLOCK])
                                   for i in range(0, len(queries), LOOKUP_BLOCK)])
        return self._numbers(queries)

    def _numbers(self, queries: list[str]) -> np.ndarray:
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


def _field_words(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each field's bytes as a row of 64-bit words, zeros past its end."""
    width = -(-int((ends - starts).max()) // 8) * 8
    chars = _windows(data, starts, width)
    chars *= np.arange(width) < (ends - starts)[:, None]
    return chars.view(np.uint64)


def _stretches(words: np.ndarray) -> np.ndarray:
    """Where a row differs from the row before (the first row included)."""
    stretch = np.ones(len(words), dtype=bool)
    stretch[1:] = (words[1:] != words[:-1]).any(axis=1)
    return stretch


def repeated_fields(text: str, data: np.ndarray, starts: np.ndarray,
                    ends: np.ndarray) -> list[str]:
    """The fields ``text[starts[i]:ends[i]]`` of an ASCII text (``data``: its bytes), each
    stretch of equal fields (a topic's lines) cut out once and its string repeated."""
    if not len(starts) or int((ends - starts).max()) > 32:
        return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    stretch = _stretches(_field_words(data, starts, ends))
    cut = [text[a:b] for a, b in zip(starts[stretch].tolist(), ends[stretch].tolist(),
                                     strict=True)]
    return list(map(cut.__getitem__, (np.cumsum(stretch) - 1).tolist()))


def _distinct_rows(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each distinct row's first index, each row's distinct row) of a matrix of 64-bit
    words, the rows sorted by their words (a stable sort: a group's first is its first
    row)."""
    order = np.lexsort(words.T[::-1])
    differs = np.ones(len(order), dtype=bool)
    differs[1:] = (words[order[1:]] != words[order[:-1]]).any(axis=1)
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(differs) - 1
    return order[differs], group


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
    found = _single_spaced(data, n_fields)
    if found is not None:
        return found
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


def _single_spaced(data: np.ndarray, n_fields: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`split_fields` of the usual layout, found from the white space alone: every line
    ``n_fields`` non-empty fields, one space between two, a newline after the last (the
    block's last line may lack it), no blank line. Two passes over the bytes where the
    general route takes eight; None for any other block (which that route then reads)."""
    white = np.flatnonzero(data <= 32)
    closed = data[-1] == 10
    n_white = len(white) + (not closed)    # a missing last newline counted
    if not len(white) or n_white % n_fields:
        return None
    kind = data[white]
    if not closed:
        kind = np.append(kind, np.uint8(10))
        white = np.append(white, len(data))
    kind = kind.reshape(-1, n_fields)
    if (kind[:, -1] != 10).any() or (kind[:, :-1] != 32).any():
        return None
    # every field non-empty: white space never at the start nor twice in a row
    if white[0] == 0 or (np.diff(white) < 2).any():
        return None
    starts = np.empty(len(white), dtype=white.dtype)
    starts[0], starts[1:] = 0, white[:-1] + 1
    return data, starts, white, np.arange(1, len(white) // n_fields + 1)


def _windows(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes from each of ``starts`` (zeros past the data's end), a copy."""
    if int(starts.max()) + width > len(data):
        data = np.concatenate((data, np.zeros(width, dtype=np.uint8)))
    every = np.ndarray((len(data) - width + 1, width), dtype=np.uint8, buffer=data,
                       strides=(1, 1))
    return every[starts]


def _cells(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The fields' bytes as rows of a (fields x longest) matrix (each row the bytes from its
    field's start: what follows a shorter field is not part of it), and which cells are
    inside a field; None when a field is longer than ``width``."""
    lengths = ends - starts
    longest = int(lengths.max())
    if longest > width:
        return None
    return _windows(data, starts, longest), np.arange(longest)[None, :] < lengths[:, None]


def integers(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, signed: bool = False
             ) -> np.ndarray | None:
    """The values of fields of ASCII digits (with ``signed``, a leading minus allowed), up
    to 18 characters; None if any field is not so (``int`` reads every such field)."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    minus = np.zeros(len(starts), dtype=bool)
    if signed:
        minus = (data[starts] == _MINUS) & (ends - starts > 1)
    if int((ends - starts - minus).max()) <= _WORD_BYTES:   # fields of one word each
        digits = _Words(data, starts + minus, ends)
        if not digits.all_digits():
            return None
        value = digits.value().astype(np.int64)
        return np.where(minus, -value, value)
    cells = _cells(data, starts, ends, 18)
    if cells is None:
        return None
    chars, inside = cells
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
    if len(starts) and int((ends - starts).max()) <= _WORD_BYTES:   # one word each
        return _Words(data, starts, ends).plain_decimals()
    cells = _cells(data, starts, ends, 24)
    if cells is None:
        return False
    chars, inside = cells
    is_digit = (chars - _DIGIT <= 9) & inside
    dots, minus = (chars == _DOT) & inside, (chars == _MINUS) & inside
    return bool((is_digit | dots | minus | ~inside).all()
                and (dots.sum(axis=1) <= 1).all() and not minus[:, 1:].any()
                and is_digit.any(axis=1).all())


# fields of at most this many bytes are read a word at a time (_Words)
_WORD_BYTES = 8


def decimals(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The values of plain decimal fields (:func:`plain_decimals`), each the integer of its
    digits divided by a power of ten: both exact in a float64 (15 digits at most), so the
    quotient is the correctly rounded decimal, ``float``'s value to the bit; None where a
    field is not plain or has more digits (``float`` reads those one by one). Fields of at
    most 8 bytes are read a word at a time, longer ones (``20.000000``, as most runs write
    their scores) as a matrix of their bytes."""
    if not len(starts):
        return np.zeros(0)
    if int((ends - starts).max()) > _WORD_BYTES:
        return _long_decimals(data, starts, ends)
    words = _Words(data, starts, ends)
    return words.decimal_values() if words.plain_decimals() else None


# a decimal of at most this many digits is exact in a float64, its integer of digits too
_EXACT_DIGITS = 15


def _long_decimals(data: np.ndarray, starts: np.ndarray, ends: np.ndarray
                   ) -> np.ndarray | None:
    """:func:`decimals` of fields of up to 17 bytes, from the matrix of their bytes."""
    cells = _cells(data, starts, ends, _EXACT_DIGITS + 2)
    if cells is None:
        return None
    chars, inside = cells
    digit = (chars - _DIGIT <= 9) & inside
    dot, minus = (chars == _DOT) & inside, (chars == _MINUS) & inside
    if not ((digit | dot | minus | ~inside).all() and (dot.sum(axis=1) <= 1).all()
            and not minus[:, 1:].any() and digit.any(axis=1).all()
            and (digit.sum(axis=1) <= _EXACT_DIGITS).all()):
        return None
    value = np.zeros(len(starts), dtype=np.int64)
    after = np.zeros(len(starts), dtype=np.int64)
    seen_dot = np.zeros(len(starts), dtype=bool)
    for col in range(chars.shape[1]):   # left to right in base 10, counting the decimals
        d = digit[:, col]
        value = np.where(d, value * 10 + (chars[:, col] - _DIGIT), value)
        after += d & seen_dot
        seen_dot |= dot[:, col]
    out = value.astype(np.float64) / 10.0 ** after
    return np.where(minus[:, 0], -out, out)


def _lanes(byte: int) -> np.uint64:
    return np.uint64(byte * 0x0101010101010101)


_HIGH, _LOW7 = _lanes(0x80), _lanes(0x7F)


def _base_ten(word: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The value of each word's digits (its bytes within ``mask``, each '0'-'9', the first
    the most significant): pairs of digits, then pairs of pairs, then the two halves."""
    v = word - (_lanes(0x30) & mask)
    v = ((v >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(10) \
        + (v & np.uint64(0x00FF00FF00FF00FF))
    v = ((v >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)) * np.uint64(100) \
        + (v & np.uint64(0x0000FFFF0000FFFF))
    return (v >> np.uint64(32)) * np.uint64(10000) + (v & np.uint64(0xFFFFFFFF))


class _Words:
    """Fields of 1-8 ASCII bytes, each read as one 64-bit word (its bytes right-aligned, the
    first the most significant, zeros before it) and checked a word at a time ("SIMD within
    a register"): a handful of operations per field where a matrix of its bytes takes one
    per byte."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        if len(data) < 8 or int(starts.max()) + 8 > len(data):   # a word past the end
            data = np.concatenate((data, np.zeros(8, dtype=np.uint8)))
        every = np.ndarray((len(data) - 7,), dtype=">u8", buffer=data, strides=(1,))
        shift = ((8 - (ends - starts)) * 8).astype(np.uint64)
        self.word = every[starts].astype(np.uint64) >> shift
        self.mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> shift         # the field's bytes
        self.high = _HIGH & self.mask                               # their high bits

    def _digit_bits(self) -> np.ndarray:
        """The high bit of each byte that is a digit '0'-'9' (bytes are ASCII: below 0x80)."""
        above_nine = (self.word + (_lanes(0x46) & self.mask)) & self.high   # byte > '9'
        from_zero = ((self.word | self.high) - (_lanes(0x30) & self.mask)) & self.high
        return from_zero & ~above_nine

    def _equal_bits(self, byte: int) -> np.ndarray:
        """The high bit of each byte equal to ``byte`` (exact per byte: no carry between)."""
        v = self.word ^ (_lanes(byte) & self.mask)
        return ~(((v & _LOW7) + _LOW7) | v | _LOW7) & self.high

    def all_digits(self) -> bool:
        return bool((self._digit_bits() == self.high).all())

    def value(self) -> np.ndarray:
        """The fields' values in base 10 (every byte a digit)."""
        return _base_ten(self.word, self.mask)

    def plain_decimals(self) -> bool:
        """Digits, at most one point, a minus only first, a digit at least: every field."""
        digit, dot, minus = self._digit_bits(), self._equal_bits(0x2E), self._equal_bits(0x2D)
        first = self.high & ~(self.high >> np.uint64(8))     # the first byte's
        return bool(((digit | dot | minus) == self.high).all()
                    and not (dot & (dot - np.uint64(1))).any()
                    and not (minus & ~first).any() and digit.all())

    def decimal_values(self) -> np.ndarray:
        """The plain decimals' values (:meth:`plain_decimals` holds)."""
        one, eight = np.uint64(1), np.uint64(8)
        dot, minus = self._equal_bits(0x2E), self._equal_bits(0x2D)
        # the digits after the point: the point's byte from the right (a point at byte p
        # has its high bit at 8 p + 7)
        after = np.where(dot > 0, (np.log2(np.maximum(dot, one).astype(float)) - 7) / 8, 0)
        after = after.astype(np.uint64)
        low = (one << (after * eight)) - one
        word = np.where(dot > 0, ((self.word >> (after * eight)) >> eight) << (after * eight)
                        | (self.word & low), self.word)
        mask = np.where(dot > 0, self.mask >> eight, self.mask)
        # a minus (first, the most significant byte left) dropped from the word
        mask = np.where(minus > 0, mask >> eight, mask)
        value = _base_ten(word & mask, mask).astype(float) / 10.0 ** after.astype(float)
        return np.where(minus > 0, -value, value)


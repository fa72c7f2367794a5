"""How :class:`cruxflow.data.ingest.crux_common.JudgeRatings` holds what it read, made for a
judge folder of 60,000 rating lists and more: where each (topic, passage) was read
(:class:`RecordPlaces`, made when asked) and the release's ratings as one array
(:class:`RatingRows`, a pair's list made when asked), and the release's own lines found in a
file's text (:func:`release_lines`). Re-exported by ``crux_common``."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from itertools import repeat
from pathlib import Path

import numpy as np

from cruxflow.data.columns import Codes, repeated_fields


class RecordPlaces(MutableMapping):
    """Where each (topic, passage) of a :class:`JudgeRatings` was read, as
    ``{"path", "record": "line N"}``; made when asked (a judge folder holds 60,000 records and
    more, and most calls ask for none)."""

    def __init__(self):
        self._places_: dict[tuple[str, str], tuple[Path, int] | dict] = {}
        self._pending: list[tuple[list, Path, Sequence[int]]] = []

    def add_lines(self, keys: list, path: Path, lines: Sequence[int]) -> None:
        """``keys[i]`` was read at line ``lines[i]`` of ``path`` (kept as given until asked)."""
        self._pending.append((keys, path, lines))

    @property
    def _places(self) -> dict:
        for keys, path, lines in self._pending:
            self._places_.update(zip(keys, zip(repeat(path), lines, strict=False),
                                     strict=False))
        self._pending.clear()
        return self._places_

    def __getitem__(self, key) -> dict:
        place = self._places[key]
        if isinstance(place, dict):
            return place
        return {"path": place[0], "record": f"line {place[1]}"}

    def __setitem__(self, key, where: dict) -> None:
        self._places[key] = where

    def __delitem__(self, key) -> None:
        del self._places[key]

    def __iter__(self):
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)

    def __repr__(self) -> str:
        return f"RecordPlaces({len(self)} records)"


class RatingRows(MutableMapping):
    """The ratings of a :class:`JudgeRatings` as its fast reader holds them: every rating in
    one array (``flat``; ``lengths``: each key's count), each (topic, passage)'s row in
    ``row`` and each row's topic as codes (``topics``); a key's list is made when asked. A
    judge folder holds 60,000 lists and more, which ``crux-eval`` reads as one matrix. A
    write moves the ratings into a plain dict."""

    def __init__(self, row: dict[tuple[str, str], int], flat: np.ndarray, lengths: np.ndarray,
                 topics: Codes):
        self.row, self.flat, self.lengths, self.topics = row, flat, lengths, topics
        self._ends: list[int] | None = None
        self._written: dict[tuple[str, str], list[int]] | None = None

    @property
    def pristine(self) -> bool:
        """Nothing written since read: ``row``, ``flat`` and ``topics`` hold every rating."""
        return self._written is None

    def _dict(self) -> dict[tuple[str, str], list[int]]:
        if self._written is None:
            self._written = dict(self.items())
        return self._written

    def __getitem__(self, key) -> list[int]:
        if self._written is not None:
            return self._written[key]
        i = self.row[key]
        if self._ends is None:
            self._ends = np.cumsum(self.lengths).tolist()
        end = self._ends[i]
        return self.flat[end - int(self.lengths[i]):end].tolist()

    def __setitem__(self, key, value: list[int]) -> None:
        self._dict()[key] = value

    def __delitem__(self, key) -> None:
        del self._dict()[key]

    def __iter__(self):
        return iter(self.row if self._written is None else self._written)

    def __len__(self) -> int:
        return len(self.row if self._written is None else self._written)

    def __repr__(self) -> str:
        return f"RatingRows({len(self)} rated pairs)"


# A release ratings line as the release writes it (json.dumps' separators, ids without an
# escape, white space or control character, ratings -1..5): a file of only such lines is read
# on its bytes (ASCII) or by one search of this expression, anything else by json.loads.
_RELEASE_LINE = re.compile(r'^\{"id": "([^"\\\s\x00-\x1f]+)", "docid": "([^"\\\s\x00-\x1f]+)", '
                           r'"rating": \[((?:-1|[0-5])(?:, (?:-1|[0-5]))*)?\]\}$', re.M)


def release_lines(text: str) -> tuple | None:
    """(line numbers, topics, passages, every rating, each list's length) of a text whose
    every line is a release record as the release writes it (:data:`_RELEASE_LINE`), or None.
    An ASCII text is read on its bytes (:func:`_release_bytes`), any other by the expression."""
    return _release_bytes(text) if text.isascii() else _release_regex(text)


def _release_regex(text: str) -> tuple | None:
    """:func:`release_lines` by one search of :data:`_RELEASE_LINE`."""
    found = _RELEASE_LINE.findall(text)
    if not found or len(found) != text.count("\n", 0, len(text) - 1) + 1:
        return None   # a line of another form (or a blank one): json.loads reads the file
    tids, pids, values = zip(*found, strict=True)
    # a list of n ratings holds n - 1 commas; an empty one none and no character
    lengths = np.fromiter(map(str.count, values, repeat(",")), np.int64, len(values)) \
        + (np.fromiter(map(len, values), np.int64, len(values)) > 0)
    flat = np.fromstring(",".join(filter(None, values)), dtype=np.int64, sep=",") \
        if lengths.any() else np.zeros(0, dtype=np.int64)
    return range(1, len(found) + 1), list(tids), list(pids), flat, lengths


_HEAD, _DOCID, _RATING = b'{"id": "', b'", "docid": "', b'", "rating": ['


def _release_bytes(text: str) -> tuple | None:
    """:func:`release_lines` of an ASCII text, found on its bytes with numpy (three times
    faster than the expression's search, 60,000 lines in 25 ms): each line's ten quotes
    where the layout puts them, the literal parts between them, ids of neither white space
    nor a control character nor a backslash, and a list of ratings -1..5 joined by ", "."""
    if not text or "\\" in text:
        return None
    data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    size = len(data) - int(data[-1] == 10)          # a final newline ends the last line
    ends = np.append(np.flatnonzero(data[:size] == 10), size)
    starts = np.concatenate(([0], ends[:-1] + 1))
    quotes = np.flatnonzero(data[:size] == 34)
    if len(quotes) != 10 * len(starts) or \
            (np.searchsorted(quotes, starts) != 10 * np.arange(len(starts))).any():
        return None
    q = quotes.reshape(-1, 10)
    opening, closing = q[:, 3], q[:, 7]           # the quotes after the topic and the passage
    if not (_literal(data, starts, _HEAD) and _literal(data, opening, _DOCID)
            and _literal(data, closing, _RATING)
            and (q[:, 0] == starts + 1).all() and (q[:, 6] == opening + 12).all()
            and (q[:, 9] == closing + 10).all()):
        return None
    first, last = closing + len(_RATING), ends - 2  # the list of ratings: [first, last)
    if (last < first).any() or not _literal(data, last, b"]}"):
        return None
    tid_at, pid_at = (q[:, 2] + 1, opening), (q[:, 6] + 1, closing)
    white = np.flatnonzero(data[:size] <= 32)     # white space, control characters
    for a, b in (tid_at, pid_at):
        if (b <= a).any() or (np.searchsorted(white, b) != np.searchsorted(white, a)).any():
            return None
    ratings = _rating_lists(data[:size], first, last, white)
    if ratings is None:
        return None
    tids = repeated_fields(text, data, *tid_at)
    pids = [text[a:b] for a, b in zip(*(x.tolist() for x in pid_at), strict=True)]
    return range(1, len(starts) + 1), tids, pids, *ratings


def _literal(data: np.ndarray, at: np.ndarray, literal: bytes) -> bool:
    """Whether ``literal`` is written at each of ``at``."""
    if not len(at):
        return True
    if int(at.max()) + len(literal) > len(data):
        return False
    every = np.ndarray((len(data) - len(literal) + 1, len(literal)), dtype=np.uint8,
                       buffer=data, strides=(1, 1))
    return bool((every[at] == np.frombuffer(literal, dtype=np.uint8)).all())


def _rating_lists(data: np.ndarray, first: np.ndarray, last: np.ndarray,
                  white: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(every rating, each list's length) of the lists ``data[first[i]:last[i]]`` (in order;
    ``white``: where the bytes up to 32 are), each empty or ratings -1..5 joined by ", ";
    None for any other."""
    every = np.flatnonzero(data == 44)
    lo, hi = np.searchsorted(every, first), np.searchsorted(every, last)
    # a comma then a space separates two ratings; no white space anywhere else
    if (np.searchsorted(white, last) - np.searchsorted(white, first) != hi - lo).any():
        return None
    n = hi - lo                                   # each list's commas, in order
    commas = every[np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))]
    if len(commas) and (data[np.minimum(commas + 1, len(data) - 1)] != 32).any():
        return None
    # each rating: from a list's start or after ", " to a comma or the list's end
    counts = n + (first < last)
    opening = np.cumsum(counts) - counts          # each list's first rating
    at_open = np.zeros(int(counts.sum()), dtype=bool)
    at_open[opening[counts > 0]] = True
    bounds = np.empty(len(at_open), dtype=np.int64)
    bounds[at_open], bounds[~at_open] = first[counts > 0], commas + 2
    at_close = np.zeros(len(at_open), dtype=bool)
    at_close[(opening + counts - 1)[counts > 0]] = True
    stops = np.empty(len(at_open), dtype=np.int64)
    stops[at_close], stops[~at_close] = last[counts > 0], commas
    width = stops - bounds
    digit = data[np.clip(bounds, 0, len(data) - 1)]
    one = width == 1
    ok = (one & (digit >= 48) & (digit <= 53)) | \
        ((width == 2) & (digit == 45) & (data[np.clip(bounds + 1, 0, len(data) - 1)] == 49))
    if not ok.all():
        return None
    return np.where(one, digit.astype(np.int64) - 48, -1), counts.astype(np.int64)

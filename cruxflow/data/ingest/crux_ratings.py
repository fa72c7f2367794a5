"""How :class:`cruxflow.data.ingest.crux_common.JudgeRatings` holds what it read, made for a
judge folder of 60,000 rating lists and more: where each (topic, passage) was read
(:class:`RecordPlaces`, made when asked) and the release's ratings as one array
(:class:`RatingRows`, a pair's list made when asked). Re-exported by ``crux_common``."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from itertools import repeat
from pathlib import Path

import numpy as np

from cruxflow.data.columns import Codes


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

"""The one convention of every statistic: undefined is ``None``, never NaN, never dropped
silently (the caller counts what it leaves out); :func:`nan_if_none` where a frame needs NaN."""

from __future__ import annotations

import math
from collections.abc import Iterable


def defined(values: Iterable[float | None]) -> list[float]:
    """The values that are defined (not ``None``, not NaN), as floats."""
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]

def mean_of_defined(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are defined; ``None`` when none is. Per-item scores that are
    undefined (0/0) are left out of an average, not counted as 0."""
    vals = defined(values)
    return math.fsum(vals) / len(vals) if vals else None

def nan_if_none(value: float | None) -> float:
    """A statistic as a frame cell: NaN for ``None``."""
    return math.nan if value is None else float(value)

def is_defined(value) -> bool:
    return value is not None and not math.isnan(float(value))

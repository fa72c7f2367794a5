"""Added ratings beside the original ones (issue 39): a ratings record may name where it comes
from in a ``source`` field (``cruxflow judge`` writes the judge of a run's unjudged passages
there); a record without one is an *original* rating. :func:`~cruxflow.data.ingest.crux_common.
read_ratings` reads the files of added ratings apart (:func:`names_a_source`) and keeps each
pair with :meth:`~cruxflow.data.ingest.crux_common.JudgeRatings.keep`: a (topic, passage) that
an original and an added record rate keeps the original (counted, ``original_kept``), two added
sources that rate a pair differently are an error, as two judges in one folder are.
:func:`sources_note` is the one line every door prints."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from cruxflow.data.errors import DataError

# The field that names where a record comes from; a record without it is an original rating.
SOURCE = "source"
ORIGINAL = "original"


def names_a_source(path: Path, encoding: str) -> bool:
    """Whether the first record of a ratings file names its source (a file of added
    ratings)."""
    with open(path, encoding=encoding, errors="replace") as f:
        for line in f:
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError:
                    return False   # the reader names the bad line
                return isinstance(obj, dict) and SOURCE in obj
    return False


def source_of(obj: dict, where: dict) -> str:
    """The record's source (:data:`SOURCE`), or :data:`ORIGINAL` where it names none."""
    if SOURCE not in obj:
        return ORIGINAL
    value = obj[SOURCE]
    if not isinstance(value, str) or not value.strip() or value == ORIGINAL:
        raise DataError(f"expected the name of the ratings' source (a non-empty string other "
                        f"than {ORIGINAL!r}), got {value!r}", field=SOURCE, **where)
    return value


def source_counts(ratings: Mapping, sources: Mapping[tuple[str, str], str]) -> dict[str, int]:
    """The pairs kept from each source: ``original`` first, then the added ones in the order
    first read."""
    counts = {ORIGINAL: len(ratings) - len(sources)}
    for source in sources.values():
        counts[source] = counts.get(source, 0) + 1
    return counts


def sources_note(summary: Mapping | None) -> str | None:
    """The one line every door prints of ratings read from several sources (a
    ``JudgeRatings.summary()``, or its ``sources`` part), or None when all are original."""
    if not summary or "sources" not in summary:
        return None
    counts = dict(summary["sources"])
    original = counts.pop(ORIGINAL, 0)
    added = "; ".join(f"{n} from {source}" for source, n in counts.items())
    kept = summary.get("original_kept", 0)
    return (f"ratings of {original + sum(counts.values())} (topic, passage) pairs: {original} "
            f"original, {added or 'none added'}; {kept} pairs rated by both: the original kept")

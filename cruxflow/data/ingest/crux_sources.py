"""Added ratings beside the original ones (issue 39): a ratings record may name where it comes
from in a ``source`` field (``cruxflow judge`` writes the judge of a run's unjudged passages
there); a record without one is an *original* rating. :func:`~cruxflow.data.ingest.crux_common.
read_ratings` reads the files of added ratings apart (:func:`names_a_source`) and keeps each
pair with :func:`keep`: a (topic, passage) that an original and an added record rate keeps the
original (counted, ``original_kept``), two added sources that rate a pair differently are an
error, as two judges in one folder are. :func:`sources_note` is the one line every door prints.
Re-exported by ``crux_common``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.model import RATING_UNRATED

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


def add_read(out, extra) -> None:
    """The ratings of ``extra`` (a ``JudgeRatings`` of added files) into ``out``, pair by pair
    (:func:`keep`)."""
    out.files = [*out.files, *extra.files]
    out.layouts |= extra.layouts
    out.repeated += extra.repeated
    out.original_kept += extra.original_kept
    for key, ratings in extra.ratings.items():
        keep(out, key, ratings, extra.sources.get(key, ORIGINAL), extra.where[key],
             extra.field_names(key))


def keep(out, key: tuple[str, str], ratings: list[int], source: str, where: dict,
         names: tuple[str, str, str]) -> None:
    """One (topic, passage)'s ratings into ``out`` (a ``JudgeRatings``): a pair read again with
    the same ratings from the same source is counted, an original and an added rating of one
    pair keep the original (counted), and any other pair rated twice differently is an error
    naming both places."""
    if key in out.ratings:
        seen = out.sources.get(key, ORIGINAL)
        if (seen == ORIGINAL) != (source == ORIGINAL):   # the original wins
            out.original_kept += 1
            if source == ORIGINAL:
                out.unrated -= sum(r == RATING_UNRATED for r in out.ratings[key])
                del out.sources[key]
                _put(out, key, ratings, source, where, names)
            return
        if out.ratings[key] == ratings:
            out.repeated += 1
            return
        place = out.where[key]
        by = "" if seen == source else f" by {seen!r} and by {source!r}"
        raise DataError(f"passage {key[1]} of topic {key[0]} rated differently{by} at "
                        f"{place['path']} {place['record']} (two judges in one folder? name "
                        "one file)", field=names[2], **where)
    _put(out, key, ratings, source, where, names)


def _put(out, key, ratings, source: str, where: dict, names) -> None:
    from cruxflow.data.ingest.crux_common import RELEASE_FIELDS

    out.ratings[key] = ratings
    out.where[key] = where
    if names != RELEASE_FIELDS:
        out.fields[key] = names
    if source != ORIGINAL:
        out.sources[key] = source
    out.unrated += sum(r == RATING_UNRATED for r in ratings)

"""Files every CRUX layout shares: judge ratings, diversity qrels and passage collections.

The readers here serve ``cruxflow ingest --format crux`` (every layout), ``cruxflow crux-eval``
(the authors' evaluation script) and ``cruxflow agreement``. Facts about the formats come from
the authors' loaders (DylanJoo/crux: ``crux/tools/generic/ir_utils.py`` ``load_ratings``,
``load_run_or_qrel``, ``load_corpus``; ``crux/tools/mds/ir_utils.py``).

**Ratings** (one file, or every ``*.jsonl`` of a folder such as the release's ``judge/``), one
0-5 rating per sub-question, in any of these record layouts:

=================  ==========================================================================
release            ``{"id": topic, "docid": passage, "rating": [...]}``
release, batched   ``{"id": topic, "docids": [...], "ratings": [[...], ...]}``
paper-era          ``{"example_id": topic, "pid": passage, "rating": [...]}``
neuclir            ``{"id": topic, "pid": passage, "rating": [...]}`` (``crux/tools/neuclir``)
cruxflow           ``{"topic_id", "passage_id", "ratings": [...]}`` (``answerability.jsonl``)
labeling-tool      ``{"id": topic, "document": passage, "relevances": {"<q>": 0-5 or -1}}``:
                   the CRUX labeling tool's human ratings (:mod:`.crux_human`), one file per
                   annotator, merged by a rule
=================  ==========================================================================

-1 (the authors' parser writes it where the judge gave no digit) is read, answers nothing and is
counted; any other value outside 0..5 is an error naming the file, line and field.

**Diversity qrels** (:class:`DiversityQrels`): the release's ``qrels/div_qrels-tau3.txt`` and
the paper-era writer's, ndeval's ``topic subtopic passage relevance`` lines, read by column.

**Added ratings**, records that name their ``source`` (``cruxflow judge``'s), are read beside
the original ones and counted by source: :mod:`cruxflow.data.ingest.crux_sources`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cruxflow.data.bounded import read_bytes, read_line_blocks
from cruxflow.data.columns import Codes, has_repeat, integers, split_fields
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_human import HUMAN, HumanRatings
from cruxflow.data.ingest.crux_ratings import RatingRows, RecordPlaces, release_lines
from cruxflow.data.ingest.crux_sources import (
    ORIGINAL,
    SOURCE,
    names_a_source,
    source_counts,
    source_of,
)
from cruxflow.data.io import NOT_A_FILE, decode_text, iter_jsonl, read_text, regular_files
from cruxflow.data.model import (
    EMPTY_QUESTION,
    NULL_QUESTION,
    RATING_UNRATED,
    RATINGS_OR_UNRATED,
    parse_ratings,
)
from cruxflow.data.names import ORACLE

# (layout name, topic key, passage key, ratings key); the batched layout is handled apart.
RATING_LAYOUTS = (
    ("release", "id", "docid", "rating"),
    ("paper-era", "example_id", "pid", "rating"),
    ("neuclir", "id", "pid", "rating"),   # the authors' NeuCLIR/RAGTIME loader's spelling
    ("cruxflow", "topic_id", "passage_id", "ratings"),
)
BATCHED = ("release-batched", "id", "docids", "ratings")
RELEASE_FIELDS = RATING_LAYOUTS[0][1:]
# what str.split() splits on (re's \s is str.isspace()'s set)
_SPACE = re.compile(r"\s")

def jsonl_files(path, what: str) -> list[Path]:
    """``path`` itself, or every ``*.jsonl`` directly inside the folder ``path`` (sorted)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        if os.path.lexists(p):
            raise DataError(NOT_A_FILE, path=p)
        raise DataError(f"no such {what} (file or folder)", path=p)
    files = regular_files(sorted(p.glob("*.jsonl")))
    if not files:
        raise DataError(f"no *.jsonl {what} file in the folder", path=p)
    return files


def question_list(value, name: str, where: dict) -> tuple[list[str], list[int], list[int]]:
    """Sub-questions as a topic record lists them, and the indices of the null and of the empty
    (``""``, blank) ones. The labeling tool's topics put null where the authors filtered a
    question out and ``""`` in one topic (duc04-testb-18, item 14); the release's
    ``subtopics/`` carries the same lists. Both keep their index under a placeholder
    (:data:`NULL_QUESTION`, :data:`EMPTY_QUESTION`); anything else that is not a string is an
    error naming the item."""
    if not isinstance(value, list):
        raise DataError("must be a list of strings", field=name, **where)
    out: list[str] = []
    nulls: list[int] = []
    empties: list[int] = []
    for i, q in enumerate(value):
        if q is None:
            out.append(NULL_QUESTION)
            nulls.append(i)
        elif not isinstance(q, str):
            raise DataError(f"item {i} must be a string (or null), got {type(q).__name__}",
                            field=name, **where)
        elif not q.strip():
            out.append(EMPTY_QUESTION)
            empties.append(i)
        else:
            out.append(q)
    return out, nulls, empties


def blank_question_notes(nulls: Mapping[str, list[int]], empties: Mapping[str, list[int]]
                         ) -> tuple[dict, list[str]]:
    """Report counts and note lines for the null and empty sub-questions of a dataset: each
    named by topic and index, so that a user sees which question can never be answered."""
    counts: dict = {}
    notes: list[str] = []
    for what, found, why in (("null", nulls, "the authors' filtered ones"),
                             ("empty", empties, "an empty string in the source")):
        n = sum(len(v) for v in found.values())
        if not n:
            continue
        named = [f"{tid} #{i}" for tid, idx in found.items() for i in idx]
        counts[f"{what}_questions"] = n
        counts[f"{what}_question_ids"] = named
        notes.append(f"{n} sub-questions were {what} ({why}): kept as placeholders so that "
                     f"rating indices hold; no passage can answer them ("
                     + ", ".join(named[:10]) + (", ..." if n > 10 else "") + ")")
    return counts, notes


def read_id(obj: dict, names: str | tuple[str, ...], where: dict) -> str:
    """A topic or passage id from the first of ``names`` the record has: a non-empty string
    without spaces (integers, as some exports write, too)."""
    names = (names,) if isinstance(names, str) else names
    name = next((n for n in names if n in obj), None)
    if name is None:
        raise DataError("missing" + (" (also looked for " + ", ".join(names[1:]) + ")"
                                     if len(names) > 1 else ""), field=names[0], **where)
    value = obj[name]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip() or len(value.split()) != 1:
        raise DataError(f"expected a non-empty identifier without spaces, got {value!r}",
                        field=name, **where)
    return value


@dataclass
class JudgeRatings:
    """Ratings by (topic, passage), in the order read; where each was read; what was counted."""

    ratings: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    where: RecordPlaces = field(default_factory=RecordPlaces)
    # each record's (topic, passage, ratings) field names where not the release's
    # (:meth:`field_names`)
    fields: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    layouts: set[str] = field(default_factory=set)
    unrated: int = 0          # -1 values read (of a judge: no digit)
    repeated: int = 0         # a (topic, passage) read again with the same ratings
    human: dict | None = None   # the labeling tool's annotators: what was read and merged
    # the source of each pair read from a record that names one (the others are original)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    original_kept: int = 0    # pairs rated by an original and an added record: the original
    # every rating in the order of ``ratings``, as one array, and each list's length, where
    # the reader had them as arrays (:meth:`flat`)
    _flat: tuple | None = field(default=None, compare=False, repr=False)

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(every rating in the order of ``ratings``, each list's length) as int64 arrays."""
        if isinstance(self.ratings, RatingRows) and self.ratings.pristine:
            return self.ratings.flat, self.ratings.lengths
        if self._flat is None or len(self._flat[1]) != len(self.ratings):
            values = list(self.ratings.values())
            lengths = np.fromiter(map(len, values), np.int64, len(values))
            flat = np.fromiter((r for v in values for r in v), np.int64, int(lengths.sum()))
            self._flat = (flat, lengths)
        return self._flat

    def rows(self) -> tuple[dict[tuple[str, str], int], list[str], np.ndarray]:
        """(each (topic, passage)'s row in :meth:`flat`'s order, the topics by first
        appearance, each row's index into them)."""
        ratings = self.ratings
        if isinstance(ratings, RatingRows) and ratings.pristine:
            return ratings.row, ratings.topics.values, ratings.topics.codes()
        keys = list(ratings)
        topics = Codes()
        topics.add([tid for tid, _ in keys])
        return dict(zip(keys, range(len(keys)), strict=True)), topics.values, topics.codes()

    def field_names(self, key: tuple[str, str]) -> tuple[str, str, str]:
        """The (topic, passage, ratings) field names of the record ``key`` was read from."""
        return self.fields.get(key, RELEASE_FIELDS)

    def by_topic(self) -> dict[str, dict[str, list[int]]]:
        """``{topic: {passage: ratings}}`` in the order the ratings were read."""
        out: dict[str, dict[str, list[int]]] = {}
        for (tid, pid), r in self.ratings.items():
            out.setdefault(tid, {})[pid] = r
        return out

    def n_questions(self) -> dict[str, int]:
        return {t: len(next(iter(m.values()))) for t, m in self.by_topic().items()}

    def source_counts(self) -> dict[str, int]:
        return source_counts(self.ratings, self.sources)

    def add(self, extra: JudgeRatings) -> None:
        """The ratings of ``extra`` (those of added files) into these, pair by pair
        (:meth:`keep`)."""
        self.files = [*self.files, *extra.files]
        self.layouts |= extra.layouts
        self.repeated += extra.repeated
        self.original_kept += extra.original_kept
        for key, ratings in extra.ratings.items():
            self.keep(key, ratings, extra.sources.get(key, ORIGINAL), extra.where[key],
                      extra.field_names(key))

    def keep(self, key: tuple[str, str], ratings: list[int], source: str, where: dict,
             names: tuple[str, str, str]) -> None:
        """One (topic, passage)'s ratings, read from ``source`` (:mod:`.crux_sources`): a pair
        read again with the same ratings from the same source is counted, an original and an
        added rating of one pair keep the original (counted), and any other pair rated twice
        differently is an error naming both places."""
        if key in self.ratings:
            seen = self.sources.get(key, ORIGINAL)
            if (seen == ORIGINAL) != (source == ORIGINAL):   # the original wins
                self.original_kept += 1
                if source == ORIGINAL:
                    self.unrated -= sum(r == RATING_UNRATED for r in self.ratings[key])
                    del self.sources[key]
                    self._put(key, ratings, source, where, names)
                return
            if self.ratings[key] == ratings:
                self.repeated += 1
                return
            place = self.where[key]
            by = "" if seen == source else f" by {seen!r} and by {source!r}"
            raise DataError(f"passage {key[1]} of topic {key[0]} rated differently{by} at "
                            f"{place['path']} {place['record']} (two judges in one folder? "
                            "name one file)", field=names[2], **where)
        self._put(key, ratings, source, where, names)

    def _put(self, key, ratings, source: str, where: dict, names) -> None:
        self.ratings[key] = ratings
        self.where[key] = where
        if names != RELEASE_FIELDS:
            self.fields[key] = names
        if source != ORIGINAL:
            self.sources[key] = source
        self.unrated += sum(r == RATING_UNRATED for r in ratings)

    def summary(self) -> dict:
        out = {"files": [str(f) for f in self.files], "layouts": sorted(self.layouts),
               "rated_pairs": len(self.ratings), "unrated_values": self.unrated,
               "repeated_pairs": self.repeated}
        if self.human is not None:
            out["human"] = self.human
        if self.sources or self.original_kept:
            out["sources"] = self.source_counts()
            out["original_kept"] = self.original_kept
        return out


def ratings_layout(obj: dict) -> tuple[str, str, str, str] | None:
    """(layout, topic field, passage field, ratings field) of a ratings record, or None."""
    for layout in (*RATING_LAYOUTS, BATCHED, HUMAN):
        if layout[1] in obj and layout[2] in obj:
            return layout
    return None


def _records(obj: dict, where: dict) -> Iterator[tuple[str, str, str, object, tuple]]:
    """(layout, topic, passage, ratings value, (topic, passage, ratings field)) of a record."""
    for layout, tkey, pkey, rkey in (*RATING_LAYOUTS, HUMAN):   # one value per record
        if tkey in obj and pkey in obj:
            if rkey not in obj:
                raise DataError("missing", field=rkey, **where)
            yield (layout, read_id(obj, tkey, where), read_id(obj, pkey, where), obj[rkey],
                   (tkey, pkey, rkey))
            return
    layout, tkey, pkey, rkey = BATCHED
    if tkey in obj and pkey in obj:
        tid, docids, values = read_id(obj, tkey, where), obj[pkey], obj.get(rkey)
        if not isinstance(docids, list):
            raise DataError("expected a list of passage ids", field=pkey, **where)
        if not isinstance(values, list) or len(values) != len(docids):
            raise DataError(f"expected a list of {len(docids)} rating lists (one per docid)",
                            field=rkey, **where)
        for i, value in enumerate(values):
            yield (layout, tid, read_id({pkey: docids[i]}, pkey, where), value,
                   (tkey, pkey, f"{rkey}[{i}]"))
        return
    wanted = "; ".join(f"{t} + {p} + {r}" for _, t, p, r in (*RATING_LAYOUTS, BATCHED, HUMAN))
    raise DataError(f"not a ratings record: expected the fields {wanted}", **where)


def read_ratings(path, encoding: str = "utf-8",
                 n_questions: Mapping[str, int] | None = None, *,
                 merge: str = "mean") -> JudgeRatings:
    """Read judge (or human) ratings from a file or every ``*.jsonl`` of a folder (or from a
    list of such paths, read as one).

    The labeling tool's human ratings (:mod:`.crux_human`) are read too, each file one
    annotator's: the ratings of one (passage, question) by several annotators are merged by
    ``merge`` (``mean``, rounded half up; ``max``; ``min``). Judge and human ratings in one
    read are an error (score them apart).

    Within a topic every rating list has the same length (one rating per sub-question): the
    topic's number of questions where ``n_questions`` knows it (so the wrong row is the one
    blamed), else the length of the topic's first row. A
    (topic, passage) read twice with the same ratings is counted, with different ones an error
    naming both places (a folder of shards of one judge may overlap; two judges must not be
    mixed).
    """
    paths = path if isinstance(path, list | tuple) else [path]
    files = [f for p in paths for f in jsonl_files(p, "ratings")]
    # the files of added ratings (their first record names a source) are read apart, so that
    # a large judge folder keeps its fast reader; what they add goes in record by record
    added = [f for f in files if names_a_source(f, encoding)]
    files = [f for f in files if f not in added]
    out = _read_release_ratings(files, encoding, n_questions) if files else JudgeRatings()
    if out is None:
        out = _read_ratings_checked(files, encoding, n_questions, merge)
    if added:
        lengths = {**_lengths(out), **(n_questions or {})}
        out.add(_read_ratings_checked(added, encoding, lengths, merge))
    return out


def _lengths(ratings: JudgeRatings) -> dict[str, int]:
    """Each topic's number of ratings in what was read."""
    out: dict[str, int] = {}
    for (tid, _), r in ratings.ratings.items():
        out.setdefault(tid, len(r))
    return out


def _read_release_ratings(files: list[Path], encoding: str,
                          n_questions: Mapping[str, int] | None) -> JudgeRatings | None:
    """:func:`read_ratings` for the release's own layout (``id``, ``docid``, ``rating``, each
    pair once, ratings -1..5 of one length per topic): every file's records checked at once,
    not one by one (a judge folder holds 60,000 lists and more). None as soon as anything is
    not so; the record-by-record reader then reads it again and names the first bad record,
    so that a bad file fails the same way whichever path meets it."""
    out = JudgeRatings(files=files)
    known: dict[str, int] = {}   # each topic's number of ratings
    row: dict[tuple[str, str], int] = {}
    topics = Codes()
    flats, all_lengths = [], []
    for file in files:
        text = read_text(file, encoding)
        parsed = release_lines(text)
        if parsed is None:
            parsed = _json_lines(text)
        if parsed is None:
            return None
        numbers, tids, pids, flat, lengths = parsed
        keys = list(zip(tids, pids, strict=True))
        before = len(row)
        row.update(zip(keys, range(before, before + len(keys)), strict=True))
        if len(row) != before + len(keys):
            return None   # a (topic, passage) twice
        # one length per topic, in this file and in those before
        seen = len(topics.index)
        topics.add(tids)
        codes = topics.codes()[before:]
        # a topic read before keeps its length, a new one takes its first row's
        expected = np.full(len(topics.index), -1, dtype=np.int64)
        expected[:seen] = [known[t] for t in topics.values[:seen]]
        present, first_row = np.unique(codes, return_index=True)
        new = present >= seen
        expected[present[new]] = lengths[first_row[new]]
        if n_questions is not None:
            expected = np.array([n_questions.get(t, n) for t, n in zip(
                topics.values, expected.tolist(), strict=True)], dtype=np.int64)
        if not np.array_equal(lengths, expected[codes]):
            return None   # a topic's rating lists of different lengths
        known.update(zip(topics.values, expected.tolist(), strict=True))
        out.where.add_lines(keys, file, numbers)
        out.unrated += int(np.count_nonzero(flat == RATING_UNRATED))
        out.layouts.add(RATING_LAYOUTS[0][0])
        flats.append(flat)
        all_lengths.append(lengths)
    if flats:
        out.ratings = RatingRows(row, np.concatenate(flats), np.concatenate(all_lengths),
                                 topics)
    return out


def _json_lines(text: str) -> tuple | None:
    """:func:`~.crux_ratings.release_lines` for any JSON lines of the release layout
    (another spacing or key order, escapes, blank lines), each read by ``json.loads``; None
    for anything else."""
    lines = text.split("\n")
    numbers = [i for i, line in enumerate(lines, 1) if line.strip()]
    try:
        objs = [json.loads(lines[i - 1]) for i in numbers]
    except (ValueError, RecursionError):
        return None
    if set(map(type, objs)) != {dict} or any(SOURCE in o for o in objs):
        return None
    try:
        tids = [o["id"] for o in objs]
        pids = [o["docid"] for o in objs]
        values = [o["rating"] for o in objs]
    except KeyError:
        return None
    if set(map(type, tids)) | set(map(type, pids)) != {str} \
            or set(map(type, values)) != {list}:
        return None
    # read_id's test (non-empty, no white space) on every id at once
    if not all(tids) or not all(pids) or _SPACE.search("".join(dict.fromkeys(tids))) \
            or _SPACE.search("".join(pids)):
        return None
    flat = [r for v in values for r in v]
    if flat and (set(map(type, flat)) != {int} or not set(flat) <= RATINGS_OR_UNRATED):
        return None
    lengths = np.fromiter(map(len, values), np.int64, len(values))
    return numbers, tids, pids, np.array(flat, dtype=np.int64), lengths


def _read_ratings_checked(files: list[Path], encoding: str,
                          n_questions: Mapping[str, int] | None, merge: str = "mean"
                          ) -> JudgeRatings:
    out = JudgeRatings(files=files)
    lengths: dict[str, tuple[int, dict]] = {}
    human = HumanRatings()
    for file in out.files:
        for lineno, obj in iter_jsonl(file, encoding):
            where = {"path": file, "record": f"line {lineno}"}
            for layout, tid, pid, value, names in _records(obj, where):
                if layout == HUMAN[0]:
                    human.add(tid, pid, value, where)
                    continue
                rkey = names[2]
                ratings = parse_ratings(value, where, name=rkey, unrated_ok=True)
                out.layouts.add(layout)
                if n_questions is not None and tid in n_questions:
                    if len(ratings) != n_questions[tid]:
                        raise DataError(f"{len(ratings)} ratings but topic {tid} has "
                                        f"{n_questions[tid]} questions", field=rkey, **where)
                n, first = lengths.setdefault(tid, (len(ratings), where))
                if len(ratings) != n:
                    raise DataError(f"{len(ratings)} ratings, but topic {tid} has {n} at "
                                    f"{first['path']} {first['record']}", field=rkey, **where)
                out.keep((tid, pid), ratings, source_of(obj, where), where, names)
    if human:
        _add_human(out, human, n_questions, merge)
    return out


def _add_human(out: JudgeRatings, human: HumanRatings, n_questions, merge: str) -> None:
    """The labeling tool's records of a read, merged, as its ratings."""
    if out.ratings:
        judged = next(iter(out.where.values()))["path"]
        raise DataError(f"holds human ratings (the labeling tool's), and {judged} judge "
                        "ratings: read them apart (one --judge each)", path=human.files[0])
    out.ratings, out.human = human.lists(n_questions, merge)
    out.layouts.add(HUMAN[0])
    for key in out.ratings:
        out.where[key] = human.where[key]
        out.fields[key] = HUMAN[1:]


# --- diversity qrels: the release's qrels/div_qrels-tau3.txt and the paper-era writer's, ndeval's
# ``topic subtopic passage relevance`` lines, read by column

class DiversityQrels:
    """ndeval qrels ``topic subtopic passage relevance``, as read (file order), by column.

    Two conventions are published: the release's ``div_qrels-tau3.txt`` holds only the lines of
    relevance 1 with subtopics from 0; the authors' paper-era writer also emits the 0 lines and
    numbers subtopics from 1. Both read the same; ``zero_lines`` and ``subtopic_base`` say which
    one a file follows. Graded qrels (the 0-5 rating in the relevance column) read too.

    The three id columns are held as :class:`~cruxflow.data.columns.Codes` (:meth:`codes`:
    one integer per line into the column's distinct ids, by first appearance); the lists
    ``topic_ids``, ``subtopic_ids`` and ``passage_ids`` are made when asked.
    """

    def __init__(self, path, rows=None, *, columns: tuple | None = None,
                 codes: tuple[Codes, Codes, Codes] | None = None, relevance=None):
        self.path = Path(path)
        if codes is None:
            if columns is None:
                rows = list(rows or ())
                columns = tuple([r[i] for r in rows] for i in range(4))
            codes = (Codes(), Codes(), Codes())
            for coded, column in zip(codes, columns[:3], strict=False):
                coded.add(list(column))
            relevance = columns[3]
        self._codes = codes
        self.relevance = np.asarray(relevance, dtype=np.int64).reshape(-1)

    def codes(self) -> tuple[tuple[list[str], np.ndarray], ...]:
        """``((topics, topic code of each line), (subtopics, ...), (passages, ...))``: each
        column's distinct ids by first appearance, and each line's index into them."""
        return tuple((c.values, c.codes()) for c in self._codes)

    def passage_index(self) -> dict[str, int]:
        """Each distinct passage id's index in :meth:`codes`' passages."""
        return self._codes[2].index

    def _column(self, i: int) -> list[str]:
        values, codes = self.codes()[i]
        return list(map(values.__getitem__, codes.tolist()))

    @property
    def topic_ids(self) -> list[str]:
        return self._column(0)

    @property
    def subtopic_ids(self) -> list[str]:
        return self._column(1)

    @property
    def passage_ids(self) -> list[str]:
        return self._column(2)

    @property
    def rows(self) -> list[tuple[str, str, str, int]]:
        return list(zip(self.topic_ids, self.subtopic_ids, self.passage_ids,
                        self.relevance.tolist(), strict=True))

    def __eq__(self, other) -> bool:
        return isinstance(other, DiversityQrels) and (self.path, self.rows) == (other.path,
                                                                                 other.rows)

    @property
    def zero_lines(self) -> int:
        return int(np.count_nonzero(self.relevance <= 0))

    @property
    def subtopic_base(self) -> int | None:
        numbers = [int(s) for s in self._codes[1].values if s.isdigit()]
        return min(numbers) if numbers else None

    def topics(self) -> list[str]:
        return self._codes[0].values

    def relevant_topics(self, threshold: int = 1) -> set[str]:
        """The topics with a line of relevance >= ``threshold``."""
        topics, codes = self.codes()[0]
        # (a count per topic: np.unique would import numpy.ma, 12 ms of a command's start)
        found = np.bincount(codes[self.relevance >= threshold], minlength=len(topics))
        return {topics[t] for t in np.flatnonzero(found).tolist()}

    def binary(self, threshold: int = 1) -> dict[str, dict[str, int]]:
        """``{topic: {passage: 1}}`` for passages with a line of relevance >= ``threshold``
        (rac_eval.py reads the diversity qrels this way for P and nDCG); topics without such a
        line are absent."""
        (topics, t), _, (passages, p) = self.codes()
        t, p = t.tolist(), p.tolist()
        out: dict[str, dict[str, int]] = {}
        for i in np.flatnonzero(self.relevance >= threshold).tolist():
            out.setdefault(topics[t[i]], {})[passages[p[i]]] = 1
        return out

    def frame(self):
        """The rows as the frame ir_measures reads diversity qrels from (subtopic in
        ``iteration``)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["query_id", "iteration", "doc_id", "relevance"])

    def summary(self) -> dict:
        return {"file": str(self.path), "lines": len(self.relevance),
                "topics": len(self.topics()), "zero_lines": self.zero_lines,
                "subtopic_base": self.subtopic_base}


def read_diversity_qrels(path) -> DiversityQrels:
    """Read ndeval (diversity) qrels; a bad line names the file, line and column."""
    # a file of plain lines 'topic subtopic passage integer' (a release's holds 180,000 lines
    # and more) is read a block at a time, each checked on its bytes and its ids coded;
    # anything else is read whole, line by line, which names the first bad one
    fast = _plain_qrels(path)
    return fast if fast is not None else _read_diversity_qrels_checked(
        path, decode_text(read_bytes(path), path))


def _plain_qrels(path) -> DiversityQrels | None:
    codes, relevance = (Codes(), Codes(), Codes()), []
    for block in read_line_blocks(path):
        split = split_fields(block, 4) if b"\r" not in block else None
        values = split and integers(split[0], split[1][3::4], split[2][3::4], signed=True)
        if values is None:
            return None
        text = block.decode("ascii")   # ASCII: byte offsets are character offsets
        for i, coded in enumerate(codes):
            coded.add_fields(text, split[0], split[1][i::4], split[2][i::4])
        relevance.append(values)
    if not relevance or has_repeat(*(c.codes() for c in codes)):
        return None   # empty, or a (topic, subtopic, passage) twice: the line reader says where
    return DiversityQrels(path, codes=codes, relevance=np.concatenate(relevance))


def _read_diversity_qrels_checked(path, text: str) -> DiversityQrels:
    rows: list[tuple[str, str, str, int]] = []
    first: dict[tuple[str, str, str], int] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 4:
            raise DataError("expected 4 columns 'topic subtopic passage relevance', got "
                            f"{len(parts)}", **where)
        try:
            rel = int(parts[3])
        except ValueError:
            raise DataError(f"relevance {parts[3]!r} is not an integer", field="relevance",
                            **where) from None
        key = (parts[0], parts[1], parts[2])
        if key in first:
            raise DataError(f"passage {parts[2]} of topic {parts[0]} subtopic {parts[1]} is "
                            f"judged again (first at line {first[key]})", field="passage",
                            **where)
        first[key] = lineno
        rows.append((*key, rel))
    if not rows:
        raise DataError("no qrels lines", path=path)
    return DiversityQrels(Path(path), rows)


# --- passage collections -----------------------------------------------------------------------

def read_collection(path, encoding: str = "utf-8") -> tuple[dict[str, str], list[Path]]:
    """Passage texts by id from a JSONL collection: one file, or every ``*.jsonl`` (or
    ``*.jsonl.gz``, as NeuCLIR's translated documents ship) under a folder (the corpus
    repository ``crux-mds-corpus`` keeps several), or, in a folder without any, every file in
    it, each one JSON record (the labeling tool's ``documents/``).

    Records carry ``id`` (or ``_id``), ``contents`` (or ``text``) and optionally ``title``,
    which is put before the text on its own line, as retrieval collections usually index it.
    """
    p = Path(path)
    if not p.exists():
        raise DataError("no such passage collection", path=p)
    files = [p] if p.is_file() else regular_files(sorted(
        f for pattern in ("*.jsonl", "*.jsonl.gz") for f in p.rglob(pattern)))
    if not files and p.is_dir():
        # the labeling tool's documents/: one file per passage (named by its id), one record
        files = regular_files(sorted(f for f in p.iterdir() if not f.name.startswith(".")))
    if not files:
        raise DataError("no *.jsonl file (nor a file of one record each) in the passage "
                        "collection folder", path=p)
    texts: dict[str, str] = {}
    first: dict[str, tuple[Path, int]] = {}
    for file in files:
        for lineno, obj in iter_jsonl(file, encoding):
            where = {"path": file, "record": f"line {lineno}"}
            id_key = "id" if "id" in obj else "_id"
            pid = read_id(obj, id_key, where)
            text_key = "contents" if "contents" in obj else "text"
            text = obj.get(text_key)
            if not isinstance(text, str) or not text.strip():
                raise DataError("missing or empty (also looked for contents/text)",
                                field=text_key, **where)
            title = obj.get("title")
            if title is not None and not isinstance(title, str):
                raise DataError(f"expected a string, got {type(title).__name__}", field="title",
                                **where)
            if pid in texts:
                seen_file, seen_line = first[pid]
                at = f"line {seen_line}" if seen_file == file else f"{seen_file} line {seen_line}"
                raise DataError(f"duplicate passage id {pid!r} (first at {at})", field=id_key,
                                **where)
            first[pid] = (file, lineno)
            texts[pid] = f"{title.strip()}\n{text}" if title and title.strip() else text
    return texts, files


# --- the labeling tool's report ids ------------------------------------------------------------

def split_report_id(rid: str, topics: set[str]) -> tuple[str, str] | None:
    """(system, topic) of a Task 1 id: the topic itself is its oracle report, else the longest
    known topic that ends the id after ``_`` (``dr_rankfirst_duc04-testb-3``)."""
    if rid in topics:
        return ORACLE, rid
    best = max((t for t in topics if rid.endswith("_" + t)), key=len, default=None)
    return None if best is None else (rid[:-len(best) - 1], best)


def report_topics(ids: list[str], known=()) -> set[str]:
    """Topics of a set of Task 1 ids: the given ones and every id no other id ends."""
    ids = list(dict.fromkeys(ids))
    bare = {i for i in ids if not any(i != j and i.endswith("_" + j) for j in ids)}
    return set(known) | bare

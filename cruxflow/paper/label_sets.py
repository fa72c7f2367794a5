"""Label sets as ``cruxflow agreement`` compares them: any labels of items by one or more
annotators (a person, a judge, an assessor pool), read from the formats cruxflow reads, each
turned into ``{item: grade}`` with the item's topic first.

========  ==========================================================  ========================
kind      read from                                                    item, grade
========  ==========================================================  ========================
qrels     TREC qrels ``topic iteration doc grade`` (NIST's, UMBRELA's;  (topic, doc), the grade
          the iteration column ``0`` or ``Q0``); with other values in   (topic, subtopic, doc)
          it, graded diversity qrels (a CRUX release's ``qrels/``)
ratings   answerability ratings in any layout ``cruxflow ingest``     (topic, passage,
          reads (a judge's, the labeling tool's Task 2 exports,        question), 0-5
          ``cruxflow annotate --export``'s passage_ratings.jsonl)
reports   report answerability (the labeling tool's Task 1 exports,   (topic, system,
          ``cruxflow annotate --export``'s report_labels.jsonl)        question), 0/1
support   TREC 2024 RAG support labels (docs/support.md)               (topic, run, sentence,
                                                                       passage), 0-2
nuggets   AutoNuggetizer's assignments (``{"qid", "docid",             (topic, segment,
          "nuggets": [{"text", "assignment"}]}``)                      nugget), 0-2
========  ==========================================================  ========================

The kind is told from the file (a folder: its first ``*.jsonl``); ``fmt`` forces it. Unrated
values (-1: a judge's unparsed rating, a support label "not judged") are no label. A file that
names its annotators (``annotator`` fields) holds one annotator each; any other file is one
annotator. A label set of several annotators has one label per item, their labels merged by one
rule (:mod:`cruxflow.data.merge`), and keeps each annotator's own labels beside it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, iter_lines
from cruxflow.data.merge import DEFAULT_MERGE, describe, merge_labels
from cruxflow.data.names import check_unique, input_name

Item = tuple
KINDS = {
    "qrels": "TREC qrels (graded)",
    "ratings": "answerability ratings (0-5)",
    "reports": "report answerability (0/1)",
    "support": "support labels (0-2)",
    "nuggets": "nugget assignments (0-2)",
}
SCALES = {"ratings": (0, 5), "reports": (0, 1), "support": (0, 2), "nuggets": (0, 2)}
# AutoNuggetizer's assignments as grades, weakest first
ASSIGNMENTS = {"not_support": 0, "partial_support": 1, "support": 2}
PLAIN_ITERATIONS = {"0", "Q0"}


@dataclass
class LabelSet:
    """One label set: each annotator's labels and, for several, the merged ones."""

    name: str
    kind: str
    annotators: dict[str, dict[Item, int]]
    files: list[str]
    merge: str = DEFAULT_MERGE
    labels: dict[Item, int] = field(default_factory=dict)
    layout: str = ""                 # e.g. "diversity qrels" within the kind qrels
    merged_items: int = 0            # items labelled by several annotators
    differing_items: int = 0         # of those, items whose labels differ

    def __post_init__(self):
        if not self.labels:
            self.labels = merge_annotators(self.annotators, self.merge, self)

    @property
    def several(self) -> bool:
        return len(self.annotators) > 1

    @property
    def scale(self) -> tuple[int, int]:
        """The lowest and highest grade of the kind (qrels: of the grades read)."""
        if self.kind in SCALES:
            return SCALES[self.kind]
        grades = set(self.labels.values()) or {0}
        return min(grades), max(grades)

    @property
    def topics(self) -> list[str]:
        return sorted({item[0] for item in self.labels})

    def describe(self) -> str:
        """What the set is, in a line: ``NIST: TREC qrels (graded), 1472 items of 4 topics``."""
        what = self.layout or KINDS[self.kind]
        text = (f"{self.name}: {what}, {len(self.labels)} items of {len(self.topics)} topics "
                f"({', '.join(self.files)})")
        if self.several:
            text += (f"; {len(self.annotators)} annotators ({', '.join(self.annotators)}), "
                     f"{describe(self.merge)}: {self.merged_items} items labelled by several, "
                     f"{self.differing_items} of them differently")
        return text

    def to_json(self) -> dict:
        out = {"kind": self.kind, "layout": self.layout or KINDS[self.kind],
               "files": self.files, "items": len(self.labels), "topics": len(self.topics),
               "annotators": {a: len(x) for a, x in self.annotators.items()}}
        if self.several:
            out.update(merge=self.merge, merged_items=self.merged_items,
                       differing_items=self.differing_items)
        return out


def merge_annotators(annotators: Mapping[str, Mapping[Item, int]], rule: str,
                     counts: LabelSet | None = None) -> dict[Item, int]:
    """One label per item from several annotators' labels, by ``rule``; ``counts`` (a label
    set) gets how many items several annotators labelled and how many of those differ."""
    if len(annotators) == 1:
        return dict(next(iter(annotators.values())))
    by_item: dict[Item, list[int]] = {}
    for labels in annotators.values():
        for item, grade in labels.items():
            by_item.setdefault(item, []).append(grade)
    if counts is not None:
        counts.merged_items = sum(len(g) > 1 for g in by_item.values())
        counts.differing_items = sum(len(set(g)) > 1 for g in by_item.values())
    return {item: merge_labels(grades, rule) for item, grades in by_item.items()}


# --- telling the format ---------------------------------------------------------------------

def _first_line(path: Path) -> str:
    for _, line in iter_lines(path):
        if line.strip():
            return line
    raise DataError("no labels in file", path=path)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if not files:
            raise DataError("no *.jsonl label file in the folder", path=path)
        return files
    if not path.is_file():
        raise DataError("no such label file or folder", path=path)
    return [path]


def detect_kind(path) -> str:
    """The kind of labels a file (or a folder's first ``*.jsonl``) holds, from its first
    record: see the module's table. Anything else is an error naming the file."""
    from cruxflow.data.ingest.crux_common import ratings_layout

    first_file = _files(Path(path))[0]
    line = _first_line(first_file)
    if line.lstrip().startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            raise DataError("the first line is not a JSON object", path=first_file,
                            record="line 1") from None
        keys = set(obj) if isinstance(obj, dict) else set()
        if "answerability" in keys or "answerable" in keys:
            return "reports"
        if "label" in keys and "sentence_index" in keys:
            return "support"
        if "nuggets" in keys:
            return "nuggets"
        if "relevances" in keys or {"rating", "annotator"} <= keys or ratings_layout(obj):
            return "ratings"
        raise DataError(f"cannot tell what labels these are (fields {', '.join(sorted(keys))});"
                        f" give --format ({', '.join(KINDS)})", path=first_file)
    columns = len(line.split())
    if columns == 4:
        return "qrels"
    if columns == 5:
        return "support"
    raise DataError(f"cannot tell what labels these are ({columns} columns: TREC qrels have 4, "
                    f"support labels 5); give --format ({', '.join(KINDS)})", path=first_file)


# --- reading --------------------------------------------------------------------------------

def read_label_set(name: str, paths: Sequence[tuple[str | None, str]], *, fmt: str | None = None,
                   merge: str = DEFAULT_MERGE, one_annotator: bool = False) -> LabelSet:
    """A label set from ``paths``: ``(annotator name or None, path)`` each, one file or folder
    per annotator unless the file names its annotators. ``fmt`` forces the kind. Annotators
    without a name are named by the file (:func:`cruxflow.data.names.input_name`), one file
    alone by the set's ``name``; two annotators of one name are refused. ``one_annotator``:
    the files are one annotator's, read as one (a judge's shards: an item in two of them with
    two grades is an error)."""
    kinds = {str(p): fmt or detect_kind(p) for _, p in paths}
    kind = next(iter(kinds.values()))
    other = next((p for p, k in kinds.items() if k != kind), None)
    if other is not None:
        raise DataError(f"{kinds[other]}, but {next(iter(kinds))} holds {kind}: one label set "
                        "holds one kind of labels", path=other)
    if kind not in KINDS:
        raise DataError(f"unknown label format {kind!r}; one of {', '.join(KINDS)}")
    annotators: dict[str, dict[Item, int]] = {}
    named: list[tuple[str, str]] = []
    layouts = set()
    for who, path in paths:
        default = name if one_annotator else \
            who or (name if len(paths) == 1 else input_name(path))
        for annotator, labels, layout in READERS[kind](Path(path), default):
            layouts.add(layout)
            if one_annotator:
                own = annotators.setdefault(name, {})
                for item, grade in labels.items():
                    if own.setdefault(item, grade) != grade:
                        raise DataError(f"{grade} for {item}, but {own[item]} in an earlier "
                                        f"file of {name}", path=path)
                continue
            named.append((annotator, path))
            check_unique(named, f"annotators of {name}")
            annotators[annotator] = labels
    if not any(annotators.values()):
        raise DataError(f"label set {name}: no label read", path=paths[0][1])
    return LabelSet(name, kind, annotators, [str(p) for _, p in paths], merge,
                    layout=" and ".join(sorted(x for x in layouts if x)))


def _add(labels: dict, item: Item, grade: int, where: dict, first: dict) -> None:
    if item in labels and labels[item] != grade:
        raise DataError(f"{grade} for {item}, but {labels[item]} at {first[item]}", **where)
    labels[item] = grade
    first.setdefault(item, where.get("record"))


def _read_qrels(path: Path, annotator: str):
    """TREC qrels; the iteration column keys the item only where it is not 0 or Q0 on every
    line (graded diversity qrels: the subtopic)."""
    rows = []
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 4:
            raise DataError(f"expected 4 columns 'topic iteration doc grade', got {len(parts)}",
                            **where)
        try:
            grade = int(parts[3])
        except ValueError:
            raise DataError(f"grade {parts[3]!r} is not an integer", field="grade",
                            **where) from None
        rows.append((parts, grade, where))
    if not rows:
        raise DataError("no labels in file", path=path)
    plain = all(parts[1] in PLAIN_ITERATIONS for parts, _, _ in rows)
    labels: dict[Item, int] = {}
    first: dict[Item, str] = {}
    for parts, grade, where in rows:
        item = (parts[0], parts[2]) if plain else (parts[0], parts[1], parts[2])
        _add(labels, item, grade, where, first)
    yield annotator, labels, "TREC qrels (graded)" if plain else "graded diversity qrels"


def _read_ratings(path: Path, annotator: str):
    """Ratings of (passage, question) pairs: a file that names its annotators (our T2 format,
    ``cruxflow annotate --export``) gives each of them; any other layout is one annotator."""
    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.paper.agreement import read_passage_ratings

    files = _files(path)
    first = json.loads(_first_line(files[0]))
    if path.is_file() and {"rating", "annotator"} <= set(first):
        frame = read_passage_ratings(path)
        for who in dict.fromkeys(frame["annotator"]):
            own = frame[frame["annotator"] == who]
            yield who, {(t, p, int(q)): int(r) for t, p, q, r in
                        own[["topic_id", "passage_id", "question", "rating"]]
                        .itertuples(index=False)}, "annotators' ratings (0-5)"
        return
    # a folder of the labeling tool's exports: one annotator a file; any other folder (a
    # judge's shards) is read as one
    each = len(files) > 1 and "relevances" in first
    for file in files if each else [path]:
        rated = read_ratings(file)
        labels = {(t, p, q): int(r) for (t, p), rs in rated.ratings.items()
                  for q, r in enumerate(rs) if r >= 0}
        layout = "human ratings (0-5)" if rated.human is not None else KINDS["ratings"]
        yield input_name(file) if each else annotator, labels, layout


def _read_reports(path: Path, annotator: str):
    from cruxflow.paper.human_labels import read_report_label_files

    files = _files(path)
    own = "answerable" in json.loads(_first_line(files[0]))
    frame = read_report_label_files([
        str(f) if own else f"{input_name(f) if len(files) > 1 else annotator}={f}"
        for f in files])
    for who in dict.fromkeys(frame["annotator"]):
        rows = frame[frame["annotator"] == who]
        yield who, {(t, s, int(q)): int(bool(a)) for t, s, q, a in
                    rows[["topic_id", "system", "question", "answerable"]]
                    .itertuples(index=False)}, KINDS["reports"]


def _read_support(path: Path, annotator: str):
    from cruxflow.beyond.support.data import NOT_JUDGED, read_label_file

    labels = {key: label for key, (label, _) in read_label_file(path).items()
              if label != NOT_JUDGED}
    yield annotator, labels, KINDS["support"]


def _read_nuggets(path: Path, annotator: str):
    labels: dict[Item, int] = {}
    first: dict[Item, str] = {}
    for file in _files(path):
        for lineno, obj in iter_jsonl(file):
            where = {"path": file, "record": f"line {lineno}"}
            if "docid" not in obj:
                continue                      # a topic's nuggets, not an assignment
            qid, docid, nuggets = obj.get("qid"), obj.get("docid"), obj.get("nuggets")
            for key, value in (("qid", qid), ("docid", docid)):
                if not isinstance(value, str) or not value.strip():
                    raise DataError("missing or not a non-empty string", field=key, **where)
            if not isinstance(nuggets, list):
                raise DataError("missing or not a list", field="nuggets", **where)
            for i, n in enumerate(nuggets):
                if not isinstance(n, dict) or not isinstance(n.get("text"), str) \
                        or n.get("assignment") not in ASSIGNMENTS:
                    raise DataError(f"expected {{text, assignment}} with an assignment of "
                                    f"{', '.join(ASSIGNMENTS)}", field=f"nuggets[{i}]", **where)
                _add(labels, (qid, docid, " ".join(n["text"].split())),
                     ASSIGNMENTS[n["assignment"]], where, first)
    yield annotator, labels, KINDS["nuggets"]


READERS = {"qrels": _read_qrels, "ratings": _read_ratings, "reports": _read_reports,
           "support": _read_support, "nuggets": _read_nuggets}

"""What :func:`cruxflow.evaluate` and the ir_measures measures accept as judgments, checked as
strictly as the command line checks its files (runs: :func:`cruxflow.data.runs.as_run`).

**Judgments** (:func:`as_judgments`) become :class:`Judgments`: the answerability ratings,
relevance qrels and diversity qrels, each optional, as the measures read them
(:data:`cruxflow.metrics.names.READS`). The explicit form is ``Judgments(ratings=...,
qrels=..., relevance=...)``; a single argument is read as follows:

=============================================  ===========================================
a prepared dataset directory (``topics.jsonl``)  its ratings and topics
a CRUX release subset folder (``qrels/``,      the ratings of ``judge/`` and the diversity
``judge/``: ``crux-mds-duc04``)                  qrels ``qrels/div_qrels-tau<eta>.txt`` (or
                                                 its only qrels file), as crux-eval reads them
a judge folder or ratings ``.jsonl``            the ratings
a TREC qrels file (``qid 0 docid grade``: one    relevance qrels
value in the second column, a passage once
a topic)
any other file                                  graded diversity qrels: ``query subtopic
                                                 passage rating`` (the ratings)
a DataFrame with ``iteration``                  graded diversity qrels (the ratings)
a DataFrame without (``query_id, doc_id,        relevance qrels
relevance`` or ``qid, docno, label``)
``{query: {passage: [ratings]}}``               the ratings
``{query: {passage: grade}}``, a ranx           relevance qrels
``Qrels``, ir_measures ``Qrel`` tuples
a :class:`~cruxflow.data.model.Dataset`         its ratings and topics
=============================================  ===========================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.model import passage_order
from cruxflow.data.runs import check_frame_ids, check_ids, frame_columns, is_integer
from cruxflow.metrics.options import RATING_MAX

QRELS_COLUMNS = (("query_id", "doc_id", "relevance"), ("qid", "docno", "label"))


# --- judgments ---------------------------------------------------------------------------------

@dataclass
class Judgments:
    """What measures are computed against (each part optional, at least one given):

    * ``ratings``: the answerability ratings, ``{query: {passage: [0-5 per sub-question]}}``
      (or any form :func:`as_judgments` reads as ratings); CRUX's measures read them, and the
      relevance and diversity qrels are derived from them where not given;
    * ``qrels``: diversity qrels given as such (``query subtopic passage relevance``, a line of
      relevance >= 1 relevant: a CRUX release's ``div_qrels-tau<eta>.txt``), a file or
      :class:`~cruxflow.data.ingest.crux_common.DiversityQrels`; ``alpha_nDCG``,
      ``alpha_nDCG_published`` and ``qrels='diversity'`` read them;
    * ``relevance``: relevance qrels given as such (``{query: {passage: grade}}``, a file,
      a frame, ranx ``Qrels``); ``R``, ``P``, ``AP``, ``nDCG`` read them;
    * ``topics``: judged topics beyond those (a dataset's topics without a rated passage).
    """

    ratings: object = None
    qrels: object = None
    relevance: object = None
    topics: list[str] | None = None
    source: str = "judgments"
    # the ratings are a Dataset's, checked when it was read: taken as they are
    checked: bool = field(default=False, repr=False, compare=False)
    # where ratings read from files came from: original and added (cruxflow judge's) pairs
    sources: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.ratings is None and self.qrels is None and self.relevance is None:
            raise ValueError("Judgments: give ratings, qrels or relevance")
        if _paths(self.ratings) is not None:
            from cruxflow.data.ingest.crux_common import read_ratings

            read = read_ratings(_paths(self.ratings))
            self.ratings = read.by_topic()
            summary = read.summary()
            self.sources = {k: summary[k] for k in ("sources", "original_kept")
                            if k in summary} or None
        elif self.ratings is not None and not self.checked:
            self.ratings = _ratings(self.ratings, "ratings")
        if self.relevance is not None:
            self.relevance = _relevance(self.relevance, "relevance")
        if self.qrels is not None and not _is_diversity(self.qrels):
            from cruxflow.data.ingest.crux_common import read_diversity_qrels

            self.qrels = read_diversity_qrels(self.qrels)

    def has(self, kind: str) -> bool:
        """Whether a measure reading ``kind`` (:data:`cruxflow.metrics.names.READS`) can be
        computed: relevance and diversity qrels are derived from ratings."""
        from cruxflow.metrics import names as N

        if kind == N.RELEVANCE:
            return self.relevance is not None or self.ratings is not None
        if kind == N.DIVERSITY:
            return self.qrels is not None or self.ratings is not None
        if kind == N.RATINGS:
            return self.ratings is not None
        return True


def _paths(value) -> list[Path] | None:
    """The ratings files or folders ``value`` names (a judge folder, a ratings ``.jsonl``, or
    a list of them, read as one), or None for any other form."""
    items = value if isinstance(value, list | tuple) and value else [value]
    if not all(isinstance(v, (str, Path)) for v in items):
        return None
    paths = [Path(v) for v in items]
    if len(paths) == 1 and not (paths[0].is_dir() or paths[0].suffix == ".jsonl"):
        return None       # graded diversity qrels (_ratings reads them)
    return paths


def _is_diversity(value) -> bool:
    return hasattr(value, "codes") and hasattr(value, "relevance")


def as_judgments(judgments, eta: int) -> Judgments:
    """``judgments`` in any accepted form (see the module's docstring); ``eta`` picks a CRUX
    release's diversity qrels file."""
    from cruxflow.data.model import Dataset

    if isinstance(judgments, Judgments):
        return judgments
    if isinstance(judgments, list | tuple) and judgments and all(
            isinstance(j, (str, Path)) for j in judgments):
        return Judgments(ratings=list(judgments), source=", ".join(map(str, judgments)))
    if isinstance(judgments, Dataset):
        return Judgments(ratings=judgments.ratings_by_topic(), topics=list(judgments.topics),
                         source="dataset", checked=True)
    if isinstance(judgments, (str, Path)):
        path = Path(judgments)
        if (path / "topics.jsonl").exists():
            return as_judgments(Dataset.load(path, with_passages=False), eta)
        if (path / "judge").is_dir() and (path / "qrels").is_dir():
            return _release(path, eta)
        if path.is_file() and path.suffix != ".jsonl" and _relevance_qrels_file(path):
            return Judgments(relevance=path, source=str(path))
        return Judgments(ratings=path, source=str(path))
    if hasattr(judgments, "columns"):
        if "iteration" in judgments.columns:
            return Judgments(ratings=judgments, source="frame")
        return Judgments(relevance=judgments, source="frame")
    if isinstance(judgments, Mapping):
        first = next((v for m in judgments.values() for v in m.values()), None)
        if isinstance(first, (list, tuple)) or getattr(first, "ndim", 0) == 1:
            return Judgments(ratings=judgments, source="ratings")
        return Judgments(relevance=judgments, source="qrels")
    if callable(getattr(judgments, "to_dict", None)) or isinstance(judgments, Iterable):
        return Judgments(relevance=judgments, source="qrels")
    raise TypeError("judgments: a dataset directory, a CRUX release subset folder, a judge "
                    "folder or ratings JSONL, graded diversity qrels, relevance qrels "
                    "(dict, frame, ranx Qrels, ir_measures Qrel tuples) or Judgments(...)")


def _relevance_qrels_file(path: Path) -> bool:
    """Whether a four-column qrels file is TREC relevance qrels (``qid 0 docid grade``: one
    value in the second column on every line, each passage once a topic) rather than graded
    diversity qrels (``qid subtopic docid rating``: the subtopic varies, a passage holds a line
    per subtopic). Read as diversity qrels, relevance qrels would give every topic one
    sub-question and their grades as ratings: numbers of another measure, in silence."""
    from cruxflow.data.io import read_text

    second, pairs, n = set(), set(), 0
    for line in read_text(path).splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            return False          # the reader names the line
        second.add(parts[1])
        pairs.add((parts[0], parts[2]))
        n += 1
        if len(second) > 1:
            return False
    return n > 0 and len(pairs) == n


def _release(path: Path, eta: int) -> Judgments:
    """A CRUX release subset folder: the ratings of ``judge/`` and the diversity qrels of
    threshold ``eta`` (``qrels/div_qrels-tau<eta>.txt``, or a single qrels file whose name
    names no other threshold); without such a file the diversity qrels are derived from the
    ratings at eta, as every door of ours derives them (a ``tau3`` file is not eta 2's)."""
    import re

    files = sorted(f for f in (path / "qrels").glob("*") if f.is_file())
    exact = [f for f in files if f.name == f"div_qrels-tau{eta}.txt"]
    other = [f for f in files if (m := re.search(r"tau(\d+)", f.name)) and int(m[1]) != eta]
    qrels = exact[0] if exact else files[0] if len(files) == 1 and not other else None
    return Judgments(ratings=path / "judge", qrels=qrels, source=str(path))


def _ratings(value, what: str) -> dict[str, dict[str, list[int]]]:
    """Ratings ``{topic: {passage: [int, ...]}}`` from a path, a frame of graded diversity
    qrels or a mapping; every rating an integer from -1 to 5, one list length per topic."""
    if isinstance(value, (str, Path)):
        path = Path(value)
        if path.is_dir() or path.suffix == ".jsonl":
            from cruxflow.data.ingest.crux_common import read_ratings

            return read_ratings(path).by_topic()
        return _graded_file(path)
    if hasattr(value, "columns"):
        missing = {"query_id", "iteration", "doc_id", "relevance"} - set(value.columns)
        if missing:
            raise DataError(f"graded diversity qrels need the columns query_id, iteration, "
                            f"doc_id, relevance; missing {', '.join(sorted(missing))}")
        check_frame_ids(value, ("query_id", "iteration", "doc_id"))
        for i, r in enumerate(value["relevance"].tolist()):
            _rating(r, f"row {i + 1}", "relevance")
        return ratings_from_graded(value)
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: a path, a frame of graded diversity qrels or "
                        "{query: {passage: [ratings]}}")
    out: dict[str, dict[str, list[int]]] = {}
    check_ids(value, "query_id", lambda i: f"query {i + 1}")
    for t, m in value.items():
        lengths = set()
        row: dict[str, list[int]] = {}
        check_ids(m, "doc_id", lambda i, t=t: f"query {t} passage {i + 1}")
        for p, rs in m.items():
            where = f"query {t} passage {p}"
            if hasattr(rs, "tolist") and getattr(rs, "ndim", 0) == 1:   # a numpy row
                rs = rs.tolist()
            if not isinstance(rs, (list, tuple)):
                raise DataError(f"expected a list of ratings, got {rs!r}", record=where,
                                field="ratings")
            row[str(p)] = [_rating(r, where, "ratings") for r in rs]
            lengths.add(len(rs))
        if len(lengths) > 1:
            raise DataError(f"rating lists of lengths {sorted(lengths)}: one rating per "
                            "sub-question, the same for every passage", record=f"query {t}",
                            field="ratings")
        out[str(t)] = row
    return out


def _rating(value, where: str, name: str) -> int:
    if not is_integer(value) or not -1 <= int(value) <= RATING_MAX:
        raise DataError(f"a rating is an integer from -1 to {RATING_MAX}, got {value!r}",
                        record=where, field=name)
    return int(value)


def _graded_file(path) -> dict[str, dict[str, list[int]]]:
    import pandas as pd

    from cruxflow.data.io import read_text

    rows = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        where = {"path": path, "record": f"line {lineno}"}
        if len(parts) != 4:
            raise DataError(f"expected 4 columns 'qid subtopic docid rating', got {len(parts)}",
                            **where)
        try:
            rating = _rating(parts[3], "", "rating")
        except DataError:
            raise DataError(f"rating {parts[3]!r} is not an integer from -1 to {RATING_MAX}",
                            field="rating", **where) from None
        rows.append((parts[0], parts[1], parts[2], rating))
    return _ratings(pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id",
                                                "relevance"]), "ratings")


def _integer_grades(qrels: Mapping) -> bool:
    """Whether every grade of ``{query: {passage: grade}}`` is a Python or numpy integer
    (checked on the whole column; a dict holds a passage once per query)."""
    import numpy as np

    try:
        grades = np.array(list(chain.from_iterable(d.values() for d in qrels.values())))
    except (AttributeError, TypeError, ValueError):
        return False
    return grades.dtype.kind in "iu" or not len(grades)


def _relevance(value, what: str) -> dict[str, dict[str, int]]:
    """Relevance qrels ``{topic: {passage: grade}}`` from a path, a frame, ranx Qrels,
    ir_measures Qrel tuples or a mapping; every grade an integer, a passage once a topic."""
    if isinstance(value, (str, Path)):
        from cruxflow.data.io import read_qrels

        return read_qrels(value)
    if hasattr(value, "columns"):
        q, d, r = frame_columns(value, QRELS_COLUMNS, "qrels")
        check_frame_ids(value, (q, d))
        items = zip(value[q].astype(str).tolist(), value[d].astype(str).tolist(),
                    value[r].tolist(), strict=True)
        records = (f"row {i + 1}" for i in range(len(value)))
    else:
        if not isinstance(value, Mapping) and callable(getattr(value, "to_dict", None)):
            value = value.to_dict()     # ranx's Qrels
        if isinstance(value, Mapping):
            check_ids(value, "query_id", lambda i: f"query {i + 1}")
            for q, docs in value.items():
                check_ids(docs, "doc_id", lambda i, q=q: f"query {q} passage {i + 1}")
        if isinstance(value, Mapping) and _integer_grades(value):
            return {str(q): {str(d): int(g) for d, g in docs.items()}
                    for q, docs in value.items()}
        if isinstance(value, Mapping):
            items = [(str(q), str(d), g) for q, docs in value.items() for d, g in docs.items()]
            records = (f"query {q} passage {d}" for q, d, _ in items)
        else:
            rows = list(value)
            if not all(hasattr(x, "query_id") and hasattr(x, "doc_id") and
                       hasattr(x, "relevance") for x in rows):
                raise TypeError(f"{what}: an iterable of Qrel(query_id, doc_id, relevance) "
                                "tuples was expected")
            check_ids([x.query_id for x in rows], "query_id", lambda i: f"item {i + 1}")
            check_ids([x.doc_id for x in rows], "doc_id", lambda i: f"item {i + 1}")
            items = [(str(x.query_id), str(x.doc_id), x.relevance) for x in rows]
            records = (f"item {i + 1}" for i in range(len(items)))
    out: dict[str, dict[str, int]] = {}
    for (q, d, g), where in zip(items, records, strict=False):
        if not is_integer(g):
            raise DataError(f"relevance {g!r} is not an integer", record=where,
                            field="relevance")
        if d in out.setdefault(q, {}):
            raise DataError(f"passage {d!r} appears twice for query {q!r}", record=where,
                            field="doc_id")
        out[q][d] = int(g)
    return out


# --- passage texts: what Den counts, and the collection a run's passages are checked against ---

def read_texts(value) -> dict[str, str]:
    """``{passage: text}`` of ``texts=``: a mapping as it is; a path: a prepared dataset's
    passages (a folder with ``topics.jsonl``), else a passage collection (a JSONL file, or a
    folder of them: :func:`cruxflow.data.ingest.crux_common.read_collection`, as ``cruxflow
    evaluate --collection`` reads one)."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, (str, Path)):
        raise TypeError(f"texts: a mapping {{passage: text}} or the path of a passage "
                        f"collection, not {type(value).__name__}")
    path = Path(value)
    if (path / "topics.jsonl").is_file():
        from cruxflow.data.model import Dataset

        dataset = Dataset.load(path, with_passages=True)
        return {pid: p.contents for pid, p in dataset.passages.items()}
    from cruxflow.data.ingest.crux_common import read_collection

    return read_collection(path)[0]


def texts_beside(judgments) -> tuple[dict[str, str] | None, str | None]:
    """The passage texts that ``judgments`` (a folder given to :func:`cruxflow.evaluate`) has
    beside it, as ``cruxflow evaluate`` finds them: a prepared dataset's passages, a CRUX
    release subset's corpus (its ``docs/``, or ``crux-mds-corpus`` beside an MDS subset); with
    where they were read, or ``(None, None)``."""
    if not isinstance(judgments, (str, Path)) or not Path(judgments).is_dir():
        return None, None
    path = Path(judgments)
    if (path / "topics.jsonl").is_file():
        return read_texts(path), str(path / "passages.jsonl")
    if (path / "judge").is_dir() and (path / "qrels").is_dir():
        from cruxflow.data.ingest import IngestOptions
        from cruxflow.data.ingest.crux_common import read_collection
        from cruxflow.data.ingest.crux_release import find_corpus

        corpus = find_corpus(path, IngestOptions())
        if corpus is not None:
            return read_collection(corpus)[0], str(corpus)
    return None, None


# --- graded diversity qrels: the ratings as qrels lines ------------------------------------

def graded_qrels(ratings_by_topic):
    """Graded diversity qrels as a frame (``query_id, iteration, doc_id, relevance``): one row
    per rated (passage, sub-question), the sub-question index as subtopic. ``ratings_by_topic``:
    ``{topic: {passage: ratings}}``, or what :func:`cruxflow.evaluate` reads as ratings (a
    judge folder or ratings file, a CRUX release subset folder, a prepared dataset folder)."""
    import pandas as pd

    if not isinstance(ratings_by_topic, Mapping):
        from cruxflow.metrics.options import DEFAULTS

        read = as_judgments(ratings_by_topic, DEFAULTS.eta)
        if read.ratings is None:
            raise DataError(f"{read.source}: no ratings to write as graded qrels (relevance "
                            "qrels only)")
        ratings_by_topic = read.ratings

    rows = [(tid, str(i), pid, int(r)) for tid, m in ratings_by_topic.items()
            for pid, ratings in m.items() for i, r in enumerate(ratings)]
    return pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id", "relevance"])


def _subtopic_key(s: str):
    return (0, int(s), s) if s.isdigit() else (1, 0, s)


def ratings_from_graded(qrels) -> dict[str, dict[str, list[int]]]:
    """The answerability matrix ``{topic: {passage: ratings}}`` of graded diversity qrels
    (sub-questions by number, passages in their natural order; a missing line rates 0): the
    inverse of :func:`graded_qrels`."""
    out: dict[str, dict[str, list[int]]] = {}
    for qid, frame in qrels.groupby("query_id", sort=False):
        subtopics = sorted(set(frame["iteration"].astype(str)), key=_subtopic_key)
        col = {s: i for i, s in enumerate(subtopics)}
        matrix = {pid: [0] * len(subtopics)
                  for pid in sorted(set(frame["doc_id"].astype(str)), key=passage_order)}
        for pid, sub, rel in zip(frame["doc_id"].astype(str), frame["iteration"].astype(str),
                                 frame["relevance"], strict=True):
            matrix[pid][col[sub]] = int(rel)
        out[str(qid)] = matrix
    return out

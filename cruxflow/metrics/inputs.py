"""What :func:`cruxflow.evaluate` and the ir_measures measures accept as a run and as
judgments, checked as strictly as the command line checks its files.

**A run** (:func:`as_run`) becomes :class:`~cruxflow.metrics.crux_eval_io.RunLines` (the
lines by column, no object per line): a TREC run file (read a block of lines at a time,
:func:`~cruxflow.metrics.crux_eval_io.read_run_top`), ``{query: {passage: score}}`` (as
ir_measures, pytrec_eval and ranx take it), ``{query: [RunRow, ...]}``, a ranx ``Run`` (any
object with ``to_dict()``), an iterable of ir_measures ``ScoredDoc`` tuples (``query_id,
doc_id, score``), or a DataFrame with ir_measures' columns (``query_id, doc_id, score``) or
PyTerrier's (``qid, docno, score``), with a ``rank`` column or without. A passage given
twice for a query, and a score that is not a number or is NaN, are errors naming the record
and the field (:class:`~cruxflow.data.errors.DataError`).

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

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.metrics.options import RATING_MAX

RUN_COLUMNS = (("query_id", "doc_id", "score"), ("qid", "docno", "score"))
QRELS_COLUMNS = (("query_id", "doc_id", "relevance"), ("qid", "docno", "label"))


# --- runs ---------------------------------------------------------------------------------------

def as_run(run, *, name: str = "run"):
    """``run`` in any accepted form as :class:`RunLines` (see the module's docstring)."""
    from cruxflow.metrics.crux_eval_io import RunLines, TopRun, read_run_top

    if isinstance(run, RunLines):
        return run
    if isinstance(run, TopRun):
        return run.lines
    if isinstance(run, (str, Path)):
        return read_run_top(run, None).lines
    if hasattr(run, "columns"):
        return _run_frame(run, name)
    if not isinstance(run, Mapping) and callable(getattr(run, "to_dict", None)):
        run = run.to_dict()       # ranx's Run: {query: {passage: score}}
    if isinstance(run, Mapping) and all(isinstance(d, Mapping) for d in run.values()):
        return _score_dicts(run, name)
    if isinstance(run, Mapping):
        qids, pids, scores, ranks = [], [], [], []
        for q, docs in run.items():
            if isinstance(docs, Mapping):
                for d, s in docs.items():
                    qids.append(str(q))
                    pids.append(str(d))
                    scores.append(s)
            else:                 # [RunRow, ...]: their order, and their rank column
                for r in docs:
                    qids.append(str(q))
                    pids.append(str(r.doc_id))
                    scores.append(r.score)
                    ranks.append(r.rank)
        return _lines(qids, pids, scores, ranks if len(ranks) == len(qids) and ranks else None,
                      name, lambda i: f"query {qids[i]} passage {pids[i]}",
                      [str(q) for q in run])
    if isinstance(run, Iterable):
        rows = list(run)
        if rows and not all(hasattr(r, "query_id") and hasattr(r, "doc_id") and
                            hasattr(r, "score") for r in rows):
            raise TypeError(f"{name}: an iterable of ScoredDoc(query_id, doc_id, score) tuples "
                            "was expected")
        qids = [str(r.query_id) for r in rows]
        pids = [str(r.doc_id) for r in rows]
        return _lines(qids, pids, [r.score for r in rows], None, name,
                      lambda i: f"item {i + 1}")
    raise TypeError(f"{name}: a TREC run file, {{query: {{passage: score}}}}, a ranx Run, "
                    "ScoredDoc tuples or a DataFrame (query_id, doc_id, score or qid, docno, "
                    "score)")


def _score_dicts(run: Mapping, name: str):
    """``{query: {passage: score}}`` by column at once (no check per entry: a dict holds a
    passage once per query; a score that is not a number, or NaN, is found on the whole
    column and then named)."""
    import numpy as np

    from cruxflow.metrics.crux_eval_io import RunLines

    lengths = [len(d) for d in run.values()]
    total = sum(lengths)
    try:
        scores = np.fromiter(chain.from_iterable(d.values() for d in run.values()),
                             np.float64, total)
        bad = bool(np.isnan(scores).any())
    except (TypeError, ValueError):
        bad = True
    if bad:      # the slow route names the record
        qids = [str(q) for q, d in run.items() for _ in d]
        pids = [str(p) for d in run.values() for p in d]
        return _lines(qids, pids, [s for d in run.values() for s in d.values()], None, name,
                      lambda i: f"query {qids[i]} passage {pids[i]}", [str(q) for q in run])
    topics = [str(q) for q in run]
    if len(set(topics)) != len(topics):
        raise DataError(f"{name}: two queries have the same id once written as text")
    # one passage id per line (a dict holds a passage once per query; numbering the ids
    # across queries would cost more than looking each up once)
    passages = list(map(str, chain.from_iterable(run.values())))
    return RunLines(topics, np.repeat(np.arange(len(topics), dtype=np.int64), lengths),
                    passages, np.arange(total, dtype=np.int64), scores,
                    np.arange(1, total + 1, dtype=np.int64))


def _columns(frame, choices, what: str) -> tuple[str, ...]:
    for names in choices:
        if set(names) <= set(frame.columns):
            return names
    wanted = " or ".join(", ".join(c) for c in choices)
    raise DataError(f"the {what} frame needs the columns {wanted}; it has "
                    f"{', '.join(map(str, frame.columns))}")


def _run_frame(frame, name: str):
    q, d, s = _columns(frame, RUN_COLUMNS, name)
    qids = frame[q].astype(str).tolist()
    pids = frame[d].astype(str).tolist()
    ranks = frame["rank"].tolist() if "rank" in frame.columns else None
    if ranks is not None:
        for i, value in enumerate(ranks):
            if not _is_integer(value):
                raise DataError(f"rank {value!r} is not an integer", record=f"row {i + 1}",
                                field="rank")
    return _lines(qids, pids, frame[s].tolist(), ranks, name, lambda i: f"row {i + 1}")


def _is_integer(value) -> bool:
    try:
        return not isinstance(value, bool) and float(value) == int(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _lines(qids, pids, scores, ranks, name: str, record, topics=None):
    from cruxflow.metrics.crux_eval_io import RunLines

    values = []
    for i, s in enumerate(scores):
        try:
            value = float(s)
        except (TypeError, ValueError):
            raise DataError(f"score {s!r} is not a number", record=record(i),
                            field="score") from None
        if isinstance(s, bool) or math.isnan(value):
            raise DataError(f"score {s!r} is not a number", record=record(i), field="score")
        values.append(value)
    seen: set[tuple[str, str]] = set()
    for i, key in enumerate(zip(qids, pids, strict=True)):
        if key in seen:
            raise DataError(f"passage {key[1]!r} appears twice for query {key[0]!r}",
                            record=record(i), field="doc_id")
        seen.add(key)
    return RunLines.from_columns(qids, pids, values, ranks, topics)


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
        return Judgments(ratings=path, source=str(path))
    if hasattr(judgments, "columns"):
        if "iteration" in judgments.columns:
            return Judgments(ratings=judgments, source="frame")
        return Judgments(relevance=judgments, source="frame")
    if isinstance(judgments, Mapping):
        first = next((v for m in judgments.values() for v in m.values()), None)
        if isinstance(first, (list, tuple)):
            return Judgments(ratings=judgments, source="ratings")
        return Judgments(relevance=judgments, source="qrels")
    if callable(getattr(judgments, "to_dict", None)) or isinstance(judgments, Iterable):
        return Judgments(relevance=judgments, source="qrels")
    raise TypeError("judgments: a dataset directory, a CRUX release subset folder, a judge "
                    "folder or ratings JSONL, graded diversity qrels, relevance qrels "
                    "(dict, frame, ranx Qrels, ir_measures Qrel tuples) or Judgments(...)")


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
        from cruxflow.metrics.measures import ratings_from_graded

        missing = {"query_id", "iteration", "doc_id", "relevance"} - set(value.columns)
        if missing:
            raise DataError(f"graded diversity qrels need the columns query_id, iteration, "
                            f"doc_id, relevance; missing {', '.join(sorted(missing))}")
        for i, r in enumerate(value["relevance"].tolist()):
            _rating(r, f"row {i + 1}", "relevance")
        return ratings_from_graded(value)
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: a path, a frame of graded diversity qrels or "
                        "{query: {passage: [ratings]}}")
    out: dict[str, dict[str, list[int]]] = {}
    for t, m in value.items():
        lengths = set()
        row: dict[str, list[int]] = {}
        for p, rs in m.items():
            where = f"query {t} passage {p}"
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
    if not _is_integer(value) or not -1 <= int(value) <= RATING_MAX:
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
        q, d, r = _columns(value, QRELS_COLUMNS, "qrels")
        items = zip(value[q].astype(str).tolist(), value[d].astype(str).tolist(),
                    value[r].tolist(), strict=True)
        records = (f"row {i + 1}" for i in range(len(value)))
    else:
        if not isinstance(value, Mapping) and callable(getattr(value, "to_dict", None)):
            value = value.to_dict()     # ranx's Qrels
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
            items = [(str(x.query_id), str(x.doc_id), x.relevance) for x in rows]
            records = (f"item {i + 1}" for i in range(len(items)))
    out: dict[str, dict[str, int]] = {}
    for (q, d, g), where in zip(items, records, strict=False):
        if not _is_integer(g):
            raise DataError(f"relevance {g!r} is not an integer", record=where,
                            field="relevance")
        if d in out.setdefault(q, {}):
            raise DataError(f"passage {d!r} appears twice for query {q!r}", record=where,
                            field="doc_id")
        out[q][d] = int(g)
    return out

"""``cruxflow.evaluate``: score a run from Python, under the names of :mod:`.names`.

    import cruxflow
    scores = cruxflow.evaluate("my.run", "crux-mds-duc04/judge",
                               measures=["Cov@10", "alpha_nDCG@10", "nDCG@10"])
    scores.mean()          # the defined mean: NaN (undefined) values are left out

The values are those of the workflow's scorer and ``cruxflow evaluate`` (the same
:class:`~cruxflow.metrics.scorer.ContextScorer`, the same run order), so a name printed by any
of these doors means one number. What each door is given:

* ``run``: a TREC run file, ``{query: {passage: score}}`` (as ir_measures and ranx take it) or
  a DataFrame with ``query_id, doc_id, score``; ordered by :func:`cruxflow.data.io.trec_order`.
* ``judgments``: the answerability ratings, as a prepared dataset directory (or
  :class:`~cruxflow.data.model.Dataset`), a CRUX release's ``judge/`` folder or ratings JSONL,
  *graded diversity qrels* (a file or DataFrame of
  ``query_id iteration doc_id relevance``, one 0-5 rating per passage and sub-question, as
  :func:`cruxflow.metrics.measures.graded_qrels` writes) or ``{query: {passage: [ratings]}}``.
  From them come, for the options' eta, the answerable questions, P*, P** = Z* and the qrels
  each measure is defined on (:data:`cruxflow.metrics.names.REGISTRY`): CRUX's measures read
  the ratings, ``alpha_nDCG`` the diversity qrels at eta, ``R``/``P``/``AP``/``nDCG`` the
  relevance qrels (P* graded by the options' relevance grades). Relevance measures are never
  computed on the graded ratings themselves (ir_measures would read each passage's last
  sub-question line as its grade).
* ``texts`` (passage -> text, counted with the options' tokenizer) or ``tokens`` (passage ->
  token count): needed by ``Den`` only.

Topics: every topic with at least one answerable question; a judged topic missing from the
run has an empty context (listed in ``frame.attrs["missing_in_run"]``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow, read_run, read_text, tie_warning, trec_order
from cruxflow.metrics import names as N
from cruxflow.metrics.options import DEFAULTS, MetricOptions

DEFAULT_MEASURES = ("Cov@oracle", "alpha_nDCG_crux@oracle", "Cov@10", "alpha_nDCG@10",
                    "nDCG@10")


def evaluate(run, judgments, measures=DEFAULT_MEASURES, *, options: MetricOptions | None = None,
             texts: Mapping[str, str] | None = None, tokens: Mapping[str, int] | None = None):
    """One row per evaluated topic (index ``topic``), one column per measure name (in its
    canonical form, :func:`cruxflow.metrics.names.parse`). See the module's docstring."""
    import pandas as pd

    from cruxflow.metrics.judgments import derive
    from cruxflow.metrics.scorer import ContextScorer

    base = options or DEFAULTS
    wanted = N.parse_all(measures)
    for name in wanted:
        if name.cutoff is None:
            raise ValueError(f"{name}: give a cutoff ({name}@10, or {name}@oracle for k = |Z*|)")
    dataset = _dataset(judgments)
    ranking = _run(run)
    source = _token_source(texts, tokens)
    count = source.count if source.counts is not None else _counter(base.tokenizer)
    columns: dict[str, object] = {}
    topics: list[str] | None = None
    tied: dict[str, None] = {}
    scorers: dict[MetricOptions, ContextScorer] = {}
    for name in wanted:
        opts = name.options(base)
        if name.measure == "Den" and not source:
            raise ValueError(f"{name} needs the passages' texts (texts=) or token counts "
                             "(tokens=)")
        scorer = scorers.get(opts)
        if scorer is None:
            scorer = scorers[opts] = ContextScorer(dataset, derive(dataset, opts.eta, opts.alpha),
                                                   source, count, opts)
        if not scorer.judgments:
            raise DataError(f"no topic has an answerable question at eta={opts.eta}")
        frame = scorer.score(ranking, "run", name.cutoff)
        if topics is None:
            topics = list(frame["topic"])
            missing = [t for t, inside in zip(frame["topic"], frame["in_run"], strict=True)
                       if not inside]
        elif list(frame["topic"]) != topics:
            raise ValueError(f"{name}: eta={opts.eta} evaluates other topics than the other "
                             "measures; score it in a call of its own")
        tied.update(dict.fromkeys(scorer.tied_topics(ranking, [name.cutoff])))
        columns[str(name)] = _column(scorer, frame, name)
    if source.missing and any(n.measure == "Den" for n in wanted):
        raise DataError(f"no text or token count for passage {sorted(source.missing)[0]!r} "
                        f"({len(source.missing)} passages): Den needs every passage of a "
                        "context and of Z*")
    out = pd.DataFrame(columns, index=pd.Index(topics, name="topic"))
    out.attrs["missing_in_run"] = missing
    out.attrs["tied_topics"] = list(tied)
    line = tie_warning(tied, len(out))
    if line:
        warnings.warn(line, stacklevel=2)
    return out


def _column(scorer, frame, name: N.Name):
    m = name.measure
    if m == "Cov":
        return (scorer.coverage_all_questions(frame) if name["questions"] == "all"
                else frame["Cov"].to_numpy())
    if m in ("R", "P", "AP"):
        rel = name["rel"]
        required = scorer.options.grades.required
        if rel == 1:
            return frame[m].to_numpy()
        if m == "R" and rel == required:
            return frame[f"R(rel={required})"].to_numpy()
        raise ValueError(f"{name}: the relevance qrels grade P** {required} and the rest of P* "
                         f"lower ({scorer.options.relevance_grades} grades); ask for "
                         f"{m}@{name.cutoff}" + (f" or R(rel={required})@{name.cutoff}"
                                                 if m == "R" else ""))
    return frame[m].to_numpy()


# --- inputs ------------------------------------------------------------------------------------

def _run(run) -> dict[str, list[RunRow]]:
    if isinstance(run, (str, Path)):
        return read_run(run)
    if hasattr(run, "columns"):      # a DataFrame: query_id, doc_id, score
        missing = {"query_id", "doc_id", "score"} - set(run.columns)
        if missing:
            raise ValueError(f"the run frame lacks the columns {sorted(missing)}")
        triples = zip(run["query_id"].astype(str), run["doc_id"].astype(str), run["score"],
                      strict=True)
    elif isinstance(run, Mapping):
        triples = ((str(q), str(d), s) for q, docs in run.items() for d, s in docs.items())
    else:
        raise TypeError("run: a TREC run file, {query: {passage: score}} or a DataFrame")
    out: dict[str, list[RunRow]] = {}
    for q, d, s in triples:
        score = float(s)
        if math.isnan(score):
            raise ValueError(f"run: score of {d!r} for query {q!r} is NaN")
        out.setdefault(q, []).append(RunRow(q, d, 0, score))
    return {q: trec_order(rows) for q, rows in out.items()}


def _dataset(judgments):
    from cruxflow.data.model import Dataset, Topic

    if isinstance(judgments, Dataset):
        return judgments
    if isinstance(judgments, (str, Path)):
        path = Path(judgments)
        if (path / "topics.jsonl").exists():
            return Dataset.load(path, with_passages=False)
        if path.is_dir() or path.suffix == ".jsonl":   # a CRUX release's judge ratings
            from cruxflow.data.ingest.crux_common import read_ratings

            ratings = read_ratings(path).by_topic()
        else:
            ratings = _graded_qrels_file(path)
    elif hasattr(judgments, "columns"):
        ratings = _graded_frame(judgments)
    elif isinstance(judgments, Mapping):
        ratings = {str(t): {str(p): [int(r) for r in rs] for p, rs in m.items()}
                   for t, m in judgments.items()}
    else:
        raise TypeError("judgments: a dataset directory, graded diversity qrels (file or "
                        "DataFrame) or {query: {passage: [ratings]}}")
    topics, matrix = {}, {}
    for tid, m in ratings.items():
        sizes = {len(r) for r in m.values()}
        if len(sizes) > 1:
            raise ValueError(f"judgments: topic {tid!r} has rating lists of lengths "
                             f"{sorted(sizes)}")
        n = sizes.pop() if sizes else 0
        topics[tid] = Topic(tid, None, [], questions=[f"q{i}" for i in range(n)])
        matrix.update({(tid, p): r for p, r in m.items()})
    return Dataset(topics, {}, {}, matrix)


def _graded_frame(frame) -> dict[str, dict[str, list[int]]]:
    from cruxflow.metrics.measures import ratings_from_graded

    missing = {"query_id", "iteration", "doc_id", "relevance"} - set(frame.columns)
    if missing:
        raise ValueError(f"the judgments frame lacks the columns {sorted(missing)} (graded "
                         "diversity qrels: query_id, iteration, doc_id, relevance)")
    return ratings_from_graded(frame)


def _graded_qrels_file(path) -> dict[str, dict[str, list[int]]]:
    import pandas as pd

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
            rows.append((parts[0], parts[1], parts[2], int(parts[3])))
        except ValueError:
            raise DataError(f"rating {parts[3]!r} is not an integer", field="rating",
                            **where) from None
    return _graded_frame(pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id",
                                                     "relevance"]))


class _TokenSource(dict):
    """What ContextScorer reads as passage texts: the texts, or the passage ids when token
    counts are given (``count`` then looks them up); a passage with neither counts 0 tokens
    and is remembered, so that Den refuses rather than scores it."""

    def __init__(self, texts, counts):
        super().__init__(texts or {})
        self.counts = counts
        self.missing: set[str] = set()
        self.given = texts is not None or counts is not None

    def __bool__(self):
        return self.given

    def __missing__(self, pid):
        if self.given:
            self.missing.add(pid)
        return pid if self.counts is not None else ""

    def count(self, pid: str) -> int:
        return int(self.counts.get(pid, 0))


def _token_source(texts, tokens) -> _TokenSource:
    if texts is not None and tokens is not None:
        raise ValueError("give texts or tokens, not both")
    source = _TokenSource(texts, tokens)
    if tokens is not None:
        dict.update(source, {p: p for p in tokens})
    return source


def _counter(tokenizer):
    from cruxflow.metrics.tokens import make_token_counter

    return make_token_counter(tokenizer)

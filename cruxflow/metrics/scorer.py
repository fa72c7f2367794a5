"""Score retrieval contexts: CRUX metrics and IR metrics per query, aggregates from them.

A *context* is the top-k of a run for a topic, with k = |Z*| (the paper's default, written
``"oracle"``) or a fixed number. The row of size k of the per-query table holds, per topic,
the measures of :data:`cruxflow.metrics.names.TABLE_MEASURES` at cutoff k (the column ``Cov``
in the row of k = 10 is ``Cov@10``; docs/evaluate.md lists every name's definition).
Only topics with at least one answerable question are evaluated (the others have no Q); a
judged topic the run lacks is an empty context.

A run's contexts are scored for all topics at once (:mod:`cruxflow.metrics.batch`) and the
ir_measures evaluators are built once per scorer: the values are those of the per-topic
functions (:mod:`cruxflow.metrics.crux`, ir_measures' own measures), at a cost linear in
topics (``benchmarks/metrics.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.io import RunRow, tie_warning, ties_at_cutoff
from cruxflow.data.model import Dataset
from cruxflow.metrics import ir, names
from cruxflow.metrics.batch import FlatRun, TopicArrays
from cruxflow.metrics.judgments import TopicJudgments, relevance_qrels
from cruxflow.metrics.options import DEFAULTS, MetricOptions
from cruxflow.metrics.tokens import TokenCounter


def measure_columns(options: MetricOptions = DEFAULTS) -> list[str]:
    """The measure columns of a per-query table made with ``options``."""
    return names.table_columns(options)


def context_size(k: int | str, judgment: TopicJudgments | None) -> int:
    if k == "oracle" and judgment is not None:
        return len(judgment.required)
    if isinstance(k, int) and k > 0:
        return k
    raise ValueError(f"context size must be 'oracle' or a positive integer, got {k!r}")


def parse_context_size(text: str) -> int | str:
    """A context size as written in paths and configs: ``oracle`` or a positive integer."""
    if text == "oracle":
        return text
    if str(text).isdigit() and int(text) > 0:
        return int(text)
    raise ValueError(f"context size must be 'oracle' or a positive integer, got {text!r}")


def contexts(run: Mapping[str, list[RunRow]], judgments: Mapping[str, TopicJudgments],
             k: int | str) -> dict[str, list[str]]:
    """The context Z of every judged topic: the run's top-k passage ids (empty if absent)."""
    return {tid: [r.doc_id for r in run.get(tid, [])[:context_size(k, j)]]
            for tid, j in judgments.items()}


def check_run(run: Mapping[str, list[RunRow]], dataset: Dataset,
              texts: Mapping[str, str] | None, path, *, strict_collection: bool = False) -> int:
    """Unknown topic ids in a run are errors, not silent zeros; returns how many run lines rank
    a passage outside the collection. ``texts=None`` checks the topics only (a collection that
    is not at hand cannot be checked against).

    The released runs (``bm25.run``, ``dr_rankfirst.run``) retrieved from the whole CRUX corpus
    while a local copy holds the judged passages only: a passage outside the collection is an
    unjudged one (rated 0 for every question), counted here. ``strict_collection`` makes it an
    error instead. An id that is no passage id at all (where the collection's ids follow the
    ``<topic>:<doc>#<n>`` scheme and it does not) is an error naming the file and line.
    """
    scheme = texts is not None and _follows_scheme(next(iter(texts), ""))
    outside = 0
    for qid, rows in run.items():
        if qid not in dataset.topics:
            raise DataError(f"unknown topic {qid!r} (not in the dataset's topics)", path=path,
                            record=f"query {qid}", field="qid")
        for row in rows if texts is not None else ():
            if row.doc_id in texts:
                continue
            if strict_collection:   # name the first such line of the file, not of the order
                line, doc = _first_line_outside(path, texts) or (
                    _line_of(path, qid, row.doc_id), row.doc_id)
                raise DataError(f"unknown passage {doc!r} (not in the passage "
                                "collection; --strict-collection)", path=path,
                                record=line, field="docid")
            if scheme and not _follows_scheme(row.doc_id):
                raise DataError(f"{row.doc_id!r} is not a passage id (<topic>:<doc>#<n>, as the "
                                "collection's)", path=path, record=_line_of(path, qid, row.doc_id),
                                field="docid")
            outside += 1
    return outside


def _follows_scheme(pid: str) -> bool:
    from cruxflow.data.model import parse_passage_id

    try:
        parse_passage_id(pid)
    except ValueError:
        return False
    return True


def _first_line_outside(path, texts: Mapping[str, str]) -> tuple[str, str] | None:
    """(``line N``, passage) of the run file's first line whose passage is not in ``texts``
    (read again: errors only)."""
    from cruxflow.data.io import read_text

    try:
        for lineno, line in enumerate(read_text(path).split("\n"), 1):
            parts = line.split()
            if len(parts) > 2 and parts[2] not in texts:
                return f"line {lineno}", parts[2]
    except DataError:
        pass
    return None


def _line_of(path, qid: str, doc_id: str) -> str:
    """The run file's line that ranks ``doc_id`` for ``qid`` (read again: errors only)."""
    from cruxflow.data.io import read_text

    try:
        for lineno, line in enumerate(read_text(path).split("\n"), 1):
            parts = line.split()
            if len(parts) > 2 and parts[0] == qid and parts[2] == doc_id:
                return f"line {lineno}"
    except DataError:
        pass
    return f"query {qid}"


class ContextScorer:
    """Holds what every context of a dataset is scored against (built once per dataset).

    ``options`` (:class:`~cruxflow.metrics.options.MetricOptions`): eta, alpha, the density
    weight and the relevance grades; the keyword arguments of older callers override it.
    """

    def __init__(self, dataset: Dataset, judgments: dict[str, TopicJudgments],
                 texts: Mapping[str, str], count_tokens: TokenCounter,
                 options: MetricOptions = DEFAULTS, *, eta: int | None = None,
                 alpha: float | None = None, density_weight: float | None = None,
                 grades: str | None = None):
        options = options.with_(eta=eta, alpha=alpha, density_weight=density_weight,
                                relevance_grades=grades)
        self.options = options
        self.dataset, self.texts, self.count_tokens = dataset, texts, count_tokens
        self.eta, self.alpha, self.weight = options.eta, options.alpha, options.density_weight
        self.judgments = {t: j for t, j in judgments.items() if j.kept}
        self.matrix = dataset.ratings_by_topic()
        # nDCG's gains: "2-1" (ours) or the CRUX authors' "3-2-1" (options.RELEVANCE_GRADES)
        self.qrels = relevance_qrels(self.judgments, self.matrix, options.relevance_grades)
        self.columns = measure_columns(options)
        self.arrays = TopicArrays(self.judgments, self.matrix, self.eta, self.alpha)
        self._tokens: dict[str, int] = {}
        self.oracle_tokens = {t: self.tokens(j.required) for t, j in self.judgments.items()}
        self._oracle_tokens = np.array(list(self.oracle_tokens.values()), dtype=np.int64)
        self._oracle_size = np.array([len(j.required) for j in self.judgments.values()],
                                     dtype=int)
        self.n_questions = np.array([j.n_questions for j in self.judgments.values()],
                                    dtype=int)
        # nDCG@k's ideal is cut at k: one evaluator for every cutoff asked so far (|Z*| of
        # every topic, 10 and 20 at first; rebuilt when another k comes)
        self._cutoffs: set[int] = set()
        self.relevance: ir.RelevanceEvaluator | None = None
        self._need_cutoffs({*self._oracle_size.tolist(), 10, 20})
        # the last run flattened: its sizes (|Z*|, 10, 20) are scored one call after another
        self._flat: tuple[Mapping, FlatRun] | None = None
        # per k scored: topics whose context ranks a passage without text (Den undefined)
        self.den_undefined: dict[str, list[str]] = {}

    def _need_cutoffs(self, cutoffs) -> None:
        cutoffs = {int(c) for c in cutoffs if int(c) > 0}
        if self.relevance is None or not cutoffs <= self._cutoffs:
            self._cutoffs |= cutoffs
            self.relevance = ir.RelevanceEvaluator(self.qrels, ir.relevance_measures(
                self.options.grades.required, self._cutoffs))

    def tokens(self, pids) -> int:
        """Tokens of ``pids``; a passage without text (outside the collection, see
        :func:`check_run`) counts 0 here and its context's Den is undefined in :meth:`score`."""
        total = 0
        for p in pids:
            if p not in self._tokens:
                text = self.texts.get(p)
                self._tokens[p] = 0 if text is None else self.count_tokens(text)
            total += self._tokens[p]
        return total

    def rating_rows(self, tid: str, pids) -> list[list[int]]:
        n = self.judgments[tid].n_questions
        m = self.matrix.get(tid, {})
        return [m.get(p, [0] * n) for p in pids]

    def token_counts(self, pids) -> list[int]:
        known = self._tokens
        return [known[p] if p in known else self.tokens((p,)) for p in pids]

    def flat(self, run: Mapping[str, list[RunRow]]) -> FlatRun:
        """``run`` as arrays, reused while the same run object is scored at other sizes (a
        run is read once and not changed while it is scored)."""
        if self._flat is None or self._flat[0] is not run:
            self._flat = (run, self.arrays.flatten(run))
        return self._flat[1]

    def sizes(self, k: int | str) -> np.ndarray:
        """The cutoff of every evaluated topic: |Z*| for ``oracle``, else k."""
        return self._oracle_size if k == "oracle" else np.full(
            len(self.judgments), context_size(k, None))

    def tied_topics(self, run: Mapping[str, list[RunRow]], ks) -> list[str]:
        """The evaluated topics whose top k, for some k in ``ks``, the tie policy decides."""
        out: dict[str, None] = {}
        for k in ks:
            cut = dict(zip(self.judgments, self.sizes(k).tolist(), strict=True))
            out.update(dict.fromkeys(ties_at_cutoff(
                {t: run[t] for t in self.judgments if t in run}, cut)))
        return list(out)

    def tie_line(self, run: Mapping[str, list[RunRow]], ks) -> str | None:
        """The one warning of a door (None: no tie decides a context): how many topics'
        contexts the tie policy decides."""
        return tie_warning(self.tied_topics(run, ks), len(self.judgments))

    def score(self, run: Mapping[str, list[RunRow]], system: str, k: int | str) -> pd.DataFrame:
        size = self.sizes(k)
        flat = self.flat(run)
        rows, n, tokens = self.arrays.cut(flat, size, self.token_counts)
        cov = self.arrays.coverage(rows)
        ctxs = {tid: ids[:c]
                for tid, ids, c in zip(self.judgments, flat.doc_ids, n.tolist(), strict=True)}
        self._need_cutoffs(set(size.tolist()))
        ir_scores = self.relevance.per_query(ctxs)
        topics = list(self.judgments)
        required = f"R(rel={self.options.grades.required})"
        columns = {
            "system": system, "k": str(k), "topic": topics, "context_size": n,
            "in_run": flat.in_run, "tokens": tokens,
            "Cov": cov,
            "alpha_nDCG_crux": self.arrays.alpha_ndcg(rows),
            "Den": self.arrays.density(cov, tokens, self._oracle_tokens, self.weight),
            "R": [ir_scores[t]["R"] for t in topics],
            required: [ir_scores[t][required] for t in topics],
            "P": np.array([ir_scores[t]["NumRelRet"] for t in topics]) / size,
            "AP": [ir_scores[t]["AP"] for t in topics],
            "nDCG": [ir_scores[t][f"nDCG@{c}"] for t, c in zip(topics, size.tolist(),
                                                               strict=True)],
            "alpha_nDCG": self.arrays.alpha_ndcg_ndeval(rows, size),
            "alpha_nDCG_published": self.arrays.alpha_ndcg_published(rows),
        }
        # Den needs every ranked passage's tokens: where a passage's text is missing it is
        # undefined, never computed from a guess (the topics are kept per k for the report)
        no_text = [t for t, ids in ctxs.items() if any(p not in self.texts for p in ids)]
        if no_text:
            undefined = np.isin(np.array(topics), no_text)
            columns["Den"] = np.where(undefined, np.nan, columns["Den"])
        self.den_undefined[str(k)] = no_text
        return pd.DataFrame(columns)

    def coverage_all_questions(self, frame: pd.DataFrame) -> np.ndarray:
        """``Cov(questions=all)`` of a frame of :meth:`score`: an unrated passage answers
        nothing, so every question a context answers is answerable, and the share of all
        sub-questions is Cov x |answerable| / |all|."""
        n_kept = self.arrays.n_kept
        per_topic = dict(zip(self.judgments, n_kept / self.n_questions, strict=True))
        return frame["Cov"].to_numpy() * frame["topic"].map(per_topic).to_numpy()


def aggregate(per_query: pd.DataFrame) -> pd.DataFrame:
    """Means over topics per (system, k); NaN values (undefined for a topic) are skipped."""
    cols = [c for c in per_query.columns if _is_measure(c)]
    grouped = per_query.groupby(["system", "k"], sort=False)
    table = grouped[cols].mean()
    table.insert(0, "topics", grouped["topic"].nunique())
    table.insert(1, "missing_in_run", grouped["in_run"].apply(lambda s: int((~s).sum())))
    return table.reset_index()


def _is_measure(column: str) -> bool:
    try:
        names.parse(column)
    except ValueError:
        return False
    return True

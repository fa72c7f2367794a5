"""Score retrieval contexts: every registered measure per topic, aggregates from them.

A *context* is the top-k of a run for a topic, with k = |Z*| (the paper's default, written
``"oracle"``) or a fixed number. :class:`ContextScorer` is the one engine behind every door of
ours (the workflow's ``context_metrics``, ``cruxflow evaluate``, :func:`cruxflow.evaluate`,
the ir_measures measures): it computes a measure *name* (:mod:`cruxflow.metrics.names`) by
calling the compute function its definition names (:mod:`cruxflow.metrics.compute`) on the
run's contexts, and applies the name's topic set. Only what a name needs is built: the arrays
of an eta when a measure at that eta is asked for, Z* when a measure needs it, each cutoff's
contexts once for every measure at that cutoff, ndeval's ranked DCG once.

The row of size k of the per-query table (:meth:`ContextScorer.score`) holds, per topic, the
measures of :data:`cruxflow.metrics.names.TABLE_MEASURES` at cutoff k (the column ``Cov`` in
the row of k = 10 is ``Cov@10``; docs/evaluate.md lists every name's definition), over the
default topics: those with at least one answerable question; a judged topic the run lacks is
an empty context.

Runs and contexts are arrays for all topics at once (:mod:`cruxflow.metrics.batch`): no step
works per context in Python, the values are those of the per-topic functions
(``tests/test_metrics_fast.py``) at a cost linear in topics (``benchmarks/metrics.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from itertools import repeat
from operator import is_not
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from cruxflow.data.errors import DataError
from cruxflow.data.io import tie_warning
from cruxflow.data.model import Dataset
from cruxflow.metrics import names
from cruxflow.metrics.batch import JudgedIndex, TopicArrays
from cruxflow.metrics.cuts import Cut, RunIndex
from cruxflow.metrics.judgments import TopicJudgments
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


def contexts(run: Mapping[str, list], judgments: Mapping[str, TopicJudgments],
             k: int | str) -> dict[str, list[str]]:
    """The context Z of every judged topic: the run's top-k passage ids (empty if absent), a
    run as :func:`cruxflow.data.io.read_run` orders it (the rule ``contexts`` writes these
    for the RAG stage)."""
    return {tid: [r.doc_id for r in run.get(tid, [])[:context_size(k, j)]]
            for tid, j in judgments.items()}


def check_run(run, dataset: Dataset, texts: Mapping[str, str] | None, path, *,
              strict_collection: bool = False) -> int:
    """Unknown topic ids in a run are errors, not silent zeros; returns how many run lines rank
    a passage outside the collection. ``texts=None`` checks the topics only (a collection that
    is not at hand cannot be checked against). ``run``: any form
    :func:`cruxflow.metrics.inputs.as_run` reads (each distinct passage is checked once).

    The released runs (``bm25.run``, ``dr_rankfirst.run``) retrieved from the whole CRUX corpus
    while a local copy holds the judged passages only: a passage outside the collection is an
    unjudged one (rated 0 for every question), counted here. ``strict_collection`` makes it an
    error instead. An id that is no passage id at all (where the collection's ids follow the
    ``<topic>:<doc>#<n>`` scheme and it does not) is an error naming the file and line.
    """
    from cruxflow.metrics.crux_eval_io import read_run_top
    from cruxflow.metrics.inputs import as_run

    lines = None
    if isinstance(run, Mapping) and isinstance(path, (str, Path)):
        try:    # the file's own line numbers, for the messages
            lines = read_run_top(path, None).lines
        except DataError:
            lines = None
    lines = lines if lines is not None else as_run(run)
    for qid in lines.topics:
        if qid not in dataset.topics:
            raise DataError(f"unknown topic {qid!r} (not in the dataset's topics)", path=path,
                            record=f"query {qid}", field="qid")
    if texts is None or not len(lines.passage):
        return 0
    scheme = _follows_scheme(next(iter(texts), ""))
    outside_ids = np.array([p not in texts for p in lines.passages], dtype=bool)
    outside = outside_ids[lines.passage]
    if not outside.any():
        return 0
    first = int(np.flatnonzero(outside)[np.argmin(lines.line[outside])])
    doc = lines.passages[lines.passage[first]]
    where = f"line {lines.line[first]}" if isinstance(path, (str, Path)) else \
        f"query {lines.topics[lines.topic[first]]}"
    if strict_collection:   # the file's first such line
        raise DataError(f"unknown passage {doc!r} (not in the passage collection; "
                        "--strict-collection)", path=path, record=where, field="docid")
    if scheme:
        bad = [i for i in np.flatnonzero(outside_ids).tolist()
               if not _follows_scheme(lines.passages[i])]
        if bad:
            at = np.flatnonzero(np.isin(lines.passage, bad))
            first = int(at[np.argmin(lines.line[at])])
            doc = lines.passages[lines.passage[first]]
            raise DataError(f"{doc!r} is not a passage id (<topic>:<doc>#<n>, as the "
                            "collection's)", path=path, record=f"line {lines.line[first]}"
                            if isinstance(path, (str, Path)) else
                            f"query {lines.topics[lines.topic[first]]}", field="docid")
    return int(outside.sum())


def _follows_scheme(pid: str) -> bool:
    from cruxflow.data.model import parse_passage_id

    try:
        parse_passage_id(pid)
    except ValueError:
        return False
    return True


class _Plan(NamedTuple):
    arrays: TopicArrays      # the judgments' arrays at the name's eta and alpha
    cut: tuple               # the key of its contexts among a run's cuts
    function: Callable       # its compute function (cruxflow.metrics.compute)
    topics: str              # its topic set


class Contexts:
    """A run's contexts at one cutoff as one measure sees them: the contexts (``rows``,
    ``size``, ``n``: :class:`~cruxflow.metrics.cuts.Cut`), the judgments' arrays at the
    name's eta and alpha (``arrays``), the passages' token counts (:meth:`tokens`,
    :meth:`oracle_tokens`), and :meth:`shared` for what several measures reuse."""

    def __init__(self, scorer: ContextScorer, cut: Cut, arrays: TopicArrays):
        self.scorer, self.cut, self.arrays = scorer, cut, arrays
        self.rows, self.size, self.n = cut.rows, cut.size, cut.n
        self.topic_ids = arrays.topic_ids

    def shared(self, what, make):
        key = (what, self.arrays.eta, self.arrays.alpha)
        if key not in self.cut.cache:
            self.cut.cache[key] = make()
        return self.cut.cache[key]

    def tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens of each context, whether a passage of it has no text or token count)."""
        return self.shared("tokens", lambda: self.scorer._context_tokens(self.cut))

    def oracle_tokens(self) -> np.ndarray:
        return self.scorer._oracle_tokens(self.arrays)


class ContextScorer:
    """Holds what every context of a dataset is scored against (built once per judgments).

    ``dataset``: a :class:`~cruxflow.data.model.Dataset` (its ratings and topics) or
    :class:`~cruxflow.metrics.inputs.Judgments`; ``judgments``: ``{topic: TopicJudgments}``
    made for ``options.eta`` (a workflow's judgments.jsonl; None: derived); ``texts``: the
    passages' texts (or ids where ``count_tokens`` looks counts up), counted by
    ``count_tokens`` for Den; ``options``: eta, alpha, the density weight, the relevance
    grades (:class:`~cruxflow.metrics.options.MetricOptions`).
    """

    def __init__(self, dataset, judgments: Mapping[str, TopicJudgments] | None = None,
                 texts: Mapping[str, str] | None = None,
                 count_tokens: TokenCounter | None = None,
                 options: MetricOptions = DEFAULTS):
        from cruxflow.metrics.inputs import Judgments

        self.options = options
        self.eta, self.alpha, self.weight = options.eta, options.alpha, options.density_weight
        given = dataset if isinstance(dataset, Judgments) else Judgments(
            ratings=dataset.ratings_by_topic(), topics=list(dataset.topics), source="dataset",
            checked=True)
        self.given = given
        self.index = JudgedIndex(given.ratings, given.relevance, given.qrels, given.topics)
        self.judged = judgments
        self.texts = texts if texts is not None else {}
        self.count_tokens = count_tokens
        self.columns = measure_columns(options)
        self._table_names: dict = {}        # k -> {column: its name at k}
        self._names: dict = {}              # a name as given -> parsed
        self._plans: dict[names.Name, _Plan] = {}
        self._arrays: dict[tuple, TopicArrays] = {}
        self._stacks: dict[tuple, TopicArrays] = {}    # stacked_arrays' by height
        self._runs: list[tuple[object, RunIndex]] = []     # the last runs seen, by object
        self._tokens: dict[str, int] = {}   # passage no topic judged -> tokens (-1: no text)
        # per k scored: topics whose context ranks a passage without text (Den undefined)
        self.den_undefined: dict[str, list[str]] = {}

    # --- what the names need -------------------------------------------------------------------

    def arrays(self, eta: int | None = None, alpha: float | None = None) -> TopicArrays:
        """The judgments' arrays at ``eta`` and ``alpha`` (the options' by default)."""
        eta = self.eta if eta is None else eta
        alpha = self.alpha if alpha is None else alpha
        key = (eta, alpha)
        if key not in self._arrays:
            judged = self.judged if eta == self.eta else None
            self._arrays[key] = TopicArrays(self.index, eta, alpha,
                                            self.options.relevance_grades, judged)
        return self._arrays[key]

    @property
    def topic_ids(self) -> list[str]:
        return self.index.topic_ids

    @property
    def topics(self) -> list[str]:
        """The evaluated topics (the default topic set at the options' eta)."""
        mask = self.judged_mask(self.arrays())
        return [t for t, m in zip(self.topic_ids, mask.tolist(), strict=True) if m]

    def judged_mask(self, arrays: TopicArrays) -> np.ndarray:
        """The default topic set: the topics with an answerable question at the arrays' eta;
        without ratings, those with a relevant line in the qrels given."""
        index = arrays.index
        return arrays.memo("judged topics", lambda: (
            arrays.n_kept > 0 if index.has_ratings
            else (index.given_grades > 0).any(axis=1) if index.given_grades is not None
            else arrays.ndeval_rel.any(axis=(1, 2))))

    def run_index(self, run) -> RunIndex:
        """``run`` (any form :func:`cruxflow.metrics.inputs.as_run` reads) against the
        judgments, made once per run object (a run is read once and not changed while it is
        scored)."""
        for obj, found in self._runs:
            if obj is run:
                return found
        from cruxflow.metrics.inputs import as_run

        found = RunIndex(self.index, as_run(run))
        self._runs = [(run, found), *self._runs[:3]]
        return found

    def forget_runs(self) -> None:
        """Drop the runs seen, with their contexts (a caller that scores runs one after
        another holds one run in memory, not the last four: a cut refers to its run, so the
        run's cuts are dropped too, or they would wait for the cycle collector)."""
        for _, index in self._runs:
            index.cuts.clear()
        self._runs = []

    def sizes(self, k: int | str, arrays: TopicArrays | None = None) -> np.ndarray:
        """The cutoff of every topic: |Z*| for ``oracle``, else k."""
        if k == "oracle":
            return (arrays or self.arrays()).oracle_size
        return np.full(len(self.topic_ids), context_size(k, None), dtype=np.int64)

    def _parse(self, name) -> names.Name:
        """``name`` parsed, once per name (every run's table asks for the same names)."""
        found = self._names.get(name)
        if found is None:
            found = self._names[name] = names.parse(name)
        return found

    def _plan(self, name: names.Name) -> _Plan:
        """What computing ``name`` needs beyond the run (arrays, cut, compute function), once
        per name; a name whose judgments are missing is an error each time it is asked for."""
        plan = self._plans.get(name)
        if plan is None:
            if name.cutoff is None:
                raise ValueError(f"{name}: give a cutoff ({name}@10, or {name}@oracle for "
                                 "k = |Z*|)")
            for kind in name.reads:
                if not self.given.has(kind):
                    raise DataError(f"{name} reads {kind}: the judgments "
                                    f"({self.given.source}) have none")
            opts = name.options(self.options)
            arrays = self.arrays(opts.eta, opts.alpha)
            cut = ("cut", name.cutoff, name["cut"], name["order"],
                   opts.eta if name.cutoff == "oracle" else None)
            plan = self._plans[name] = _Plan(arrays, cut, name.definition.function(),
                                             name["topics"])
        return plan

    def contexts(self, run, name: names.Name) -> Contexts:
        """The contexts ``name`` is computed on (its cutoff, cut and order; the arrays of its
        eta and alpha), made once per (run, cutoff, cut, order)."""
        plan = self._plan(name)
        index = self.run_index(run)
        cut = index.cuts.get(plan.cut)
        if cut is None:
            cut = index.cuts[plan.cut] = index.cut(self.sizes(name.cutoff, plan.arrays),
                                                   name["cut"], name["order"])
        return Contexts(self, cut, plan.arrays)

    def values(self, run, name) -> np.ndarray:
        """``name`` for every topic of the judgments (:attr:`topic_ids`), over the name's topic
        set: NaN outside it (and where undefined); ``topics='all'`` counts an undefined value
        0. A measure whose judgments are missing is an error naming what it reads."""
        name = self._parse(name)
        return self.values_on(self.contexts(run, name), name)

    def values_on(self, ctx: Contexts, name: names.Name) -> np.ndarray:
        """:meth:`values` of the parsed ``name`` on contexts ``ctx``: one run's, or several
        runs' stacked (:func:`cruxflow.metrics.per_query.many_rows`)."""
        raw = np.asarray(self._plan(name).function(ctx, name), dtype=float)
        return self._topic_set(raw, name, ctx)

    def _topic_set(self, raw: np.ndarray, name: names.Name, ctx: Contexts) -> np.ndarray:
        mask = self._mask(name, ctx)
        if name["topics"] == "all":
            raw = np.nan_to_num(raw, nan=0.0)
        return np.where(mask, raw, np.nan)

    def _mask(self, name: names.Name, ctx: Contexts) -> np.ndarray:
        topics = self._plan(name).topics
        if topics == "judged":
            return self.judged_mask(ctx.arrays)
        if topics == "run":
            return ctx.cut.in_run
        return self.universe(name, ctx.arrays)

    def covered(self, run, name) -> np.ndarray:
        """The topics of ``name``'s topic set (before undefined values are left out)."""
        name = self._parse(name)
        return self._mask(name, self.contexts(run, name))

    def universe(self, name: names.Name, arrays: TopicArrays) -> np.ndarray:
        """The topics of the judgments ``name`` reads (``topics='all'``)."""
        mask = np.zeros(len(arrays.topic_ids), dtype=bool)
        for kind in name.reads:
            if kind == names.RATINGS:
                mask |= arrays.index.n_questions > 0
            elif kind == names.RELEVANCE:
                mask |= arrays.relevance_topics
            elif kind == names.DIVERSITY:
                mask |= arrays.diversity_topics
        return mask

    def tied(self, run, name) -> np.ndarray:
        """Per topic: whether tied scores decide which passages fall inside ``name``'s
        context (the passage at place k and the one after it score the same)."""
        name = names.parse(name)
        if name["order"] == "file":
            return np.zeros(len(self.topic_ids), dtype=bool)
        ctx = self.contexts(run, name)
        return ctx.cut.tied

    def unknown_topics(self, run) -> list[str]:
        """The run's topics that the judgments do not hold."""
        return [t for t in self.run_index(run).lines.topics if t not in self.index.topic_index]

    # --- token counts: each passage's once ---------------------------------------------------

    def _count(self, pids: list[str]) -> np.ndarray:
        """Tokens of each passage (-1: no text), in one batch where the counter has one (the
        regex counter counts on bytes with numpy)."""
        texts = list(map(self.texts.get, pids))
        have = np.flatnonzero(np.fromiter(map(is_not, texts, repeat(None)), bool, len(texts)))
        if len(have) < len(texts):
            texts = [texts[i] for i in have.tolist()]
        out = np.full(len(pids), -1, dtype=np.int64)
        if texts:
            batch = getattr(self.count_tokens, "batch", None)
            out[have] = batch(texts) if batch is not None else list(map(self.count_tokens, texts))
        return out

    @cached_property
    def _judged_tokens(self) -> np.ndarray:
        """Tokens of every judged passage by its number (-1: no text), counted once per
        dataset, in one batch."""
        return self._count(list(self.index.number))

    def _context_tokens(self, cut: Cut) -> tuple[np.ndarray, np.ndarray]:
        """(tokens of each context, whether a passage of it has no text): per passage code of
        the run, from the judged passages' counts, or (a passage no topic judged) counted
        once when a context first holds it."""
        run = cut.run
        if run.tokens is None:
            # a passage no topic judged (number -1) reads the -2 appended at the end
            run.tokens = np.append(self._judged_tokens, -2)[run.number]
        inside = cut.code >= 0
        code = np.maximum(cut.code, 0)
        new = np.unique(code[inside & (run.tokens[code] == -2)])
        if new.size:
            pids = [run.lines.passages[c] for c in new.tolist()]
            known = self._tokens
            unknown = [p for p in dict.fromkeys(pids) if p not in known]
            known.update(zip(unknown, self._count(unknown).tolist(), strict=True))
            run.tokens[new] = [known[p] for p in pids]
        tokens = np.where(inside, run.tokens[code], 0)
        return np.maximum(tokens, 0).sum(axis=1), (tokens < 0).any(axis=1)

    def _oracle_counts(self, arrays: TopicArrays) -> np.ndarray:
        """Tokens of each passage of Z* (topics x places; -1: no text, 0 past Z*'s end)."""
        numbers = arrays.index.row_numbers(arrays.required_rows)
        return np.where(numbers >= 0, self._judged_tokens[np.maximum(numbers, 0)], 0)

    def _oracle_tokens(self, arrays: TopicArrays) -> np.ndarray:
        cached = arrays.__dict__.get("_oracle_tokens")
        if cached is None:
            cached = np.maximum(self._oracle_counts(arrays), 0).sum(axis=1)
            arrays.__dict__["_oracle_tokens"] = cached
        return cached

    def oracle_without_text(self, arrays: TopicArrays | None = None) -> list[str]:
        """The passages of Z* that have no text or token count."""
        arrays = arrays or self.arrays()
        rows = arrays.required_rows
        topic, place = np.nonzero(self._oracle_counts(arrays) < 0)
        return [self.index.pid(t, r) for t, r in zip(
            topic.tolist(), rows[topic, place].tolist(), strict=True)]

    # --- per topic, for the RAG stage's final-result metrics (cruxflow.rag.reports) ----------

    @cached_property
    def judgments(self) -> dict[str, TopicJudgments]:
        """The evaluated topics' judgments at the options' eta: the ones given, or those the
        arrays derive (Q, P*, Z* in selection order)."""
        topics = self.topics
        if self.judged is not None:
            return {t: self.judged[t] for t in topics}
        a = self.arrays()
        a.n_kept    # noqa: B018 - derives a.kept
        out = {}
        for t, tid in enumerate(self.topic_ids):
            if tid in set(topics):
                rows = a.required_rows[t]
                out[tid] = TopicJudgments(
                    tid, int(self.index.n_questions[t]), a.kept[t],
                    [p for r, p in enumerate(self.index.passages[t]) if self.index.rated[t, r]],
                    [self.index.pid(t, int(r)) for r in rows if r != a.none], self.eta)
        return out

    def rating_rows(self, tid: str, pids) -> list[list[int]]:
        """The ratings of ``pids`` for topic ``tid`` (0s for a passage it did not rate)."""
        m = (self.given.ratings or {}).get(tid, {})
        n = int(self.index.n_questions[self.index.topic_index[tid]])
        return [list(m.get(p, [0] * n)) for p in pids]

    @property
    def oracle_tokens(self) -> dict[str, int]:
        """Tokens of each topic's Z*."""
        return dict(zip(self.topic_ids, self._oracle_tokens(self.arrays()).tolist(),
                        strict=True))

    # --- the tables ---------------------------------------------------------------------------

    def tied_topics(self, run, ks) -> list[str]:
        """The evaluated topics whose top k, for some k in ``ks``, the tie policy decides."""
        mask = self.judged_mask(self.arrays())
        out = np.zeros(len(self.topic_ids), dtype=bool)
        for k in ks:
            out |= self.tied(run, names.qualified("Cov", k, self.options))
        return [t for t, m in zip(self.topic_ids, (out & mask).tolist(), strict=True) if m]

    def tie_line(self, run, ks) -> str | None:
        """The one warning of a door (None: no tie decides a context): how many topics'
        contexts the tie policy decides."""
        return tie_warning(self.tied_topics(run, ks), len(self.topics))

    def score(self, run, system: str, k: int | str) -> pd.DataFrame:
        """The per-query table's rows of size k: every column of :func:`measure_columns`
        (``names.table_columns``) at cutoff k, over the evaluated topics
        (:func:`cruxflow.metrics.per_query.many_rows` of one case)."""
        from cruxflow.metrics.per_query import many_rows

        return many_rows(self, [(run, system, k)])

    def score_many(self, cases) -> pd.DataFrame:
        """:meth:`score` of each ``(run, system, k)`` of ``cases``, as one frame, with one
        call of each measure for several runs' contexts
        (:func:`cruxflow.metrics.per_query.many_rows`)."""
        from cruxflow.metrics.per_query import many_rows

        return many_rows(self, cases)

    def topic_column(self, arrays: TopicArrays, keep: np.ndarray):
        """The evaluated topics' ids (``keep``) as pandas makes a column of them, once."""
        return arrays.memo("topic column", lambda: pd.DataFrame(
            {"topic": self.topic_array[keep]})["topic"].array)

    def columns_at(self, k) -> dict:
        """The table's columns as names at cutoff ``k`` (with ``Cov``: its contexts)."""
        columns = self._table_names.get(k)
        if columns is None:
            columns = self._table_names[k] = {
                column: names.parse(names.qualified(column, k, self.options))
                for column in [*self.columns, "Cov"]}
        return columns

    @cached_property
    def topic_array(self) -> np.ndarray:
        """:attr:`topic_ids` as an array."""
        return np.array(self.topic_ids, dtype=object)

    def stacked_arrays(self, arrays: TopicArrays, height: int) -> TopicArrays:
        """``arrays`` taken for a stack of ``height`` runs' contexts (every topic ``height``
        times; :meth:`TopicArrays.take`), made once per height (the last two kept)."""
        key = (arrays.eta, arrays.alpha, height)
        if key not in self._stacks:
            at = np.tile(np.arange(len(self.topic_ids)), height)
            taken = arrays.take(at)
            taken.__dict__["_oracle_tokens"] = self._oracle_tokens(arrays)[at]
            self._stacks = {**dict(list(self._stacks.items())[-1:]), key: taken}
        return self._stacks[key]

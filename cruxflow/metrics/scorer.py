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
the row of k = 10 is ``Cov@10``; docs/metrics.md lists every name's definition), over the
default topics: those with at least one answerable question; a judged topic the run lacks is
an empty context.

Runs and contexts are arrays for all topics at once: the judgments' arrays
(:mod:`cruxflow.metrics.judged`), a run's lines against them and its contexts
(:mod:`cruxflow.metrics.cuts`), the runs read by :mod:`cruxflow.data.runs`. No step works per
context in Python; the values are those of the paper's formulas and of trec_eval and ndeval
(the oracles of ``tests/``) at a cost linear in topics (``benchmarks/metrics.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from itertools import repeat
from operator import is_not
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.io import tie_warning
from cruxflow.data.runs import as_run
from cruxflow.metrics import names
from cruxflow.metrics.cuts import Contexts, Cut, RunIndex
from cruxflow.metrics.inputs import Judgments
from cruxflow.metrics.judged import JudgedIndex, RatingPairs, TopicArrays
from cruxflow.metrics.judgments import TopicJudgments
from cruxflow.metrics.options import DEFAULTS, MetricOptions
from cruxflow.metrics.tokens import TokenCounter

if TYPE_CHECKING:     # pandas is imported by the tables only (a door that prints means
    import pandas as pd  # from arrays, crux-eval, starts without it)


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


# the cutoff of a name without one (ir_measures' AP, nDCG): more lines than any run holds
WHOLE_LIST = 1 << 60


class _Plan(NamedTuple):
    arrays: TopicArrays      # the judgments' arrays at the name's eta and alpha
    cut: tuple               # the key of its contexts among a run's cuts
    function: Callable       # its compute function (cruxflow.metrics.compute)
    topics: str              # its topic set


class ContextScorer:
    """The engine: what every context of one set of judgments is scored against (built once
    per judgments), and every registered measure computed on a run's contexts.

    ``dataset``: a :class:`~cruxflow.data.model.Dataset` (its ratings and topics) or
    :class:`~cruxflow.metrics.inputs.Judgments`; ``judgments``: ``{topic: TopicJudgments}``
    made for ``options.eta`` (a workflow's judgments.jsonl; None: derived); ``texts``: the
    passages' texts, counted by ``count_tokens`` for Den, or ``tokens``: their token counts;
    ``options``: eta, alpha, the density weight, the relevance grades
    (:class:`~cruxflow.metrics.options.MetricOptions`). A passage with a count in ``tokens``
    is not counted from its text.
    """

    def __init__(self, dataset, judgments: Mapping[str, TopicJudgments] | None = None,
                 texts: Mapping[str, str] | None = None,
                 count_tokens: TokenCounter | None = None,
                 options: MetricOptions = DEFAULTS, *,
                 tokens: Mapping[str, int] | None = None):
        self.options = options
        self.eta, self.alpha, self.weight = options.eta, options.alpha, options.density_weight
        given = dataset if isinstance(dataset, Judgments) else Judgments(
            ratings=RatingPairs.from_pairs(dataset.ratings, dataset.topics),
            topics=list(dataset.topics), source="dataset", checked=True)
        self.given = given
        self.index = JudgedIndex(given.ratings, given.relevance, given.qrels, given.topics)
        self.judged = judgments
        self.texts = texts if texts is not None else {}
        self.token_counts = tokens
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
        """``run`` (any form :func:`cruxflow.data.runs.as_run` reads) against the judgments,
        made once per run object (a run is read once and not changed while it is scored)."""
        for obj, found in self._runs:
            if obj is run:
                return found
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

    def sizes(self, k: int | str | None, arrays: TopicArrays | None = None) -> np.ndarray:
        """The cutoff of every topic: |Z*| for ``oracle``, none (the whole list) for None,
        else k."""
        if k is None:
            return np.full(len(self.topic_ids), WHOLE_LIST, dtype=np.int64)
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
            if name.cutoff is None and not name.definition.cutoff_optional:
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
        return Contexts(cut, plan.arrays, self)

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
        if topics == "run":     # the run's topics that the judgments the name reads hold
            return ctx.cut.in_run & self.universe(name, ctx.arrays)
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

    def without_text(self, run, name) -> np.ndarray:
        """Per topic: whether ``name``'s context ranks a passage without text or token
        count."""
        return self.contexts(run, self._parse(name)).tokens()[1]

    def context_values(self, contexts, names_asked) -> dict[str, np.ndarray]:
        """The measures ``names_asked`` of given contexts: ``contexts`` lists ``(topic, passage
        ids in rank order)``, one per context, several per topic allowed (each scored as a
        run of its own); per name (keyed as asked), one value per context (NaN where
        undefined, outside the name's topics, or for a topic the judgments lack). A name's
        eta, alpha and density weight left at their defaults are this scorer's options'
        (as a table's columns are: :func:`cruxflow.metrics.names.qualified`)."""
        contexts = [(t, list(dict.fromkeys(pids))) for t, pids in contexts]
        parsed = {str(n): names.with_options(n, self.options) for n in names_asked}
        out = {str(n): np.full(len(contexts), np.nan) for n in names_asked}
        rounds: list[list[int]] = []
        seen: dict[str, int] = {}
        for i, (t, _) in enumerate(contexts):
            r = seen[t] = seen.get(t, -1) + 1
            if r == len(rounds):
                rounds.append([])
            rounds[r].append(i)
        index = self.index.topic_index
        for members in rounds:
            known = [i for i in members if contexts[i][0] in index]
            run = as_run({contexts[i][0]: {p: float(-r) for r, p in enumerate(contexts[i][1])}
                          for i in members})
            at = np.array([index[contexts[i][0]] for i in known], dtype=np.int64)
            for key, name in parsed.items():
                out[key][known] = self.values(run, name)[at]
        return out

    def unknown_topics(self, run) -> list[str]:
        """The run's topics that the judgments do not hold."""
        return [t for t in self.run_index(run).lines.topics if t not in self.index.topic_index]

    # --- token counts: each passage's once ---------------------------------------------------

    def _count(self, pids: list[str]) -> np.ndarray:
        """Tokens of each passage (-1: no text or count): its count where ``tokens`` has one,
        else its text counted, in one batch where the counter has one (the regex counter
        counts on bytes with numpy)."""
        out = np.full(len(pids), -1, dtype=np.int64)
        if self.token_counts is not None:
            get = self.token_counts.get
            out[:] = np.fromiter((int(get(p, -1)) for p in pids), np.int64, len(pids))
            if not self.texts or (out >= 0).all():
                return out
        todo = np.flatnonzero(out < 0)
        texts = list(map(self.texts.get, (pids[i] for i in todo.tolist())))
        have = np.flatnonzero(np.fromiter(map(is_not, texts, repeat(None)), bool, len(texts)))
        if len(have) < len(texts):
            texts = [texts[i] for i in have.tolist()]
        if texts:
            batch = getattr(self.count_tokens, "batch", None)
            out[todo[have]] = batch(texts) if batch is not None \
                else list(map(self.count_tokens, texts))
        return out

    @cached_property
    def _judged_tokens(self) -> np.ndarray:
        """Tokens of every judged passage by its number (-1: no text), counted once per
        dataset, in one batch."""
        return self._count(list(self.index.number))

    def context_tokens(self, cut: Cut) -> tuple[np.ndarray, np.ndarray]:
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

    def oracle_token_counts(self, arrays: TopicArrays) -> np.ndarray:
        """Tokens of each topic's Z* at the arrays' eta (made once per arrays)."""
        return arrays.memo("oracle tokens", lambda: np.maximum(
            self._oracle_counts(arrays), 0).sum(axis=1))

    def oracle_without_text(self, arrays: TopicArrays | None = None,
                            topics: np.ndarray | None = None) -> list[tuple[str, str]]:
        """``(topic, passage)`` of each passage of Z* (of the ``topics`` given as a mask, else
        of every topic) that has no text or token count."""
        arrays = arrays or self.arrays()
        rows = arrays.required_rows
        missing = self._oracle_counts(arrays) < 0
        if topics is not None:
            missing &= topics[:, None]
        topic, place = np.nonzero(missing)
        return [(self.topic_ids[t], self.index.pid(t, r)) for t, r in zip(
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
        chosen = set(topics)
        out = {}
        for t, tid in enumerate(self.topic_ids):
            if tid in chosen:
                rows = a.required_rows[t]
                out[tid] = TopicJudgments(
                    tid, int(self.index.n_questions[t]), a.kept[t],
                    [p for r, p in enumerate(self.index.passages[t]) if self.index.rated[t, r]],
                    [self.index.pid(t, int(r)) for r in rows if r != a.none], self.eta)
        return out

    def rating_rows(self, tid: str, pids) -> list[list[int]]:
        """The ratings of ``pids`` for topic ``tid`` (0s for a passage it did not rate)."""
        ix = self.index
        t = ix.topic_index[tid]
        n = int(ix.n_questions[t])
        rows = ix.rows_of(np.full(len(pids), t, dtype=np.int64), ix.numbers(list(pids)))
        rated = ix.rated[t, rows]
        return [ix.ratings[t, r, :n].tolist() if ok else [0] * n
                for r, ok in zip(rows.tolist(), rated.tolist(), strict=True)]

    @property
    def oracle_tokens(self) -> dict[str, int]:
        """Tokens of each topic's Z*."""
        return dict(zip(self.topic_ids, self.oracle_token_counts(self.arrays()).tolist(),
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
        import pandas as pd

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
            tokens = self.oracle_token_counts(arrays)[at]
            taken.memo("oracle tokens", lambda: tokens)
            self._stacks = {**dict(list(self._stacks.items())[-1:]), key: taken}
        return self._stacks[key]


# --- texts rated like passages: a generated report, a human summary ---------------------------

def score_rated_texts(texts, names_asked, judgments: Mapping[str, TopicJudgments],
                      ratings=None, *, tokens=None, passage_texts: Mapping[str, str] | None = None,
                      count_tokens: TokenCounter | None = None,
                      options: MetricOptions = DEFAULTS) -> dict[str, np.ndarray]:
    """The measures ``names_asked`` (e.g. ``Cov@1``, ``Den@1``) of texts rated like passages
    (the paper's Cov(y) and Den(y) of a final result y, Sec. 3.3), each text a context of one
    passage: itself, with its own ratings. ``texts``: ``(topic, ratings)`` per text;
    ``judgments``: each topic's Q and Z* (the texts change neither); ``ratings``: the
    passages' ratings Z* reads (any form :meth:`~cruxflow.metrics.judged.RatingPairs.of`
    takes; none: Z* is empty); ``tokens``: each text's token count (Den); ``passage_texts``
    and ``count_tokens``: Z*'s passages' texts and their counter. Returns, per name, one
    value per text (NaN where undefined or outside the name's topics).

    The texts are passages of the engine's judgments (so every measure is the registry's
    compute function), added under ids no passage has; the texts of one topic are scored
    as separate runs."""
    texts = list(texts)
    base = RatingPairs.of(ratings) if ratings is not None else None
    topic_ids = list(dict.fromkeys([*judgments, *(t for t, _ in texts)]))
    number = {t: i for i, t in enumerate(topic_ids)}
    ids = [f"\x1ftext\x1f{i}" for i in range(len(texts))]
    pairs_topic = [number[t] for t, _ in texts]
    values = [list(r) for _, r in texts]
    pids = list(ids)
    if base is not None:
        at = np.array([number.setdefault(t, len(number)) for t in base.topic_ids], dtype=np.int64)
        topic_ids = list(number)
        pairs_topic += at[base.topic].tolist()
        pids += base.pids
        starts = np.concatenate(([0], np.cumsum(base.lengths)))
        flat = base.flat.tolist()
        values += [flat[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(),
                                             strict=True)]
    pairs = RatingPairs._made(topic_ids, np.array(pairs_topic, dtype=np.int64), pids, values)
    counts = None
    if tokens is not None:
        counts = dict(zip(ids, (int(x) for x in tokens), strict=True))
    scorer = ContextScorer(Judgments(ratings=pairs, topics=topic_ids, source="texts",
                                     checked=True), dict(judgments), passage_texts,
                           count_tokens, options, tokens=counts)
    return scorer.context_values([(t, [ids[i]]) for i, (t, _) in enumerate(texts)],
                                 names_asked)

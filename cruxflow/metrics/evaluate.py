"""Score one retrieval run (TREC) or its contexts (JSONL) against a prepared dataset, as the
workflow's ``context_metrics`` rule does: the library behind ``cruxflow evaluate``
(see docs/evaluate.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cruxflow.data.contexts import read_contexts
from cruxflow.data.errors import DataError
from cruxflow.data.io import existing
from cruxflow.data.model import Dataset, load_records, passage_from_json
from cruxflow.data.names import ORACLE_K, PASSAGES
from cruxflow.metrics.judgments import load_judgments
from cruxflow.metrics.options import DEFAULTS, MetricOptions

if TYPE_CHECKING:
    import pandas as pd

K_ALL = "all"   # the whole ranked list of each topic, as given
RUN_DEFAULT_K: list[int | str] = [ORACLE_K, 10, 20]
CONTEXTS_DEFAULT_K: list[int | str] = [K_ALL]



@dataclass
class Evaluation:
    per_query: pd.DataFrame
    aggregate: pd.DataFrame
    info: dict = field(default_factory=dict)


def load_texts(dataset_dir, collection=None) -> tuple[Dataset, dict[str, str]]:
    """The dataset and the passage texts that contexts may name (its own, or ``collection``)."""
    if collection is None:
        dataset = Dataset.load(dataset_dir, with_passages=True)
        texts = {pid: p.contents for pid, p in dataset.passages.items()}
        source = Path(dataset_dir) / PASSAGES
    else:
        dataset = Dataset.load(dataset_dir, with_passages=False)
        source = existing(collection, "passage collection")
        if source.is_dir():
            source = existing(source / "passages.jsonl", "passage collection")
        texts = {pid: p.contents
                 for pid, p in load_records(source, passage_from_json, lambda p: p.id).items()}
    if not texts:
        raise DataError("no passages: the dataset has not been prepared that far", path=source)
    return dataset, texts


def evaluate_run(dataset_dir=None, *, run=None, contexts=None,
                 options: MetricOptions = DEFAULTS, ks: list[int | str] | None = None,
                 judgments=None, collection=None, name: str | None = None,
                 dataset: Dataset | None = None, texts: dict[str, str] | None = None,
                 allow_empty: bool = False, strict_collection: bool = False,
                 judge=None) -> Evaluation:
    """Score a TREC run or a contexts JSONL against a dataset, as rule context_metrics does.
    The dataset is a directory, or (``dataset`` and ``texts``) one already in memory;
    ``options`` (:class:`~cruxflow.metrics.options.MetricOptions`: eta, alpha, density
    weight, relevance grades, tokenizer) is the one way to set how it is scored. ``judge``:
    ratings files or folders (any layout, original and added ones together) in place of the
    dataset's own (:func:`with_ratings`).

    An input with no ranked list is an error unless ``allow_empty`` (every topic then scores
    as an empty context); ``judgments`` made with another eta are an error.
    """
    if (run is None) == (contexts is None):
        raise ValueError("give exactly one of run and contexts")
    return evaluate_runs(dataset_dir, runs=None if run is None else [run],
                         contexts=None if contexts is None else [contexts], options=options,
                         ks=ks, judgments=judgments, collection=collection,
                         names=[name], dataset=dataset, texts=texts, allow_empty=allow_empty,
                         strict_collection=strict_collection, judge=judge)[0]


def evaluate_runs(dataset_dir=None, *, runs=None, contexts=None,
                  options: MetricOptions = DEFAULTS, ks: list[int | str] | None = None,
                  judgments=None, collection=None, names=None,
                  dataset: Dataset | None = None, texts: dict[str, str] | None = None,
                  allow_empty: bool = False, strict_collection: bool = False,
                  judge=None) -> list[Evaluation]:
    """:func:`evaluate_run` for several runs (or contexts files) of one dataset, one
    :class:`Evaluation` each (``names``: their systems, None for the file's stem): the
    dataset, its judgments and the scorer, with the passages' token counts, are made once
    for all of them, not once per run."""
    if (runs is None) == (contexts is None):
        raise ValueError("give exactly one of runs and contexts")
    is_run = runs is not None
    sources = [existing(s, "run file" if is_run else "contexts file")
               for s in (runs if is_run else contexts)]
    names = list(names) if names is not None else [None] * len(sources)
    if dataset is None:
        dataset, texts = load_texts(dataset_dir, collection)
    read = None
    if judge:
        dataset, read = with_ratings(dataset, judge)
    scoring = _Scoring(dataset, texts or {}, options, judgments,
                       origin=None if dataset_dir is None else str(dataset_dir))
    results = []
    for source, name in zip(sources, names, strict=True):
        result = scoring.score(source, is_run, ks=ks, name=name, allow_empty=allow_empty,
                               strict_collection=strict_collection)
        if read is not None:
            result.info["ratings"] = read
        results.append(result)
    return results


def with_ratings(dataset: Dataset, judge) -> tuple[Dataset, dict]:
    """``dataset`` with the ratings of ``judge`` (files or folders read as one: original and
    added ones, :func:`~cruxflow.data.ingest.crux_common.read_ratings`) in place of its own,
    each list as long as its topic's questions; and the read's summary (its sources)."""
    import dataclasses

    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.data.ingest.crux_paper import attach_ratings

    paths = [existing(p, "judge ratings") for p in
             (judge if isinstance(judge, list | tuple) else [judge])]
    read = read_ratings(paths, n_questions={t: len(x.questions)
                                            for t, x in dataset.topics.items()})
    ratings, _ = attach_ratings(read, dataset.topics, {})
    return dataclasses.replace(dataset, ratings=ratings, expected={}), read.summary()


class _Scoring:
    """The judgments and the scorer of one dataset, made when the first input has been read
    and checked, and shared by every input scored after it."""

    def __init__(self, dataset: Dataset, texts: dict[str, str], opts: MetricOptions,
                 judgments, origin):
        self.dataset, self.texts, self.opts = dataset, texts, opts
        self.judgments, self.origin = judgments, origin
        self.scorer = None

    def _scorer(self):
        from cruxflow.metrics.scorer import ContextScorer
        from cruxflow.metrics.tokens import make_token_counter

        if self.scorer is not None:
            return self.scorer
        dataset, opts, judgments = self.dataset, self.opts, self.judgments
        # without a judgments file the scorer derives Q and Z* itself, for every topic at once
        # (the same as judgments.derive topic by topic: tests/test_metrics_fast.py)
        judged = None if judgments is None else load_judgments(judgments, dataset, opts.eta)
        scorer = ContextScorer(dataset, judged, self.texts,
                               make_token_counter(opts.tokenizer), opts)
        if not scorer.topics:
            # the judgments file, else the dataset (a dataset given in memory has no path)
            why = ("the dataset has no ratings: ingest it with ratings (cruxflow ingest "
                   "--judge) or let the workflow rate it"
                   if not dataset.ratings and judgments is None else
                   "no passage is rated that high")
            raise DataError(f"no topic has an answerable question at eta={opts.eta}: "
                            f"nothing to score ({why})", path=judgments or self.origin)
        self.scorer = scorer
        return scorer

    def score(self, source: Path, is_run: bool, *, ks, name, allow_empty: bool = False,
              strict_collection: bool = False) -> Evaluation:
        # imported here: pandas and ir_measures would slow down every other subcommand's start
        import numpy as np

        from cruxflow.data.runs import as_run, check_run, read_run_file
        from cruxflow.metrics.per_query import aggregate

        dataset, texts, opts = self.dataset, self.texts, self.opts
        if is_run:    # by column, a block of lines at a time (no object per line)
            ranking = read_run_file(source).lines
        else:
            ranking = as_run(read_contexts(source, topics=dataset.topics, passages=texts))
        if not len(ranking.topic) and not allow_empty:
            raise DataError("no ranked list in the file (every topic would score 0); pass "
                            "--allow-empty to score it anyway", path=source)
        outside = check_run(ranking, dataset.topics, texts, source,
                            strict_collection=strict_collection)
        scorer = self._scorer()
        scorer.forget_runs()
        scorer.den_undefined = {}
        evaluated = scorer.topics
        scored = set(evaluated)
        system = name or source.stem
        ks = ks or (RUN_DEFAULT_K if is_run else CONTEXTS_DEFAULT_K)
        lengths = dict(zip(ranking.topics, np.bincount(ranking.topic, minlength=len(
            ranking.topics)).tolist(), strict=True))
        # a cut at the longest list keeps every list whole
        longest = max((lengths.get(t, 0) for t in evaluated), default=0)
        cutoffs = [max(longest, 1) if k == K_ALL else k for k in ks]
        per_query = scorer.score_many([(ranking, system, k) for k in cutoffs])
        if K_ALL in ks:     # its rows named as asked (each k's rows are one block)
            per_query.loc[np.repeat([k == K_ALL for k in ks], len(per_query) // len(ks)),
                          "k"] = K_ALL
        tie_line = scorer.tie_line(ranking, [k for k in ks if k != K_ALL]) if is_run else None
        info = {
            "dataset": self.origin, "input": str(source), "system": system, "eta": opts.eta,
            "alpha": opts.alpha, "density_weight": opts.density_weight,
            "tokenizer": opts.tokenizer or "regex", "relevance_grades": opts.relevance_grades,
            "judgments": str(self.judgments) if self.judgments is not None else "derived",
            "k": [str(k) for k in ks],
            "topics_evaluated": len(evaluated),
            "topics_not_evaluated": [t for t in dataset.topics if t not in scored],
            "missing_in_run": [t for t in evaluated if t not in lengths],
            # passages outside the collection: unjudged; Den undefined where one is in one
            "run_lines_outside_collection": outside,
            "den_undefined_no_text": {k: v for k, v in scorer.den_undefined.items() if v},
            "warnings": [tie_line] if tie_line else [],
        }
        return Evaluation(per_query, aggregate(per_query), info)


# --- the CRUX release: its files, the authors' script and the workflow's scorer ---------------

def evaluation_notes(info) -> list[str]:
    """What a scoring left out or could not do, one line each, from an evaluation's ``info``
    (or :func:`cruxflow.evaluate`'s ``attrs``, which carry the same keys): ``cruxflow
    evaluate`` prints them under its table, :func:`cruxflow.evaluate` warns with them."""
    out = []
    for key, what in (("missing_in_run", "judged topics not in the input, scored as empty "
                       "contexts"),
                      ("topics_not_evaluated", "topics without an answerable question, "
                       "not evaluated")):
        ids = info.get(key) or []
        if ids:
            out.append(f"{len(ids)} {what}: {_listed(ids)}")
    if info.get("run_lines_outside_collection"):
        out.append(f"warning: {info['run_lines_outside_collection']} run lines rank a passage "
                   "outside the collection: scored as unjudged (rated 0); --strict-collection "
                   "refuses them")
    for k, ids in (info.get("den_undefined_no_text") or {}).items():
        what = f"{k} undefined" if "@" in str(k) else f"Den undefined at k={k}"
        out.append(f"warning: {what} for {len(ids)} topics whose context ranks a passage "
                   f"without text: {_listed(ids)}")
    return out


def _listed(ids: list[str]) -> str:
    return ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")


def release_files(crux_root, eta: int = DEFAULTS.eta) -> tuple[Path, Path]:
    """The diversity qrels and judge folder of a release subset (``crux-mds-duc04``): the
    qrels of threshold ``eta`` (``div_qrels-tau3.txt``) or the folder's only qrels file."""
    root = existing(crux_root, "CRUX release folder")
    qrels_dir, judge = root / "qrels", root / "judge"
    candidates = sorted(f for f in qrels_dir.glob("*") if f.is_file()) \
        if qrels_dir.is_dir() else []
    by_tau = [f for f in candidates if f.name == f"div_qrels-tau{eta}.txt"]
    chosen = by_tau or (candidates if len(candidates) == 1 else [])
    if not chosen:
        raise DataError(f"no qrels/div_qrels-tau{eta}.txt (nor a single qrels file) in the "
                        "release folder", path=root)
    if not judge.exists():
        raise DataError("no judge/ folder in the release folder", path=root)
    return chosen[0], judge


def evaluate_release(*, run, crux_root=None, qrel=None, judge=None, dataset_dir=None,
                     collection=None, filter_by_oracle: bool = False,
                     options: MetricOptions = DEFAULTS, ks: list[int | str] | None = None,
                     name: str | None = None, strict_collection: bool = False
                     ) -> tuple[Evaluation | None, object]:
    """One run scored both ways: the authors' script (:mod:`cruxflow.metrics.crux_eval`) on
    the release's qrels and judge ratings, and the workflow's scorer on the dataset they make
    (read in memory from ``crux_root``, or ``dataset_dir``) when its passage texts are known.
    Returns (the workflow's evaluation or None, the script's result)."""
    return evaluate_releases(runs=[run], crux_root=crux_root, qrel=qrel, judge=judge,
                             dataset_dir=dataset_dir, collection=collection,
                             filter_by_oracle=filter_by_oracle, options=options, ks=ks,
                             names=[name], strict_collection=strict_collection)[0]


def evaluate_releases(*, runs, crux_root=None, qrel=None, judge=None, dataset_dir=None,
                      collection=None, filter_by_oracle: bool = False,
                      options: MetricOptions = DEFAULTS, ks: list[int | str] | None = None,
                      names=None, strict_collection: bool = False
                      ) -> list[tuple[Evaluation | None, object]]:
    """:func:`evaluate_release` for several runs, one pair per run: the release's qrels and
    ratings read once for the authors' script's measures of every run, the dataset they make
    read once for the workflow's scorer (and the scorer made once)."""
    from cruxflow.data.ingest import IngestOptions
    from cruxflow.data.ingest.crux import read_crux
    from cruxflow.metrics.crux_eval import crux_eval_runs

    given = judge
    if crux_root is not None:
        default_qrel, default_judge = release_files(crux_root, options.eta)
        qrel, judge = qrel or default_qrel, judge or default_judge
    if qrel is None or judge is None:
        raise ValueError("give crux_root, or both qrel and judge")
    judges = [existing(p, "judge ratings")
              for p in (judge if isinstance(judge, list | tuple) else [judge])]
    runs = [existing(run, "run file") for run in runs]
    authors = crux_eval_runs(runs, existing(qrel, "qrels file"), judges,
                             filter_by_oracle=filter_by_oracle, eta=options.eta,
                             alpha=options.alpha)
    evaluations: list[Evaluation | None] = [None] * len(runs)
    kw = {"runs": runs, "options": options, "ks": ks, "names": names,
          "strict_collection": strict_collection}
    if dataset_dir is not None:
        evaluations = evaluate_runs(dataset_dir, collection=collection, **kw)
    elif crux_root is not None:
        corpus = None if collection is None else str(collection)
        # the ratings the authors' script read (--judge's, in place of the folder's judge/),
        # for the workflow's scorer too
        dataset, report = read_crux(crux_root, IngestOptions(
            collection=corpus, judge=[str(p) for p in judges] if given else []))
        texts = {pid: p.contents for pid, p in dataset.passages.items()}
        if texts:
            evaluations = evaluate_runs(crux_root, dataset=dataset, texts=texts, **kw)
            for evaluation in evaluations:
                evaluation.info["dataset"] = str(crux_root)
                evaluation.info["ratings"] = report.counts.get("judge")
    return list(zip(evaluations, authors, strict=True))

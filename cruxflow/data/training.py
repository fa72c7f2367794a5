"""A dataset's topics as training data for dense retrievers: the passages of a run sorted into
positives and negatives by their coverage, as the CoveR authors made SCOPE (Ju, Yang,
Adriaanse, Verberne, Yates, *Search for Coverage*, arXiv 2605.28522), written in Tevatron's
format (``cruxflow export --format tevatron``; docs/training-data.md).

The rules are those of the authors' script, DylanJoo/CoveR
``src/multi-view-data-curation/sample-from-coverage.py`` (commit 334d3ed; line numbers below
are that file's), read with the loaders of DylanJoo/crux ``crux/tools/generic/ir_utils.py``
(commit 0007909) that it imports:

* a passage's coverage ``c`` is the share of its topic's answerable questions (those some rated
  passage of the topic answers at rating >= tau, Eq. 2) that it answers itself (lines 30, 37-38);
  a topic without an answerable question gives every passage 0, an unrated passage is 0. It is
  computed by the metrics engine: ``Cov(rel=tau)@1`` of the one-passage context;
* a topic's passages are the run's lines of rank <= 1000, in file order (the loader's
  ``topk=1000`` and dict order); topics in the order they first appear (line 26);
* of the first ``positive_depth`` (20) passages (line 40), each goes to one bucket, the first
  it reaches from the top (lines 41-46): ``high`` c >= 0.75, ``half`` 0.5 <= c < 0.75,
  ``quarter`` 0.25 <= c < 0.5, ``low`` c < 0.25; a passage with c == 0 is in ``low`` and in
  ``zero`` too;
* the deep negatives are the passages at 0-based positions > ``negative_depth`` (50), i.e. from
  rank 52 on (lines 48-49), while the plain split's negatives start at position 50, rank 51
  (line 57);
* the splits (lines 51-125): ``pos_20.neg_51`` (the first 20 against every passage from
  position 50), ``pos_20.neg_51.filtered`` (the same without the top's zero-coverage passages;
  a topic left with none is skipped), and seven coverage splits ``pos_P.neg_N`` whose
  positives and negatives are bucket unions (:data:`SIDES`, lines 88-108), the negatives
  padded with the deep ones by the slice ``deep[:negatives - len(negatives_so_far)]`` (line
  115: up to 16; past 16 Python's negative slice end keeps all but the last few deep ones, and
  that is kept too); a topic without a positive gets no row of the split (line 117);
* every row is ``{query_id, query_text, positive_document_ids, negative_document_ids, answer:
  null, source}`` (lines 53-60, 118-125); the corpus is ``{docid, title, text}`` (what
  Tevatron's ``TrainDataset`` reads by docid).

What differs, on purpose: the authors' ``list(set(...))`` (lines 111-112) leaves a row's order
to Python's string hashing, so it changes from one process to the next; the rows here keep the
run's order (the same sets). The split names carry the depths asked for (``pos_20.neg_51`` is
``pos_{positive_depth}.neg_{negative_depth + 1}``). ``source`` is ``<name>`` on the plain
split and ``<name>.tau:<tau>`` on the others, where the authors wrote the corpus
(``clueweb22-B``) and ``crux-researchy.tau:4.clueweb22-B``. A run naming a passage twice for a
topic is refused (the authors' loader keeps its first place and last score).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cruxflow.data.errors import DataError
from cruxflow.data.io import write_jsonl
from cruxflow.data.limits import check_count
from cruxflow.data.model import Dataset
from cruxflow.data.outputs import atomic_write
from cruxflow.data.runs import check_run, read_run_file
from cruxflow.metrics.options import MetricOptions, check_eta
from cruxflow.metrics.scorer import ContextScorer

FORMAT = "tevatron"
CORPUS_FILE = "corpus.jsonl"

# The buckets of a top passage's coverage c, from the top (the script's lines 41-46): the
# first lower edge c reaches; c == 0 is in "low" and in "zero" as well.
EDGES = (("high", 0.75), ("half", 0.5), ("quarter", 0.25), ("low", 0.0))
ZERO = "zero"
# What each side of a coverage split takes (lines 88-108): the positives' names and the
# negatives' names mean different unions ("half" negatives are everything under 0.75).
SIDES = {
    "positive": {"high": ("high",), "half": ("half",), "low": ("low",), "zero": (ZERO,)},
    "negative": {"zero": (ZERO,), "low": ("low",), "quarter": ("quarter", "low"),
                 "half": ("half", "quarter", "low"), "high": ("high",)},
}
# The coverage splits, in the script's order (lines 75-83).
COVERAGE_SPLITS = (("high", "zero"), ("high", "low"), ("high", "quarter"), ("high", "half"),
                   ("half", "zero"), ("low", "zero"), ("zero", "high"))


@dataclass(frozen=True)
class TevatronOptions:
    """The authors' constants, as options: ``eta`` their tau (``--tau 4``), the positives
    from the first ``positive_depth`` passages, the deep negatives after position
    ``negative_depth``, rows padded to ``negatives``, the run cut at rank ``run_depth``
    (their loader's default)."""

    eta: int = 4
    positive_depth: int = 20
    negative_depth: int = 50
    negatives: int = 16
    run_depth: int = 1000

    def __post_init__(self):
        check_eta(self.eta)
        check_count("positive_depth", self.positive_depth, "positive_depth")
        check_count("negative_depth", self.negative_depth, "negative_depth")
        check_count("negatives", self.negatives, "negatives")
        check_count("depth", self.run_depth, "run_depth")

    @property
    def plain_split(self) -> str:
        return f"pos_{self.positive_depth}.neg_{self.negative_depth + 1}"

    @property
    def split_names(self) -> list[str]:
        return [self.plain_split, f"{self.plain_split}.filtered",
                *(f"pos_{p}.neg_{n}" for p, n in COVERAGE_SPLITS)]


@dataclass
class TrainingData:
    """The rows of every split (by name, in :attr:`TevatronOptions.split_names` order; a split
    no topic has a row of is empty), the corpus rows of every passage they name, and what
    could not be had: the passages named without a text in the dataset, and where the run's
    rank column is not a rank. ``name``, ``run`` and ``options``: what made them (the card)."""

    splits: dict[str, list[dict]]
    corpus: list[dict]
    name: str
    run: str
    options: TevatronOptions
    without_text: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def bucket(c: float) -> str:
    """The bucket of a coverage value (its first lower edge from the top)."""
    return next(name for name, edge in EDGES if c >= edge)


def passage_coverage(dataset: Dataset, pairs: list[tuple[str, str]], eta: int) -> np.ndarray:
    """The coverage of each ``(topic, passage)`` alone: the engine's ``Cov(rel=eta)@1`` of the
    one-passage context, 0 where the topic has no answerable question (undefined there)."""
    if not pairs:
        return np.zeros(0)
    name = f"Cov(rel={eta})@1"
    scorer = ContextScorer(dataset, options=MetricOptions(eta=eta))
    values = scorer.context_values([(t, [pid]) for t, pid in pairs], [name])[name]
    return np.nan_to_num(values, nan=0.0)


def _row(topic_id: str, query: str, positives: list[str], negatives: list[str],
         source: str) -> dict:
    return {"query_id": topic_id, "query_text": query, "positive_document_ids": positives,
            "negative_document_ids": negatives, "answer": None, "source": source}


def topic_rows(topic_id: str, query: str, ranked: list[str], coverage: list[float],
               options: TevatronOptions, name: str) -> dict[str, dict]:
    """One topic's row of each split it has one in: ``ranked`` its passages in run order,
    ``coverage`` that of the first ``positive_depth`` of them."""
    top = ranked[:options.positive_depth]
    members: dict[str, list[str]] = {b: [] for b, _ in EDGES}
    members[ZERO] = []
    for pid, c in zip(top, coverage, strict=True):
        members[bucket(c)].append(pid)
        if c == 0:
            members[ZERO].append(pid)
    deep = ranked[options.negative_depth + 1:]
    plain_negatives = ranked[options.negative_depth:]
    tagged = f"{name}.tau:{options.eta}"
    rows = {options.plain_split: _row(topic_id, query, top, plain_negatives, name)}
    zero = set(members[ZERO])
    kept = [pid for pid in top if pid not in zero]
    if kept:
        rows[f"{options.plain_split}.filtered"] = _row(topic_id, query, kept, plain_negatives,
                                                       tagged)
    for pos, neg in COVERAGE_SPLITS:
        positives = _union(top, members, SIDES["positive"][pos])
        if not positives:
            continue
        negatives = _union(top, members, SIDES["negative"][neg])
        # the script's padding, its slice as written: up to `negatives`; past it, a negative
        # slice end (all but the last len(negatives) - options.negatives deep passages)
        negatives = negatives + deep[:options.negatives - len(negatives)]
        rows[f"pos_{pos}.neg_{neg}"] = _row(topic_id, query, positives, negatives, tagged)
    return rows


def _union(top: list[str], members: Mapping[str, list[str]], buckets: tuple[str, ...]):
    """The passages of ``buckets``, in run order."""
    chosen = {pid for b in buckets for pid in members[b]}
    return [pid for pid in top if pid in chosen]


def training_data(dataset: Dataset, run_path, options: TevatronOptions = TevatronOptions(), *,
                  name: str, strict_collection: bool = False) -> TrainingData:
    """The splits of ``dataset`` (rated) for the run at ``run_path`` (a TREC run file) and
    the corpus they name; ``name`` goes into each row's ``source``. A run topic the dataset
    lacks is an error; a passage outside the dataset's collection is unrated (coverage 0) and
    has no corpus row (``without_text``), or with ``strict_collection`` an error."""
    run = read_run_file(run_path, options.run_depth)
    texts = dataset.passages
    check_run(run.lines, dataset.topics, texts, run_path, strict_collection=strict_collection)
    notes = []
    if run.not_a_rank is not None:
        notes.append(f"{Path(run_path).name}: {run.not_a_rank.line(options.run_depth)}")
    lines = run.lines      # by column: each topic's lines together, in file order
    starts = lines.starts()
    bounds = [*starts.tolist(), len(lines.topic)]
    every_id = np.asarray(lines.passages, dtype=object)[lines.passage]
    ids = every_id.tolist()
    ranked = {t: ids[bounds[i]:bounds[i + 1]] for i, t in enumerate(lines.topics)}
    for t in ranked:
        if not dataset.topics[t].query:
            raise DataError("has no report request (query) to train with", path=run_path,
                            record=f"query {t}", field="qid")
    pairs = [(t, pid) for t, pids in ranked.items() for pid in pids[:options.positive_depth]]
    coverage = passage_coverage(dataset, pairs, options.eta).tolist()
    splits: dict[str, list[dict]] = {s: [] for s in options.split_names}
    at = 0
    for t, pids in ranked.items():
        n = min(len(pids), options.positive_depth)
        rows = topic_rows(t, dataset.topics[t].query, pids, coverage[at:at + n], options, name)
        at += n
        for split, row in rows.items():
            splits[split].append(row)
    # the passages the rows name: each topic's first positive_depth (the plain split's
    # positives) and those from position negative_depth on (its negatives, the deep ones
    # among them), in that order, each once
    place = np.arange(len(lines.topic)) - np.repeat(starts, np.diff(bounds))
    named = list(dict.fromkeys(every_id[(place < options.positive_depth)
                                        | (place >= options.negative_depth)].tolist()))
    corpus = [{"docid": pid, "title": "", "text": texts[pid].contents}
              for pid in named if pid in texts]
    without = [pid for pid in named if pid not in texts]
    return TrainingData(splits, corpus, name, Path(run_path).name, options, without, notes)


# The rows' and the corpus' features, declared in the card so that every split loads with one
# schema (a split whose negatives are all empty would otherwise be read as a list of nulls).
ROW_FEATURES = [{"name": "query_id", "dtype": "string"}, {"name": "query_text", "dtype": "string"},
                {"name": "positive_document_ids", "list": "string"},
                {"name": "negative_document_ids", "list": "string"},
                {"name": "answer", "dtype": "string"}, {"name": "source", "dtype": "string"}]
CORPUS_FEATURES = [{"name": key, "dtype": "string"} for key in ("docid", "title", "text")]
CARD_FILE = "README.md"


def dataset_card(data: TrainingData) -> str:
    """The folder's ``README.md``: a Hugging Face dataset card whose YAML names every split's
    file and the features (``datasets.load_dataset(folder)`` reads them all, the corpus as
    config ``corpus``), and says what made them."""
    import yaml

    written = [s for s, rows in data.splits.items() if rows]
    meta = {"configs": [
        {"config_name": "default", "data_files": [{"split": s, "path": f"{s}.jsonl"}
                                                  for s in written]},
        {"config_name": "corpus", "data_files": [{"split": "train", "path": CORPUS_FILE}]}],
        "dataset_info": [{"config_name": "default", "features": ROW_FEATURES},
                         {"config_name": "corpus", "features": CORPUS_FEATURES}]}
    o = data.options
    lines = [f"# {data.name}: coverage training data", "",
             f"Written by `cruxflow export --format {FORMAT}` from the dataset `{data.name}` and "
             f"the run `{data.run}`, with the CoveR authors' splits (sample-from-coverage.py): "
             f"tau (eta) {o.eta}, positives from each topic's first {o.positive_depth} "
             f"passages, deep negatives after position {o.negative_depth}, rows padded to "
             f"{o.negatives} negatives.", "", "| split | rows |", "| --- | --- |",
             *(f"| `{s}` | {len(data.splits[s])} |" for s in written),
             f"| corpus (`{CORPUS_FILE}`) | {len(data.corpus)} |", ""]
    empty = [s for s, rows in data.splits.items() if not rows]
    if empty:
        lines += [f"No topic has a row of {', '.join(f'`{s}`' for s in empty)}: not written.",
                  ""]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + "\n".join(lines)


def write_training_data(data: TrainingData, directory) -> dict[Path, int]:
    """Each split with a row as ``<split>.jsonl``, the corpus as ``corpus.jsonl`` and the
    card as ``README.md`` under ``directory``, each file written atomically; the rows each
    data file holds. A file of a split left empty, from an earlier export, is refused (it
    would be read as this one's)."""
    out = Path(directory)
    for split, rows in data.splits.items():
        if not rows and (out / f"{split}.jsonl").exists():
            raise DataError("holds no row in this export, but the folder has its file from an "
                            "earlier one: remove it, or write to another --output",
                            path=out / f"{split}.jsonl")
    written = {}
    for split, rows in data.splits.items():
        if rows:
            written[out / f"{split}.jsonl"] = write_jsonl(out / f"{split}.jsonl", rows)
    written[out / CORPUS_FILE] = write_jsonl(out / CORPUS_FILE, data.corpus)
    with atomic_write(out / CARD_FILE) as f:
        f.write(dataset_card(data))
    return written

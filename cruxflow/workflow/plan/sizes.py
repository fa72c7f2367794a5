"""Published sizes of the paper's corpora, so that ``cruxflow plan`` can size a run before the
data are on disk (docs/plan.md, "Before the data exist").

A dataset whose input is missing is planned from a small stand-in: ``SAMPLE_TOPICS`` topics
with the published number of documents per topic, each document of the published mean length,
and summaries of the published mean length, written in plain English filler (so that a token
counter sees prose). The stand-in is planned by the same code as real data, and every count is
then scaled to the published number of topics. Each figure below names where it was printed.

Multi-News (Fabbri et al., 2019, "Multi-News: a Large-Scale Multi-Document Summarization Dataset
and Abstractive Hierarchical Model", ACL):

* splits: 44,972 train, 5,622 validation, 5,622 test clusters (the paper's Sec. 3; the same
  counts on the Hugging Face and TensorFlow Datasets cards of ``multi_news``);
* 2,103.49 words of source documents and 263.66 words of summary per cluster (Table 3);
* sources per cluster (Table 2, counts of clusters with 2, 3, ..., 10 sources: 23,894, 12,707,
  5,022, 1,873, 763, 382, 209, 89, 33), i.e. 2.79 documents per cluster on average, so
  2,103.49 / 2.79 = 754 words per document.

DUC 2004 task 2 (Over and Yen, 2004, "An introduction to DUC-2004", NIST): 50 clusters of 10
documents each, model summaries of at most 665 bytes. Words: 4,636.24 per cluster of documents
and 109.58 per summary (Fabbri et al. 2019, Table 3, row DUC03+04), i.e. 464 words per document.

For comparison, what the CRUX authors kept (Ju et al. 2025, Table 4): 50 DUC topics, 4,986
Multi-News test and 39,781 train topics, 565,015 passages in all.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from cruxflow.data.errors import ConfigError
from cruxflow.data.model import Dataset, Document, Topic

SAMPLE_TOPICS = 60

MULTINEWS_SOURCES = {2: 23894, 3: 12707, 4: 5022, 5: 1873, 6: 763, 7: 382, 8: 209, 9: 89,
                     10: 33}
MULTINEWS_CLUSTER_WORDS = 2103.49
MULTINEWS_SUMMARY_WORDS = 263.66
MULTINEWS_SPLITS = {"train": 44972, "validation": 5622, "val": 5622, "test": 5622}
MULTINEWS_SOURCE = ("Fabbri et al. 2019 (Multi-News, ACL): split sizes (Sec. 3), words per "
                    "cluster and summary (Table 3), sources per cluster (Table 2)")
DUC_SOURCE = ("Over and Yen 2004 (DUC 2004 task 2: 50 clusters x 10 documents); words per "
              "cluster and summary from Fabbri et al. 2019, Table 3 (DUC03+04)")


@dataclass(frozen=True)
class PublishedSize:
    """A corpus's size as published: topics, documents per topic (a frequency table), mean words
    per document and per summary, and where these numbers come from."""

    name: str
    topics: int
    sources: dict[int, int]        # documents per topic -> number of topics
    document_words: float
    summary_words: float
    source: str

    @property
    def documents_per_topic(self) -> float:
        return (sum(n * c for n, c in self.sources.items()) / sum(self.sources.values()))

    def describe(self, topics: int) -> str:
        return (f"{self.name}: {topics:,} topics x {self.documents_per_topic:.2f} documents of "
                f"{self.document_words:.0f} words, summaries of {self.summary_words:.0f} words "
                f"({self.source})")


def _multinews(split: str) -> PublishedSize:
    per_doc = MULTINEWS_CLUSTER_WORDS / PublishedSize("", 1, MULTINEWS_SOURCES, 0, 0,
                                                      "").documents_per_topic
    return PublishedSize(f"Multi-News {split}", MULTINEWS_SPLITS[split], MULTINEWS_SOURCES,
                         per_doc, MULTINEWS_SUMMARY_WORDS, MULTINEWS_SOURCE)


DUC2004 = PublishedSize("DUC 2004", 50, {10: 50}, 4636.24 / 10, 109.58, DUC_SOURCE)


def published_size(dataset: dict) -> PublishedSize | None:
    """The published size of a dataset entry of the config, from its format and (Multi-News)
    the split its input path names; ``None`` when no size is known."""
    if dataset["format"] == "duc2004":
        return DUC2004
    if dataset["format"] == "multinews":
        name = Path(dataset["input"]).name.lower()
        for split in ("train", "validation", "val", "test"):
            if split in name:
                return _multinews(split)
    return None


# Plain prose to fill the stand-in texts (written for this purpose; any English would do).
FILLER = ("Officials said on Monday that the river had risen overnight after days of heavy rain, "
          "and that crews were working to reinforce the levee near the old mill. Residents of "
          "the low streets were told to leave before dark, while the county opened two shelters "
          "at local schools. The governor, who toured the area by helicopter, promised state aid "
          "and asked for patience as roads stayed closed.").split()


def _words(n: int, offset: int) -> str:
    return " ".join(itertools.islice(itertools.cycle(FILLER), offset % len(FILLER),
                                     offset % len(FILLER) + max(1, round(n))))


def stand_in(size: PublishedSize, prefix: str, n_topics: int) -> Dataset:
    """``n_topics`` topics shaped like ``size``: their document counts drawn in proportion to
    the published frequencies (largest remainder, in a fixed order), every document and summary
    of the published mean length."""
    total = sum(size.sources.values())
    shares = {k: n_topics * c / total for k, c in size.sources.items()}
    counts = {k: int(v) for k, v in shares.items()}
    for k in sorted(shares, key=lambda k: shares[k] - counts[k], reverse=True):
        if sum(counts.values()) >= n_topics:
            break
        counts[k] += 1
    topics, documents = {}, {}
    sizes = [k for k in sorted(counts) for _ in range(counts[k])]
    for i, n_docs in enumerate(sizes):
        tid = f"{prefix}-{i}"
        ids = [f"{tid}:{j}" for j in range(n_docs)]
        for j, doc_id in enumerate(ids):
            documents[doc_id] = Document(doc_id, tid, _words(size.document_words, i + j))
        topics[tid] = Topic(tid, _words(size.summary_words, i), ids)
    return Dataset(topics=topics, documents=documents)


# --- datasets and backends as the plan sees them


class AnyTopic:
    """Every id is a topic: a topic list read for its length, the dataset not yet on disk."""

    def __contains__(self, item) -> bool:
        return True


@dataclass
class Loaded:
    dataset: Dataset
    scale: float = 1.0             # published topics / stand-in topics
    topics: int | None = None      # published topics (a stand-in), else None


def check_backends(config: dict, root: Path, assumed: list[str]) -> None:
    """One line for a backend the plan cannot stand for (an unknown kind). A model file (a
    path, not a hub id or a package: resource) that is not there yet is planned by its name
    (the rate table reads the model's size from it) and noted in ``assumed``."""
    for name, spec in config["llm"]["backends"].items():
        kind, model = spec.get("kind"), str(spec.get("model", ""))
        if kind not in ("llamacpp", "openai", "vllm"):
            raise ConfigError([(f"llm.backends.{name}.kind",
                                f"unknown backend kind {kind!r} (llamacpp, openai or vllm)")])
        local = kind == "llamacpp" or model.startswith(("/", "./", "../", "~"))
        if local and not model.startswith("package:"):
            path = Path(model).expanduser()
            path = path if path.is_absolute() else root / path
            if not path.exists():
                assumed.append(f"llm.backends.{name}.model: {model} is not on disk: planned by "
                               "its name (--calibrate needs it)")


def load_or_stand_in(config: dict, name: str, root: Path, assumed: list[str]) -> Loaded:
    """The dataset from its input, or, when the input is not on disk, a stand-in of its
    published size (noted in ``assumed``); a one-line error when no size is known."""
    d = config["datasets"][name]
    if (root / d["input"]).exists():
        return Loaded(load_input(config, name, root))
    size = published_size(d)
    if size is None:
        raise ConfigError([(f"datasets.{name}.input",
                            f"{d['input']} does not exist, and no published size is known for "
                            f"format {d['format']!r} (known: Multi-News train/validation/test, "
                            "DUC 2004)")])
    topics = size.topics if d["max_topics"] is None else min(size.topics, d["max_topics"])
    sample = stand_in(size, d["prefix"] or name, min(SAMPLE_TOPICS, topics))
    assumed.append(f"not on disk, planned from published sizes: {name} ({d['input']}): "
                   f"{size.describe(topics)}")
    return Loaded(sample, topics / len(sample.topics), topics)


# --- the inputs as ingest and the LLM stages leave them


def ingest_options(config: dict, name: str):
    """The :class:`IngestOptions` that the ``ingest`` rule builds for a dataset."""
    from cruxflow.data.ingest.formats import options_from_config, resolved

    return resolved(config["datasets"][name]["format"], options_from_config(config, name))


def load_input(config: dict, name: str, root: Path) -> Dataset:
    """The dataset as ``ingest`` leaves it, read from the raw corpus in memory the same way
    (nothing is written). Not from ``results/ingested``: that holds what an earlier config
    asked for (another max_topics, say), and the plan is for this one."""
    from cruxflow.data.ingest import ingest, read_distractors
    from cruxflow.data.ingest.formats import under

    d = config["datasets"][name]
    options = under(ingest_options(config, name), root)
    dataset, _ = ingest(d["format"], root / d["input"], options)
    if options.distractors:
        for doc in read_distractors(options.distractors, f"{options.prefix}-distractors",
                                    options.encoding):
            dataset.documents[doc.doc_id] = doc
    return dataset if options.max_topics is None else dataset.head(options.max_topics)


def generated(root: Path, name: str, shards: int) -> dict:
    """The generated files of a dataset that exist (all shards, or no passages)."""
    from cruxflow.stages.prepare import read_passages, read_topic_field

    g = root / "results" / "generated" / name
    out = {}
    for key, file, field_name in (("queries", "report_requests.jsonl", "query"),
                                  ("questions", "subquestions.jsonl", "questions")):
        if (g / file).is_file():
            out[key] = read_topic_field(g / file, field_name)
    shard_files = [g / "passages" / f"shard{s}-of{shards}.jsonl" for s in range(shards)]
    if all(f.is_file() for f in shard_files):
        out["passages"] = read_passages(shard_files)
    return out


def covers(generated: dict, dataset: Dataset) -> bool:
    """Whether earlier generated files hold sub-questions and passages for every topic of
    ``dataset`` (files of an earlier config with fewer topics do not: the plan then
    estimates)."""
    topics = set(dataset.topics)
    return (topics <= set(generated.get("questions", {}))
            and topics <= {p.topic_id for p in generated.get("passages", {}).values()})

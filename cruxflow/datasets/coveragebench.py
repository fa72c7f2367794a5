"""A CoverageBench config (hltcoe/coveragebench; Samuel et al., arXiv 2603.20034) read as
released, and its nugget labels as the judgments :func:`cruxflow.evaluate` takes.

What is read (docs/released-data.md, "CoverageBench", says which parts the card and the public
code that reads the release define, and which are assumed):

* **nugget labels** ``qrels/<name>.qrels``: ``topic nugget document label`` per line, a
  document supporting the nugget where the label is above 0 (the nugget-level relevance
  labels; the same four columns as ndeval's diversity qrels);
* **nuggets** ``nuggets/<name>_nuggets.tsv``: ``topic nugget question`` per line (space
  separated, the question the rest of the line);
* **topics**: JSON or JSONL records with the card's features ``topic_id``, ``query`` and
  ``nuggets`` (the nugget texts);
* **baseline runs**: the TREC run files under ``ranking/``.

As judgments, a nugget is a sub-question and a document's label its answerability rating:
a supporting document (label above 0) is rated 5, the top of CRUX's scale, any other labelled
document 0, so that Cov and CRUX's alpha-nDCG count a nugget covered where a retrieved document
supports it, at every eta; the labels file is also given as diversity qrels, which ndeval's
alpha-nDCG reads as released.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError

SUPPORTED = 5       # the rating a supporting document gets (CRUX's scale tops at 5)


@dataclass
class Config:
    name: str
    topics: dict[str, str]                      # topic -> query
    nuggets: dict[str, list[str]]               # topic -> nugget ids, in order
    nugget_texts: dict[str, list[str]]          # topic -> the nuggets' texts (ids if unknown)
    labels: dict[str, dict[str, dict[str, int]]]    # topic -> document -> nugget -> label
    qrels: Path
    runs: dict[str, Path] = field(default_factory=dict)


def _natural(value: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", value)]


def find_files(folder: Path, layout: dict) -> dict[str, list[Path]]:
    """The config's files by role, from ``layout`` where it names them, else by their place
    in the repository (``qrels/*.qrels``, ``nuggets/*.tsv``, ``ranking/**``, JSON topics)."""
    every = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))

    def named(key: str) -> list[Path] | None:
        value = layout.get(key)
        if value is None:
            return None
        values = value if isinstance(value, list) else [value]
        out = []
        for v in values:
            p = folder / v
            out += sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        return out

    rel = {p: p.relative_to(folder).as_posix().lower() for p in every}
    return {
        "judgments": named("judgments") or [p for p in every if p.suffix in (".qrels", ".qrel")],
        "nuggets": named("nuggets") or [p for p in every if rel[p].startswith("nuggets/")
                                        and p.suffix in (".tsv", ".txt")],
        "runs": named("runs") or [p for p in every if rel[p].startswith("ranking/")
                                  and p.suffix in (".run", ".txt", ".trec", ".gz")],
        "topics": named("topics") or [p for p in every if p.suffix in (".json", ".jsonl")],
    }


def _read_labels(path: Path):
    labels: dict[str, dict[str, dict[str, int]]] = {}
    order: dict[str, list[str]] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise DataError(f"expected 4 columns 'topic nugget document label', got "
                            f"{len(parts)}", path=path, record=f"line {lineno}")
        topic, nugget, doc, label = parts
        try:
            value = int(float(label))
        except ValueError:
            raise DataError(f"label {label!r} is not a number", path=path,
                            record=f"line {lineno}", field="label") from None
        labels.setdefault(topic, {}).setdefault(doc, {})[nugget] = value
        seen = order.setdefault(topic, [])
        if nugget not in seen:
            seen.append(nugget)
    return labels, order


def _read_nuggets(paths: list[Path]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for path in paths:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            parts = line.replace("\t", " ").split(" ", 2)
            if len(parts) < 3:
                raise DataError("expected 'topic nugget question'", path=path,
                                record=f"line {lineno}")
            out.setdefault(parts[0], {})[parts[1]] = parts[2].strip()
    return out


def _read_topics(paths: list[Path]) -> tuple[dict[str, str], dict[str, list[str]]]:
    queries: dict[str, str] = {}
    texts: dict[str, list[str]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            continue
        try:
            records = json.loads(text) if path.suffix == ".json" else \
                [json.loads(x) for x in text.splitlines() if x.strip()]
        except ValueError as exc:
            raise DataError(f"not JSON: {exc}", path=path) from None
        if isinstance(records, dict):
            records = records.get("data", [records])
        for i, r in enumerate(records if isinstance(records, list) else []):
            if not isinstance(r, dict) or "topic_id" not in r:
                continue
            tid = str(r["topic_id"])
            if "query" not in r:
                raise DataError("a topic needs its query", path=path, record=f"record {i + 1}",
                                field="query")
            queries[tid] = str(r["query"])
            if isinstance(r.get("nuggets"), list):
                texts[tid] = [str(n) for n in r["nuggets"]]
    return queries, texts


def read_config(folder: Path, layout: dict, name: str = "coveragebench") -> Config:
    """The config whose files are in ``folder`` (a fetched set's folder)."""
    files = find_files(folder, layout)
    if not files["judgments"]:
        raise DataError(f"{name}: no nugget labels (qrels/*.qrels) in {folder}")
    if len(files["judgments"]) > 1:
        raise DataError(f"{name}: several nugget label files in {folder} ("
                        + ", ".join(p.name for p in files["judgments"])
                        + "): name one in the set's layout (judgments = ...)")
    qrels = files["judgments"][0]
    labels, order = _read_labels(qrels)
    listed = _read_nuggets(files["nuggets"])
    queries, topic_texts = _read_topics(files["topics"])
    nuggets: dict[str, list[str]] = {}
    texts: dict[str, list[str]] = {}
    for topic in sorted(set(order) | set(listed) | set(queries), key=_natural):
        ids = sorted(set(order.get(topic, ())) | set(listed.get(topic, {})), key=_natural)
        nuggets[topic] = ids
        if topic in listed:
            texts[topic] = [listed[topic].get(n, n) for n in ids]
        elif len(topic_texts.get(topic, ())) == len(ids):   # the card's list, in id order
            texts[topic] = topic_texts[topic]
        else:
            texts[topic] = list(ids)
    runs = {}
    for path in files["runs"]:
        key = path.name
        for suffix in (".gz", ".run", ".trec", ".txt"):
            key = key.removesuffix(suffix)
        runs[path.relative_to(folder).parent.name + "/" + key] = path
    return Config(name=name, topics=queries, nuggets=nuggets, nugget_texts=texts,
                  labels=labels, qrels=qrels, runs=runs)


def ratings(config: Config) -> dict[str, dict[str, list[int]]]:
    """``{topic: {document: [rating per nugget]}}``: 5 where the document supports the
    nugget (label above 0), else 0; every labelled document of the topic."""
    out: dict[str, dict[str, list[int]]] = {}
    for topic, docs in config.labels.items():
        ids = config.nuggets[topic]
        out[topic] = {doc: [SUPPORTED if by_nugget.get(n, 0) > 0 else 0 for n in ids]
                      for doc, by_nugget in docs.items()}
    return out


def judgments(config: Config):
    """The config's nugget labels as :class:`~cruxflow.metrics.inputs.Judgments`: the ratings
    of :func:`ratings`, the labels file as diversity qrels, every topic of the config."""
    from cruxflow.metrics.inputs import Judgments

    topics = sorted(set(config.topics) | set(config.nuggets), key=_natural)
    return Judgments(ratings=ratings(config), qrels=config.qrels, topics=topics,
                     source=config.name)

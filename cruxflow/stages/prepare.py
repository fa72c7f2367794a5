"""Sharding the LLM stages, and assembling their outputs into a dataset directory.

Work is split by *group* (a topic, or one distractor document: see
:func:`cruxflow.stages.passages.passage_group`) and cut by work, not by group count: the
passage stage weighs a group by the words it sends to the LLM, the rating stage a topic by its
(passage, sub-question) pairs. Cutting by count left one of the demo's two rating shards with
306 pairs and the other with 138, one core idle for minutes (issue 19).
"""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl
from cruxflow.data.model import (
    Dataset,
    Document,
    Passage,
    Topic,
    load_records,
    passage_from_json,
    rating_from_json,
    reference_rating_from_json,
)
from cruxflow.data.text import count_words
from cruxflow.stages.passages import passage_group, sends_to_llm


def balanced_shards(weights: dict[str, float], shards: int) -> dict[str, int]:
    """``{key: shard}`` with the shards' total weights as even as greedy makes them: heaviest
    key first (ties in the given order) onto the lightest shard so far (ties: the lowest
    number). Deterministic, so every job of a stage computes the same split."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    order = sorted(enumerate(weights.items()), key=lambda x: (-x[1][1], x[0]))
    loads = [0.0] * shards
    out = {}
    for _, (key, weight) in order:
        s = min(range(shards), key=lambda i: (loads[i], i))
        out[key] = s
        loads[s] += weight
    return {k: out[k] for k in weights}


def documents_of_shard(dataset: Dataset, shard: int, shards: int,
                       distractors: str = "llm") -> list[Document]:
    """The documents of one passage-stage shard; a group weighs the words its documents send
    to the LLM (none for distractors split without it: ``distractors="split"``)."""
    weights: dict[str, float] = {g: 0.0 for g in dataset.topics}
    for d in dataset.documents.values():
        g = passage_group(d)
        words = count_words(d.text) if sends_to_llm(d, distractors) else 0
        weights[g] = weights.get(g, 0.0) + words
    of = balanced_shards(weights, shards)
    return [d for d in dataset.documents.values() if of[passage_group(d)] == shard]


def topics_of_shard(dataset: Dataset, shard: int, shards: int,
                    pairs: dict[str, int] | None = None) -> list[Topic]:
    """The topics of one rating-stage shard, each weighing ``pairs[topic]`` (its passage,
    sub-question pairs; 1 each when not given)."""
    weights = {t: float((pairs or {}).get(t, 1)) for t in dataset.topics}
    of = balanced_shards(weights, shards)
    return [t for t in dataset.topics.values() if of[t.topic_id] == shard]


def read_passages(paths) -> dict[str, Passage]:
    out: dict[str, Passage] = {}
    for path in paths:
        for pid, p in load_records(Path(path), passage_from_json, lambda p: p.id).items():
            if pid in out:
                raise DataError(f"passage {pid!r} is also in another shard", path=path)
            out[pid] = p
    return out


def read_topic_field(path, field: str) -> dict:
    """``{topic_id: record[field]}`` from a JSONL of per-topic generation outputs."""
    out = {}
    for lineno, obj in iter_jsonl(Path(path)):
        if "topic_id" not in obj or field not in obj:
            raise DataError("missing", path=path, record=f"line {lineno}",
                            field="topic_id" if "topic_id" not in obj else field)
        out[obj["topic_id"]] = obj[field]
    return out


def assemble(ingested: Dataset, *, passage_files, report_requests, subquestions,
             rating_files, reference_files, manifest: dict | None = None) -> Dataset:
    """The ingested corpus completed with the LLM stages' outputs, validated as a whole."""
    queries = read_topic_field(report_requests, "query")
    questions = read_topic_field(subquestions, "questions")
    topics = {}
    for tid, t in ingested.topics.items():
        if tid not in queries or tid not in questions:
            raise DataError(f"topic {tid} has no generated query or sub-questions",
                            path=report_requests if tid not in queries else subquestions)
        topics[tid] = Topic(t.topic_id, t.reference, t.doc_ids, queries[tid], questions[tid],
                            t.references, t.source_id)
    ratings, expected, references = {}, {}, {}
    for path in rating_files:
        for key, row in load_records(Path(path), rating_from_json,
                                     lambda r: (r.topic_id, r.passage_id)).items():
            ratings[key] = row.ratings
            if row.expected is not None:
                expected[key] = row.expected
    for path in reference_files:
        references.update(load_records(Path(path), reference_rating_from_json,
                                       lambda r: r.topic_id))
    ds = Dataset(topics, dict(ingested.documents), read_passages(passage_files), ratings,
                 {**ingested.manifest, **(manifest or {})}, expected, references)
    ds.check()
    return ds

"""Sharding the LLM stages, and assembling their outputs into a dataset directory.

Work is split by *group*: a topic, or the distractors (see
:func:`cruxflow.stages.passages.passage_group`). The passage stage and the rating stage use
the same split, so rating shard ``k`` needs only passage shard ``k``.
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
from cruxflow.stages.passages import passage_group


def shard_of_groups(dataset: Dataset, shards: int) -> dict[str, int]:
    """Round-robin over groups in order of first appearance (topics first, then distractors)."""
    groups = list(dict.fromkeys([*dataset.topics,
                                 *(passage_group(d) for d in dataset.documents.values())]))
    return {g: i % shards for i, g in enumerate(groups)}


def documents_of_shard(dataset: Dataset, shard: int, shards: int) -> list[Document]:
    of = shard_of_groups(dataset, shards)
    return [d for d in dataset.documents.values() if of[passage_group(d)] == shard]


def topics_of_shard(dataset: Dataset, shard: int, shards: int) -> list[Topic]:
    of = shard_of_groups(dataset, shards)
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

"""The knowledge corpus that first stages index: the passages of one or more datasets.

The paper retrieves from one corpus made of the passages of Multi-News train and test and DUC
2004 (about 500K), so that every test topic competes with passages of every other topic. A
corpus here is the union of the named datasets' passage collections, written as a pyserini
``JsonCollection`` (``{"id", "contents"}`` per line). A passage id that two datasets give
different texts is an error: the index could only keep one of them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, read_run, write_jsonl
from cruxflow.data.model import load_records, passage_from_json

log = logging.getLogger(__name__)


def merge_passages(passage_files: Sequence) -> dict[str, str]:
    """``{id: contents}`` over several passage files; identical repeats are kept once."""
    texts: dict[str, str] = {}
    origin: dict[str, str] = {}
    for path in passage_files:
        for pid, p in load_records(Path(path), passage_from_json, lambda p: p.id).items():
            if pid in texts and texts[pid] != p.contents:
                raise DataError(f"passage {pid!r} has another text in {origin[pid]}: one corpus "
                                "cannot hold both (give the datasets different id prefixes)",
                                path=path, record=f"passage {pid}", field="contents")
            texts.setdefault(pid, p.contents)
            origin.setdefault(pid, str(path))
    return texts


def write_collection(texts: Mapping[str, str], path) -> int:
    """Write ``{id: contents}`` as a JsonCollection file, atomically, in id order."""
    return write_jsonl(path, ({"id": pid, "contents": texts[pid]} for pid in sorted(texts)))


def read_collection(path) -> dict[str, str]:
    return {obj["id"]: obj["contents"] for _, obj in iter_jsonl(Path(path))}


def shard_bounds(n: int, shard: int, shards: int, *, align: int = 1) -> tuple[int, int]:
    """``[start, stop)`` of shard ``shard`` (0-based) of ``shards`` over ``n`` items.

    Shards are contiguous, in order, and together hold every item exactly once. They are cut
    in whole units of ``align`` items (the last unit may be short) and differ by at most one
    unit: with ``align`` the encoding batch size, a shard's batches are exactly the batches
    that encoding everything at once would make, so sharding cannot change a single vector
    (padding to the longest text of a batch moves embeddings in their last bits). Shards
    beyond the number of units are empty.
    """
    if shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"no shard {shard} of {shards}")
    if align < 1:
        raise ValueError(f"align must be at least 1, not {align}")
    units = -(-n // align)
    return (min(shard * units // shards * align, n),
            min((shard + 1) * units // shards * align, n))


def corpus_shard(items: Sequence, shard: int, shards: int, *, align: int = 1) -> list:
    """Shard ``shard`` of ``shards`` of ``items`` as a contiguous slice (see
    :func:`shard_bounds`)."""
    start, stop = shard_bounds(len(items), shard, shards, align=align)
    return list(items[start:stop])


def claim_passage(seen: dict, pid: str, source, *, record: str | None = None) -> None:
    """Record that passage ``pid`` comes from ``source`` (a shard file); a passage already
    seen is an error naming the file: an index holds each passage once."""
    if pid in seen:
        where = "twice" if seen[pid] == source else f"also in {seen[pid]}"
        raise DataError(f"passage {pid!r} {where}: an index holds each passage once",
                        path=source, record=record)
    seen[pid] = source


def check_hits(ranking: Mapping[str, Sequence[tuple[str, float]]], queries: Iterable[str], *,
               depth: int, corpus_size: int, path=None) -> dict:
    """Check a first-stage ranking query by query; return the hit counts.

    Every query must be there with at most ``depth`` distinct passages in non-increasing score
    order. Fewer than ``min(depth, corpus_size)`` hits is legal for lexical retrieval (few
    passages share a term with the query) and is logged; no hit at all is an error, since the
    query's contexts would be empty.
    """
    expected = min(depth, corpus_size)
    counts: dict[str, int] = {}
    for qid in queries:
        hits = ranking.get(qid, [])
        where = {"path": path, "record": f"query {qid}"}
        if not hits:
            raise DataError("no passage retrieved", **where)
        if len(hits) > depth:
            raise DataError(f"{len(hits)} hits, more than the depth {depth}", **where)
        if len({d for d, _ in hits}) != len(hits):
            raise DataError("a passage is retrieved twice", field="docid", **where)
        if any(a[1] < b[1] for a, b in zip(hits, hits[1:], strict=False)):
            raise DataError("scores are not in descending order", field="score", **where)
        counts[qid] = len(hits)
    short = {q: n for q, n in counts.items() if n < expected}
    if short:
        log.warning("%d of %d queries have fewer than %d hits: %s", len(short), len(counts),
                    expected, dict(list(short.items())[:5]))
    return {"queries": len(counts), "expected_hits": expected, "short_queries": short,
            "min_hits": min(counts.values(), default=0), "max_hits": max(counts.values(),
                                                                          default=0)}


def run_ranking(path) -> dict[str, list[tuple[str, float]]]:
    """A TREC run as ``{qid: [(doc_id, score), ...]}`` best first."""
    return {q: [(r.doc_id, r.score) for r in rows] for q, rows in read_run(path).items()}

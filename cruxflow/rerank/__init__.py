"""Second-stage rerankers over a first-stage run (the paper's cascaded pipelines, Sec. 4.1).

A reranker takes one query and its first-stage candidates (best first) and returns every
candidate exactly once, best first, with a score that decreases down the list. Rerankers that
only order a prefix (listwise windows, setwise top-k) keep the rest in first-stage order below
it. :func:`rerank_run` applies one to every query of a run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cruxflow._extras import extra

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """A first-stage hit: passage id, first-stage score and the passage text."""

    doc_id: str
    score: float
    text: str


class Reranker(Protocol):
    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        """All candidates, best first, as ``(doc_id, score)`` with non-increasing scores."""
        ...


def by_score(candidates: Sequence[Candidate], scores: Sequence[float]) -> list[tuple[str, float]]:
    """Order candidates by a new score, ties kept in first-stage order (a stable sort)."""
    if len(scores) != len(candidates):
        raise ValueError(f"{len(scores)} scores for {len(candidates)} candidates")
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])
    return [(candidates[i].doc_id, float(scores[i])) for i in order]


def by_order(candidates: Sequence[Candidate], order: Sequence[int]) -> list[tuple[str, float]]:
    """A permutation of candidate positions (best first) as a ranking with scores n, n-1, ...

    ``order`` may name only a prefix: the positions it leaves out follow in first-stage order.
    """
    n = len(candidates)
    seen: set[int] = set()
    for i in order:
        if not 0 <= i < n or i in seen:
            raise ValueError(f"not a permutation of {n} candidates: {list(order)}")
        seen.add(i)
    full = [*order, *(i for i in range(n) if i not in seen)]
    return [(candidates[i].doc_id, float(n - r)) for r, i in enumerate(full)]


def rerank_run(run: Mapping[str, Sequence[tuple[str, float]]], queries: Mapping[str, str],
               texts: Mapping[str, str], reranker: Reranker, *, depth: int = 100,
               progress: bool = False) -> dict[str, list[tuple[str, float]]]:
    """Rerank the top-``depth`` of every query of ``run`` (``{qid: [(doc_id, score), ...]}``).

    Queries without text are left out (and logged); a passage id without text is an error that
    names the query and the id.
    """
    qids = [q for q in run if q in queries]
    missing = sorted(set(run) - set(queries))
    if missing:
        log.warning("%d run queries have no query text and are not reranked: %s",
                    len(missing), missing[:5])
    items = []
    for qid in qids:
        hits = list(run[qid])[:depth]
        unknown = [d for d, _ in hits if d not in texts]
        if unknown:
            raise KeyError(f"query {qid!r}: passage ids not in the corpus: {unknown[:5]}")
        items.append((queries[qid], [Candidate(d, float(s), texts[d]) for d, s in hits]))
    if hasattr(reranker, "rerank_batch"):
        # Listwise rerankers advance every query's windows together (one LLM batch per step).
        rankings = reranker.rerank_batch(items)
    else:
        steps = items
        if progress:
            with extra(__name__, "rerank"):
                from tqdm import tqdm
            steps = tqdm(items, desc=type(reranker).__name__, unit="query")
        rankings = [reranker.rerank(q, c) if c else [] for q, c in steps]
    out = {}
    for qid, (_, candidates), ranking in zip(qids, items, rankings, strict=True):
        if sorted(d for d, _ in ranking) != sorted(c.doc_id for c in candidates):
            raise RuntimeError(f"{type(reranker).__name__} did not return every candidate of "
                               f"query {qid!r} exactly once")
        out[qid] = ranking
    return out


def keep_rest(reranked: Mapping[str, Sequence[tuple[str, float]]],
              run: Mapping[str, Sequence[tuple[str, float]]], depth: int
              ) -> dict[str, list[tuple[str, float]]]:
    """Each query's reranked prefix, then the rest of its first-stage top-``depth`` in
    first-stage order, scored below the prefix (a reranker that reads fewer candidates than the
    run holds keeps the run as long)."""
    out = {}
    for qid, ranked in reranked.items():
        seen = {d for d, _ in ranked}
        rest = [d for d, _ in list(run[qid])[:depth] if d not in seen]
        low = min((s for _, s in ranked), default=0.0)
        out[qid] = [*ranked, *((d, low - 1.0 - i) for i, d in enumerate(rest))]
    return out

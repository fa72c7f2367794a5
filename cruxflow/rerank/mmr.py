"""Maximal marginal relevance (Carbonell and Goldstein 1998) for diversity reranking.

Greedy selection: the next passage maximises
``lam * rel(q, p) - (1 - lam) * max_{s in selected} cos(p, s)``. The paper follows Gao and Zhang
(2024) with all-mpnet-base-v2 as the encoder (the packaged all-MiniLM-L6-v2 in the default).
Relevance is the query-passage cosine from the same encoder (``relevance="cosine"``) or the
first-stage score min-max scaled to [0, 1] over the candidates (``relevance="first-stage"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cruxflow._extras import extra
from cruxflow.rerank import Candidate, by_order
from cruxflow.weights import resolve_model

RELEVANCE = ("cosine", "first-stage")


def mmr_order(relevance: np.ndarray, similarity: np.ndarray, lam: float,
              k: int | None = None) -> list[int]:
    """Positions in MMR order (the first ``k``; all by default). Ties go to the earlier position.

    ``relevance``: shape (n,); ``similarity``: (n, n) passage-passage similarities.
    """
    n = len(relevance)
    if similarity.shape != (n, n):
        raise ValueError(f"similarity must be {n}x{n}, got {similarity.shape}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    k = n if k is None else min(k, n)
    selected: list[int] = []
    remaining = np.ones(n, dtype=bool)
    redundancy = np.full(n, -np.inf)   # max similarity to the selected set; none selected yet
    for _ in range(k):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        gain = lam * relevance - (1.0 - lam) * penalty
        gain[~remaining] = -np.inf
        best = int(np.argmax(gain))     # argmax returns the first of equal values
        selected.append(best)
        remaining[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return selected


def min_max(scores: np.ndarray) -> np.ndarray:
    span = scores.max() - scores.min() if len(scores) else 0.0
    return (scores - scores.min()) / span if span > 0 else np.ones_like(scores)


class MMRReranker:
    """MMR over a sentence-transformers encoder (a local path, cached id or ``package:``)."""

    def __init__(self, model: str, *, lam: float = 0.5, relevance: str = "cosine",
                 batch_size: int = 64, device: str = "cpu"):
        if relevance not in RELEVANCE:
            raise ValueError(f"relevance must be one of {RELEVANCE}, not {relevance!r}")
        with extra(__name__, "rerank"):
            from sentence_transformers import SentenceTransformer

        self.encoder = SentenceTransformer(resolve_model(model), device=device,
                                           local_files_only=True)
        self.lam, self.relevance, self.batch_size = lam, relevance, batch_size
        # Queries of a dataset share many candidates: each passage is encoded once per run.
        self._passages: dict[str, np.ndarray] = {}

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)

    def _embed_passages(self, candidates: Sequence[Candidate]) -> np.ndarray:
        new = [c for c in candidates if c.doc_id not in self._passages]
        if new:
            self._passages.update(zip((c.doc_id for c in new), self._embed([c.text for c in new]),
                                      strict=True))
        return np.stack([self._passages[c.doc_id] for c in candidates])

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        if not candidates:
            return []
        docs = self._embed_passages(candidates)
        if self.relevance == "cosine":
            relevance = docs @ self._embed([query])[0]
        else:
            relevance = min_max(np.array([c.score for c in candidates], dtype=float))
        return by_order(candidates, mmr_order(relevance, docs @ docs.T, self.lam))


def from_spec(spec: dict, build) -> MMRReranker:
    """The registry's builder (cruxflow/rerank/registry.py)."""
    return MMRReranker(spec["model"], lam=spec["lambda"], relevance=spec["relevance"],
                       batch_size=spec["batch_size"], device=build.device)

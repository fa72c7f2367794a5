"""Pointwise cross-encoder reranking (the paper's ``cross-encoder/ms-marco-MiniLM-L-6-v2``).

Each (query, passage) pair is read jointly by a BERT-style model with a one-logit head; the
passage's score is that logit. sentence-transformers would squash it with a sigmoid by default,
which keeps the order but not the value, so the raw logit is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

from cruxflow._extras import require
from cruxflow.rerank import Candidate, by_score
from cruxflow.weights import resolve_model

require(__name__, "rerank", "torch", "sentence_transformers")


class CrossEncoderReranker:
    def __init__(self, model: str, *, batch_size: int = 32, max_length: int = 512,
                 device: str = "cpu"):
        import torch
        from sentence_transformers import CrossEncoder

        self.batch_size = batch_size
        self.encoder = CrossEncoder(resolve_model(model), device=device, max_length=max_length,
                                    local_files_only=True, activation_fn=torch.nn.Identity())
        if self.encoder.num_labels != 1:
            raise ValueError(f"cross-encoder {model!r} has {self.encoder.num_labels} labels; "
                             f"a relevance cross-encoder has a single logit")

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        """The relevance logit of every passage for ``query``."""
        if not passages:
            return []
        logits = self.encoder.predict([(query, p) for p in passages],
                                      batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in logits]

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        return by_score(candidates, self.scores(query, [c.text for c in candidates]))


def from_spec(spec: dict, build) -> CrossEncoderReranker:
    """The registry's builder (cruxflow/rerank/registry.py)."""
    return CrossEncoderReranker(spec["model"], batch_size=spec["batch_size"],
                                max_length=spec["max_length"], device=build.device)

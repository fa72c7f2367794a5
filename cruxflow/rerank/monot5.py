"""Pointwise monoT5 reranking (the paper's ``castorini/monot5-3b-msmarco-10k``).

monoT5 was fine-tuned to answer ``true`` or ``false`` after ``Query: q Document: d Relevant:``.
As in pygaggle, a passage's score is log P(true) from the first decoder step, normalised over
the two answer tokens only (a log-softmax over their two logits).
"""

from __future__ import annotations

from collections.abc import Sequence

from cruxflow.rerank import Candidate, by_score
from cruxflow.rerank.seq2seq import load_seq2seq, single_token_id, truncate_tokens

TEMPLATE = "Query: {query} Document: {document} Relevant:"


class MonoT5Reranker:
    def __init__(self, model: str, *, batch_size: int = 8, max_length: int = 512,
                 device: str = "cpu", dtype: str = "float32"):
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.tokenizer, self.model = load_seq2seq(model, device=device, dtype=dtype)
        self.true_id = single_token_id(self.tokenizer, "true")
        self.false_id = single_token_id(self.tokenizer, "false")
        self.decoder_start = self.model.config.decoder_start_token_id
        if self.decoder_start is None:
            raise ValueError(f"model {model!r} has no decoder_start_token_id")

    def model_input(self, query: str, passage: str) -> str:
        """The prompt, with the passage (not the ``Relevant:`` cue) cut to fit ``max_length``.

        pygaggle truncates the whole input, which drops the cue from long passages; here the cue
        always stays. Inputs that fit are unchanged.
        """
        text = TEMPLATE.format(query=query, document=passage)
        excess = len(self.tokenizer(text)["input_ids"]) - self.max_length
        if excess > 0:
            n_passage = len(self.tokenizer(passage, add_special_tokens=False)["input_ids"])
            passage = truncate_tokens(self.tokenizer, passage, n_passage - excess)
            text = TEMPLATE.format(query=query, document=passage)
        return text

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        """log P(true) of every passage, in input order."""
        import torch

        out: list[float] = []
        for start in range(0, len(passages), self.batch_size):
            texts = [self.model_input(query, p) for p in passages[start:start + self.batch_size]]
            # Re-tokenising a cut passage can add a token at the cut: the hard limit stays.
            batch = self.tokenizer(texts, padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt").to(self.device)
            decoder_input = torch.full((len(texts), 1), self.decoder_start, device=self.device)
            with torch.inference_mode():
                logits = self.model(**batch, decoder_input_ids=decoder_input).logits[:, 0]
            pair = logits[:, [self.false_id, self.true_id]].float()
            out.extend(torch.log_softmax(pair, dim=-1)[:, 1].tolist())
        return out

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        return by_score(candidates, self.scores(query, [c.text for c in candidates]))


def from_spec(spec: dict, build) -> MonoT5Reranker:
    """The registry's builder (cruxflow/rerank/registry.py)."""
    return MonoT5Reranker(spec["model"], batch_size=spec["batch_size"],
                          max_length=spec["max_length"], device=build.device,
                          dtype=spec["dtype"])

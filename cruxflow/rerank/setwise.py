"""Setwise reranking with heapsort (Zhuang et al., SIGIR 2024; the paper's Flan-T5-XL setting).

A set of up to ``num_child + 1`` passages, labelled A, B, C, ..., is shown to an instruction-tuned
T5 that names the most relevant one. The winner is read from the likelihoods, not from generated
text: the label whose token has the highest logit at the answer position (llm-rankers'
``scoring="likelihood"``). Those choices drive a heapsort over a ``num_child``-ary max-heap that
stops once the top ``k`` are out; the other candidates follow in first-stage order.

The heap is kept apart from the model (:func:`setwise_heapsort`), so its correctness and its cost
in model calls are tested with any comparator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from cruxflow.rerank import Candidate, by_order
from cruxflow.rerank.seq2seq import load_seq2seq, single_token_id, truncate_tokens

log = logging.getLogger(__name__)

# As llm-rankers: "Passage X" and "Passage Y" take several T5 tokens, so labels stop at W.
LABELS = "ABCDEFGHIJKLMNOPQRSTUVW"


def setwise_prompt(query: str, passages: Sequence[str]) -> str:
    """The paper's Setwise prompt for Flan-T5 over passages labelled A, B, C, ..."""
    if not 1 <= len(passages) <= len(LABELS):
        raise ValueError(f"a set holds 1 to {len(LABELS)} passages, not {len(passages)}")
    listed = "\n\n".join(f'Passage {label}: "{p}"' for label, p in
                         zip(LABELS, passages, strict=False))
    return (f'Given a query "{query}", which of the following passages is more relevant to the '
            f"query?\n\n{listed}\n\nOutput only the passage label of the most relevant passage:")


def setwise_heapsort(n: int, best_of: Callable[[list[int]], int], *, num_child: int = 3,
                     k: int = 10) -> list[int]:
    """The top ``min(k, n)`` of positions ``0..n-1``, best first, by a ``num_child``-ary heapsort.

    ``best_of(positions)`` names the best of a set of 2 to ``num_child + 1`` positions (a parent
    first, then its children); it is called once per heap comparison, as llm-rankers'
    ``SetwiseLlmRanker(method="heapsort")`` calls the model. Building the heap takes O(n)
    comparisons and each of the ``k`` extractions O(log n / log num_child).
    """
    if num_child < 1 or k < 1:
        raise ValueError(f"num_child ({num_child}) and k ({k}) must be at least 1")
    heap = list(range(n))
    comparisons = 0

    def sift_down(i: int, size: int) -> None:
        nonlocal comparisons
        while (first := num_child * i + 1) < size:
            group = [heap[i], *heap[first:min(first + num_child, size)]]
            best = best_of(group)
            comparisons += 1
            if best not in group:
                raise ValueError(f"best_of({group}) returned {best!r}, not one of them")
            slot = group.index(best)
            if slot == 0:
                return
            child = first + slot - 1
            heap[i], heap[child] = heap[child], heap[i]
            i = child

    for i in range((n - 2) // num_child, -1, -1):  # the last parent down to the root
        sift_down(i, n)
    top: list[int] = []
    for size in range(n, 0, -1):
        top.append(heap[0])
        if len(top) == k:
            break
        heap[0], heap[size - 1] = heap[size - 1], heap[0]
        sift_down(0, size - 1)
    log.debug("setwise heapsort: top %d of %d in %d comparisons", len(top), n, comparisons)
    return top


class SetwiseReranker:
    """Setwise heapsort with a local Flan-T5-class model (``google/flan-t5-xl`` in the paper).

    As in llm-rankers' ``run.py``, the query and every passage are first cut to
    ``query_length`` and ``passage_length`` tokens. The decoder is fed its start token and then
    ``decoder_prefix`` (llm-rankers feeds ``<pad> Passage``), so the next token is the label.
    ``comparisons`` holds the model calls of the last query, ``total_comparisons`` all of them.
    """

    def __init__(self, model: str, *, num_child: int = 3, k: int = 10, passage_length: int = 128,
                 query_length: int = 128, decoder_prefix: str = "Passage", device: str = "cpu",
                 dtype: str = "float32"):
        import torch

        if not 1 <= num_child < len(LABELS):
            raise ValueError(f"num_child must be 1 to {len(LABELS) - 1}, not {num_child}")
        self.num_child = num_child
        self.k = k
        self.passage_length = passage_length
        self.query_length = query_length
        self.device = device
        self.tokenizer, self.model = load_seq2seq(model, device=device, dtype=dtype)
        self.label_ids = [single_token_id(self.tokenizer, label)
                          for label in LABELS[:num_child + 1]]
        start = self.model.config.decoder_start_token_id
        if start is None:
            raise ValueError(f"model {model!r} has no decoder_start_token_id")
        prefix = self.tokenizer.encode(decoder_prefix, add_special_tokens=False)
        self.decoder_input = torch.tensor([[start, *prefix]], device=device)
        self.comparisons = 0
        self.total_comparisons = 0

    def label_logits(self, query: str, passages: Sequence[str]) -> list[float]:
        """The logit of each passage's label token at the answer position."""
        import torch

        ids = self.tokenizer(setwise_prompt(query, passages),
                             return_tensors="pt")["input_ids"].to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, decoder_input_ids=self.decoder_input).logits[0, -1]
        return logits[self.label_ids[:len(passages)]].float().tolist()

    def best_of(self, query: str, passages: Sequence[str]) -> int:
        """Index of the passage whose label the model likes best (the first one on a tie)."""
        logits = self.label_logits(query, passages)
        return max(range(len(logits)), key=logits.__getitem__)

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        query = truncate_tokens(self.tokenizer, query, self.query_length)
        texts = [truncate_tokens(self.tokenizer, c.text, self.passage_length)
                 for c in candidates]
        calls = 0

        def best_position(positions: list[int]) -> int:
            nonlocal calls
            calls += 1
            return positions[self.best_of(query, [texts[i] for i in positions])]

        top = setwise_heapsort(len(candidates), best_position, num_child=self.num_child,
                               k=self.k)
        self.comparisons = calls
        self.total_comparisons += calls
        log.debug("setwise: %d candidates, %d model calls", len(candidates), calls)
        return by_order(candidates, top)


def from_spec(spec: dict, build) -> SetwiseReranker:
    """The registry's builder (cruxflow/rerank/registry.py)."""
    return SetwiseReranker(spec["model"], num_child=spec["num_child"], k=spec["k"],
                           passage_length=spec["passage_tokens"], device=build.device,
                           dtype=spec["dtype"])

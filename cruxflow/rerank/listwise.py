"""Listwise LLM reranking with sliding windows (RankGPT; RankZephyr and FIRST in the paper).

Two engines share the window arithmetic and the output handling:

* ``cruxflow``: the prompt of RankZephyr (rank_llm's ``rank_zephyr_template``) sent through
  cruxflow's own LLM layer, so every window is cached, counted and resumable and any backend
  works (llama.cpp on a CPU, vLLM in process, an OpenAI-compatible server). Windows of all
  queries at the same step go out as one batch.
* ``rank_llm``: castorini's ``rank_llm`` itself (:class:`RankLLMListwise`), in its own
  environment (``envs/rank_llm.yaml``, which pulls vLLM). FIRST (``castorini/first_mistral``)
  ranks a window by the logits of the first identifier token, which needs rank_llm's vLLM path.

The window slides from the bottom of the list to the top (window 20, stride 10 by default), so
a relevant passage can climb from rank 100 to rank 1 in one pass.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence

from cruxflow.data.text import clip_words
from cruxflow.llm.base import Request, Sampling
from cruxflow.rerank import Candidate, by_order

log = logging.getLogger(__name__)

# RankZephyr's prompt (rank_llm's rank_zephyr_template.yaml): the model was fine-tuned on it.
SYSTEM = ("You are RankLLM, an intelligent assistant that can rank passages based on their "
          "relevancy to the query")
PREFIX = ("I will provide you with {num} passages, each indicated by a numerical identifier []. "
          "Rank the passages based on their relevance to the search query: {query}.\n")
SUFFIX = ("Search Query: {query}.\nRank the {num} passages above based on their relevance to the "
          "search query. All the passages should be included and listed using identifiers, in "
          "descending order of relevance. The output format should be [] > [], e.g., [2] > [1], "
          "Answer concisely and directly and only respond with the ranking results, do not say "
          "any word or explain.")
_IDENTIFIER = re.compile(r"\[(\d+)\]")


def sliding_windows(n: int, window: int = 20, stride: int = 10) -> list[tuple[int, int]]:
    """``(start, end)`` of each window, bottom first; the last one starts at 0."""
    if window < 1 or stride < 1:
        raise ValueError(f"window ({window}) and stride ({stride}) must be positive")
    if n <= 0:
        return []
    out, end = [], n
    while True:
        start = max(end - window, 0)
        out.append((start, end))
        if start == 0:
            return out
        end -= stride


def parse_permutation(text: str, n: int) -> tuple[list[int], bool]:
    """Window positions (0-based), best first, from an output like ``[3] > [1] > [2]``.

    Identifiers out of range and repeats are dropped; the positions the output leaves out
    follow in their current order (RankGPT's repair). The flag says whether the output named
    any valid identifier at all.
    """
    seen: list[int] = []
    for m in _IDENTIFIER.finditer(text):
        i = int(m.group(1)) - 1
        if 0 <= i < n and i not in seen:
            seen.append(i)
    return [*seen, *(i for i in range(n) if i not in seen)], bool(seen)


def window_prompt(query: str, passages: Sequence[str], max_words: int = 300) -> str:
    body = "".join(f"[{i}] {clip_words(p, max_words)}\n" for i, p in enumerate(passages, 1))
    num = len(passages)
    return (PREFIX.format(num=num, query=query) + "\n" + body
            + SUFFIX.format(num=num, query=query))


class ListwiseReranker:
    """RankZephyr-style listwise reranking through a :class:`cruxflow.llm.LLMRunner`."""

    def __init__(self, runner, *, window: int = 20, stride: int = 10, max_words: int = 300,
                 max_tokens: int = 256, seed: int = 0):
        self.runner, self.window, self.stride, self.max_words = runner, window, stride, max_words
        # Greedy, as rank_llm decodes; the seed only makes the cache key explicit.
        self.sampling = Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=seed)
        self.windows = self.unparsed = 0

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        return self.rerank_batch([(query, candidates)])[0]

    def rerank_batch(self, items: Sequence[tuple[str, Sequence[Candidate]]]
                     ) -> list[list[tuple[str, float]]]:
        """Rerank several queries; step t of every query's window schedule is one LLM batch."""
        orders = [list(range(len(cands))) for _, cands in items]
        schedules = [sliding_windows(len(cands), self.window, self.stride) for _, cands in items]
        for step in range(max(map(len, schedules), default=0)):
            active = [(i, schedules[i][step]) for i in range(len(items))
                      if step < len(schedules[i])]
            requests = []
            for i, (start, end) in active:
                query, cands = items[i]
                texts = [cands[j].text for j in orders[i][start:end]]
                requests.append(Request(window_prompt(query, texts, self.max_words),
                                        self.sampling, system=SYSTEM))
            for (i, (start, end)), out in zip(active, self.runner.generate(requests),
                                              strict=True):
                perm, ok = parse_permutation(out.text, end - start)
                self.windows += 1
                if not ok:
                    self.unparsed += 1
                    log.warning("window %d-%d of query %r: no identifier in %r; order kept",
                                start, end, items[i][0][:60], out.text[:80])
                current = orders[i][start:end]
                orders[i][start:end] = [current[p] for p in perm]
        return [by_order(cands, order) for (_, cands), order in zip(items, orders, strict=True)]


class RankLLMListwise:
    """castorini's rank_llm (RankZephyr, FIRST) behind the :class:`Reranker` interface.

    ``first=True`` is FIRST: alphabetical identifiers and single-token logits
    (``use_logits``/``use_alpha``). ``base_url`` sends RankZephyr's prompt to an
    OpenAI-compatible server instead of loading the model into this process.
    """

    def __init__(self, model: str, *, first: bool = False, window: int = 20, stride: int = 10,
                 gpus: int = 1, context_size: int = 4096, batch_size: int = 32,
                 base_url: str | None = None, api_key: str | None = None):
        from rank_llm.rerank import Reranker
        from rank_llm.rerank.listwise import RankListwiseOSLLM

        from cruxflow.weights import resolve_model

        self.window, self.stride = window, stride
        template = "rank_zephyr_alpha_template.yaml" if first else "rank_zephyr_template.yaml"
        template_path = _rank_llm_template(template)
        if base_url:
            if first:
                raise ValueError("FIRST needs the first-token logits of rank_llm's vLLM path; "
                                 "it cannot run through base_url")
            from rank_llm.rerank.listwise import SafeOpenai
            # rank_llm joins paths onto base_url: it needs the trailing slash.
            coordinator = SafeOpenai(model=model, context_size=context_size,
                                     prompt_template_path=template_path, window_size=window,
                                     stride=stride, batch_size=batch_size,
                                     keys=api_key or "none", base_url=base_url.rstrip("/") + "/")
        else:
            coordinator = RankListwiseOSLLM(
                model=resolve_model(model), context_size=context_size,
                prompt_template_path=template_path, num_gpus=gpus, variable_passages=True,
                window_size=window, stride=stride, use_logits=first, use_alpha=first,
                batch_size=batch_size)
        self.reranker = Reranker(coordinator)

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        return self.rerank_batch([(query, candidates)])[0]

    def rerank_batch(self, items: Sequence[tuple[str, Sequence[Candidate]]]
                     ) -> list[list[tuple[str, float]]]:
        from rank_llm.data import Candidate as RLCandidate
        from rank_llm.data import Query
        from rank_llm.data import Request as RLRequest

        out: list[list[tuple[str, float]] | None] = [None] * len(items)
        # rank_llm batches only requests with equally many candidates.
        by_size: dict[int, list[int]] = {}
        for i, (_, cands) in enumerate(items):
            by_size.setdefault(len(cands), []).append(i)
        for size, idx in by_size.items():
            requests = [RLRequest(query=Query(text=items[i][0], qid=str(i)),
                                  candidates=[RLCandidate(docid=c.doc_id, score=c.score,
                                                          doc={"contents": c.text})
                                              for c in items[i][1]])
                        for i in idx]
            results = self.reranker.rerank_batch(requests, rank_start=0, rank_end=size,
                                                 window_size=min(self.window, size),
                                                 stride=self.stride)
            for i, result in zip(idx, results, strict=True):
                position = {c.doc_id: j for j, c in enumerate(items[i][1])}
                out[i] = by_order(items[i][1], [position[str(c.docid)]
                                                for c in result.candidates])
        return out  # type: ignore[return-value]


def _rank_llm_template(name: str) -> str:
    from importlib.resources import files

    return str(files("rank_llm.rerank.prompt_templates") / name)


def from_spec(spec: dict, build):
    """The registry's builder (cruxflow/rerank/registry.py): rank_llm's engine, or the
    cruxflow engine over the job's cached LLM runner."""
    if spec["engine"] == "rank_llm":
        key_env = spec["api_key_env"]
        return RankLLMListwise(spec["model"], first=spec["first"], window=spec["window"],
                               stride=spec["stride"], gpus=max(spec.get("gpus", 1), 1),
                               batch_size=spec["batch_size"], base_url=spec["base_url"],
                               api_key=os.environ.get(key_env) if key_env else None)
    if spec["first"]:
        raise ValueError("first: true (FIRST) needs engine: rank_llm")
    if build.llm_runner is None:
        raise ValueError("a listwise reranker on the cruxflow engine needs an LLM runner")
    return ListwiseReranker(build.llm_runner(spec["llm_backend"]), window=spec["window"],
                            stride=spec["stride"], max_words=spec["max_words"],
                            max_tokens=spec["max_tokens"])

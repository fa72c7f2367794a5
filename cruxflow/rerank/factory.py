"""Build a reranker from its config entry (``retrieval.rerankers.<name>``)."""

from __future__ import annotations

import os
from collections.abc import Callable

KINDS = ("mmr", "cross-encoder", "monot5", "listwise", "setwise")


def make_reranker(spec: dict, *, llm_runner: Callable[[str | None], object] | None = None,
                  device: str | None = None):
    """A reranker for ``spec``. ``llm_runner(backend_name)`` supplies the cached LLM runner of
    listwise rerankers on the cruxflow engine (``None``: the default backend). ``device``
    (the job's: ``cuda`` or ``cpu``) defaults to ``cuda`` where the spec asks for GPUs."""
    kind = spec["kind"]
    if device is None:
        device = "cuda" if spec.get("gpus", 0) > 0 else "cpu"
    opt = {k: spec[k] for k in ("batch_size", "max_length") if spec.get(k) is not None}
    if kind == "mmr":
        from cruxflow.rerank.mmr import MMRReranker
        return MMRReranker(spec["model"], lam=spec.get("lambda", 0.5),
                           relevance=spec.get("relevance", "cosine"), device=device,
                           **{k: v for k, v in opt.items() if k == "batch_size"})
    if kind == "cross-encoder":
        from cruxflow.rerank.cross_encoder import CrossEncoderReranker
        return CrossEncoderReranker(spec["model"], device=device, **opt)
    if kind == "monot5":
        from cruxflow.rerank.monot5 import MonoT5Reranker
        return MonoT5Reranker(spec["model"], device=device, dtype=spec.get("dtype", "float32"),
                              **opt)
    if kind == "setwise":
        from cruxflow.rerank.setwise import SetwiseReranker
        return SetwiseReranker(spec["model"], num_child=spec.get("num_child", 3),
                               k=spec.get("k", 20), passage_length=spec.get("passage_tokens", 128),
                               device=device, dtype=spec.get("dtype", "float32"))
    if kind == "listwise":
        window, stride = spec.get("window", 20), spec.get("stride", 10)
        if spec.get("engine", "cruxflow") == "rank_llm":
            from cruxflow.rerank.listwise import RankLLMListwise
            key_env = spec.get("api_key_env")
            return RankLLMListwise(spec["model"], first=spec.get("first", False), window=window,
                                   stride=stride, gpus=max(spec.get("gpus", 1), 1),
                                   batch_size=spec.get("batch_size", 32),
                                   base_url=spec.get("base_url"),
                                   api_key=os.environ.get(key_env) if key_env else None)
        if spec.get("first"):
            raise ValueError("first: true (FIRST) needs engine: rank_llm")
        if llm_runner is None:
            raise ValueError("a listwise reranker on the cruxflow engine needs an LLM runner")
        from cruxflow.rerank.listwise import ListwiseReranker
        return ListwiseReranker(llm_runner(spec.get("llm_backend")), window=window,
                                stride=stride, max_words=spec.get("max_words", 300),
                                max_tokens=spec.get("max_tokens", 256))
    raise ValueError(f"unknown reranker kind {kind!r} (one of {', '.join(KINDS)})")

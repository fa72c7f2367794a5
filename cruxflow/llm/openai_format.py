"""Reading OpenAI-style responses (OpenAI, vLLM, llama.cpp's server all answer in this shape)."""

from __future__ import annotations

import math

from cruxflow.llm.base import Completion


def merge_logprob(out: dict[str, float], token: str, logprob) -> None:
    """Add ``token``'s probability to ``out`` (log space); NaN and None are skipped."""
    if logprob is None:
        return
    lp = float(logprob)
    if math.isnan(lp):
        return
    # The same string can come from two token ids: keep the total probability.
    prev = out.get(token)
    out[token] = lp if prev is None else max(prev, lp) + math.log1p(math.exp(-abs(prev - lp)))


def first_token_logprobs(logprobs) -> dict[str, float] | None:
    """``{token: ln p}`` of the first generated token's top alternatives, from either the chat
    form (``content[0].top_logprobs``, also llama.cpp's completions) or the legacy completions
    form (``top_logprobs[0]``, vLLM and OpenAI)."""
    if not logprobs:
        return None
    out: dict[str, float] = {}
    content = logprobs.get("content")
    if content:
        for alt in content[0].get("top_logprobs") or []:
            merge_logprob(out, alt.get("token", ""), alt.get("logprob"))
        return out or None
    legacy = logprobs.get("top_logprobs")
    if legacy and legacy[0]:
        for token, lp in legacy[0].items():
            merge_logprob(out, token, lp)
        return out or None
    return None


def cached_prompt_tokens(usage: dict | None, timings: dict | None = None) -> int | None:
    """Prompt tokens the server did not compute (their KV came from an earlier prompt): the
    OpenAI usage field ``prompt_tokens_details.cached_tokens`` (vLLM with prefix caching,
    llama.cpp's server), else llama.cpp's ``timings.cache_n``; ``None`` when neither is there."""
    details = (usage or {}).get("prompt_tokens_details") or {}
    if details.get("cached_tokens") is not None:
        return int(details["cached_tokens"])
    if timings and timings.get("cache_n") is not None:
        return int(timings["cache_n"])
    return None


def completion_from_choice(choice: dict, usage: dict | None,
                           timings: dict | None = None) -> Completion:
    if "message" in choice:
        text = (choice.get("message") or {}).get("content") or ""
    else:
        text = choice.get("text") or ""
    usage = usage or {}
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason"),
        top_logprobs=first_token_logprobs(choice.get("logprobs")),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        cached_tokens=cached_prompt_tokens(usage, timings),
    )

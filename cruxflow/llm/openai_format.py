"""Reading OpenAI-style responses (OpenAI, vLLM, llama.cpp's server all answer in this shape).

A field of the wrong type (a server's bug, a proxy that rewrote the body) is a
:class:`ResponseShapeError` naming the field, never an ``AttributeError`` deep in a stage."""

from __future__ import annotations

import math
from numbers import Integral, Real

from cruxflow.llm.base import Completion


class ResponseShapeError(ValueError):
    """A field of a response that is not what the OpenAI API says it is."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


def _expect(value, kinds: tuple[type, ...], field: str, optional: bool = True):
    """``value`` if it is one of ``kinds`` (or None where ``optional``), else the error."""
    if (value is None and optional) or (isinstance(value, kinds)
                                        and not isinstance(value, bool)):
        return value
    names = " or ".join({Real: "a number", Integral: "an integer"}.get(k, k.__name__)
                        for k in kinds)
    raise ResponseShapeError(field, f"expected {names}, got {type(value).__name__} "
                                    f"{str(value)[:40]!r}")


def merge_logprob(out: dict[str, float], token: str, logprob) -> None:
    """Add ``token``'s probability to ``out`` (log space); NaN and None are skipped."""
    if logprob is None:
        return
    lp = float(_expect(logprob, (Real,), "logprob"))
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
    _expect(logprobs, (dict,), "logprobs")
    out: dict[str, float] = {}
    content = _expect(logprobs.get("content"), (list,), "logprobs.content")
    if content:
        first = _expect(content[0], (dict,), "logprobs.content[0]", optional=False)
        top = _expect(first.get("top_logprobs"), (list,), "logprobs.content[0].top_logprobs")
        for i, alt in enumerate(top or []):
            where = f"logprobs.content[0].top_logprobs[{i}]"
            _expect(alt, (dict,), where, optional=False)
            merge_logprob(out, _expect(alt.get("token", ""), (str,), f"{where}.token"),
                          alt.get("logprob"))
        return out or None
    legacy = _expect(logprobs.get("top_logprobs"), (list,), "logprobs.top_logprobs")
    if legacy and legacy[0]:
        for token, lp in _expect(legacy[0], (dict,), "logprobs.top_logprobs[0]").items():
            merge_logprob(out, token, lp)
        return out or None
    return None


def cached_prompt_tokens(usage: dict | None, timings: dict | None = None) -> int | None:
    """Prompt tokens the server did not compute (their KV came from an earlier prompt): the
    OpenAI usage field ``prompt_tokens_details.cached_tokens`` (vLLM with prefix caching,
    llama.cpp's server), else llama.cpp's ``timings.cache_n``; ``None`` when neither is there."""
    details = _expect((usage or {}).get("prompt_tokens_details"), (dict,),
                      "usage.prompt_tokens_details") or {}
    if details.get("cached_tokens") is not None:
        return int(_expect(details["cached_tokens"], (Integral,),
                           "usage.prompt_tokens_details.cached_tokens"))
    if timings and timings.get("cache_n") is not None:
        return int(_expect(timings["cache_n"], (Integral,), "timings.cache_n"))
    return None


def completion_from_choice(choice: dict, usage: dict | None,
                           timings: dict | None = None) -> Completion:
    _expect(choice, (dict,), "choices[0]", optional=False)
    if "message" in choice:
        message = _expect(choice.get("message"), (dict,), "choices[0].message") or {}
        text = _expect(message.get("content"), (str,), "choices[0].message.content") or ""
    else:
        text = _expect(choice.get("text"), (str,), "choices[0].text") or ""
    usage = _expect(usage, (dict,), "usage") or {}
    _expect(timings, (dict,), "timings")
    for key in ("prompt_tokens", "completion_tokens"):
        _expect(usage.get(key), (Integral,), f"usage.{key}")
    return Completion(
        text=text,
        finish_reason=_expect(choice.get("finish_reason"), (str,), "choices[0].finish_reason"),
        top_logprobs=first_token_logprobs(choice.get("logprobs")),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        cached_tokens=cached_prompt_tokens(usage, timings),
    )

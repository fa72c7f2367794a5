"""The bound on an LLM answer, checked before anything parses or stores it.

A server's answer is read under :data:`MAX_ANSWER_BYTES` (the whole HTTP body, as it arrives:
a 50 MB answer stops after 8 MiB instead of taking a gigabyte of memory), must be UTF-8, may
nest its JSON at most :data:`MAX_ANSWER_DEPTH` deep (Python's parser recurses once per level:
200,000 levels were a ``RecursionError``) and may hold no half of a UTF-16 surrogate pair (a
``"\\ud800"`` escape, which parses but fails at the first write, in the cache). Past a bound
the answer is a failed attempt (:mod:`cruxflow.llm.openai_compat` retries it, logging the
reason, then stops with one line naming the bound); the runner checks every backend's
completion against the same bound before it is parsed or cached
(:func:`completion_problem`).
"""

from __future__ import annotations

import json
import os
import re

from cruxflow.llm.base import Completion, LLMError

# 8 MiB: an answer of max_tokens tokens is a few bytes a token (some 50 KB for the longest
# report cruxflow asks for; a first token's 20 alternatives with their logprobs, a few KB). A
# token is at least one byte, so no max_tokens beyond this can be answered whole.
MAX_ANSWER_BYTES = 8 << 20
MAX_ANSWER_ENV = "CRUXFLOW_MAX_ANSWER_BYTES"
# An OpenAI-style answer nests six deep (choices, logprobs, content, top_logprobs, bytes).
MAX_ANSWER_DEPTH = 64

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def max_answer_bytes() -> int:
    """The bound in force: ``$CRUXFLOW_MAX_ANSWER_BYTES`` where set, else
    :data:`MAX_ANSWER_BYTES`."""
    text = os.environ.get(MAX_ANSWER_ENV, "").strip()
    if not text:
        return MAX_ANSWER_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise LLMError(f"${MAX_ANSWER_ENV} is {text!r}: expected a positive number of bytes")
    return value


def too_long(limit: int) -> str:
    """The reason given for an answer past ``limit`` bytes."""
    return (f"an answer longer than {limit:,} bytes (the bound on an LLM answer; raise it with "
            f"{MAX_ANSWER_ENV})")


def nesting_depth(text: str, stop: int = MAX_ANSWER_DEPTH) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (outside its strings), counted
    without recursion and up to ``stop + 1`` (a deeper text is not walked further)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                break
    return deepest


def body_problem(body: bytes) -> str | None:
    """Why a server's whole answer (a JSON body already under the byte bound) may not be
    parsed: not UTF-8, nested past :data:`MAX_ANSWER_DEPTH`, or holding half a surrogate
    pair; ``None`` when it may."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (f"an answer that is not valid UTF-8 (byte {exc.start:,}: "
                f"{bytes(body[exc.start:exc.start + 8])!r})")
    if nesting_depth(text) > MAX_ANSWER_DEPTH:
        return (f"an answer nested more than {MAX_ANSWER_DEPTH} deep (arrays or objects "
                "inside each other; the bound on an LLM answer)")
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"an answer holding {exc.object[exc.start]!r}, half of a UTF-16 surrogate "
                    "pair without its other half: not text")
        except ValueError:   # not JSON at all: the client says so
            pass
    return None


def completion_problem(completion: Completion) -> str | None:
    """Why a backend's completion may not be parsed or cached: its text past the byte bound,
    or not encodable as UTF-8 (half a surrogate pair); ``None`` when it may."""
    texts = [completion.text or "", *(completion.top_logprobs or {})]
    size = 0
    for text in texts:
        try:
            size += len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return (f"an answer holding {exc.object[exc.start]!r}, half of a UTF-16 surrogate "
                    "pair without its other half: not text")
    limit = max_answer_bytes()
    return too_long(limit) if size > limit else None

"""Any OpenAI-compatible server by ``base_url``: ``vllm serve``, llama.cpp's server, Ollama,
LiteLLM or a hosted API.

The ``openai`` client does the HTTP work, with a timeout per request; the retries are ours, so
that each is logged (a warning: the rule's log and stderr) with its reason and its wait instead
of a run stalling in silence behind a hung server: up to ``max_retries`` more attempts on
connection errors, timeouts, 408/409/429 and 5xx, after the server's Retry-After or an
exponential backoff (0.5 s doubling to 8 s). Requests of a batch go out ``concurrency`` at a
time. The API key is read from the environment variable named in the config and never logged.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from urllib.parse import urlsplit

from cruxflow._extras import extra_hint
from cruxflow.llm.base import (
    Backend,
    Completion,
    LLMError,
    Request,
    chat_messages,
    choice_grammar,
    may_reuse_prompt,
)
from cruxflow.llm.openai_format import completion_from_choice

log = logging.getLogger(__name__)
# The openai client's HTTP library logs every request at INFO ("HTTP Request: POST ... 200 OK"):
# one line per LLM call, some 475,000 at the paper's scale. Retries (logged below, as warnings)
# and failures (raised as LLMError) still show. Recent openai releases use httpx2, older httpx.
for _http in ("httpx", "httpx2"):
    logging.getLogger(_http).setLevel(logging.WARNING)

# How each server family takes a constrained choice (the field goes into the request body).
CONSTRAINTS = ("none", "vllm", "llamacpp")
RETRY_STATUS = frozenset({408, 409, 429})   # and every 5xx
MAX_WAIT_S = 60.0   # a longer Retry-After is cut to this


DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class NotJSONError(Exception):
    """A server answered 200 with a body that is not the API's JSON."""


class OpenAIBackend(Backend):
    kind = "openai"

    def __init__(self, model: str, *, base_url: str, endpoint: str = "chat",
                 api_key_env: str = DEFAULT_KEY_ENV, timeout_s: float = 300.0,
                 max_retries: int = 5, concurrency: int = 8, constrain: str = "none",
                 extra_body: dict | None = None, prompt_cache: bool | None = None):
        super().__init__(model, endpoint=endpoint)
        if constrain not in CONSTRAINTS:
            raise LLMError(f"constrain must be one of {CONSTRAINTS}, not {constrain!r}")
        try:
            import openai
        except ImportError as e:
            raise LLMError(extra_hint("the openai backend", "llm", "openai")) from e
        self._openai = openai
        scheme = urlsplit(str(base_url)).scheme
        if scheme not in ("http", "https") or not urlsplit(str(base_url)).netloc:
            raise LLMError(f"base URL {base_url!r}: an OpenAI-compatible server is an http:// "
                           "or https:// URL, e.g. http://127.0.0.1:8000/v1")
        # Local servers take any key (the default variable may be unset); a variable named on
        # purpose must hold one. Its value is never logged.
        key = os.environ.get(api_key_env)
        if not key and api_key_env != DEFAULT_KEY_ENV:
            raise LLMError(f"the environment variable {api_key_env} (api key) is not set or "
                           "empty: export it, or name another with --api-key-env")
        key = key or "EMPTY"
        # max_retries=0: the client's own retries say nothing about why or how long they wait
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s,
                                    max_retries=0)
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.max_retries = max(0, int(max_retries))
        self.concurrency = max(1, int(concurrency))
        self.constrain = constrain
        self.extra_body = dict(extra_body or {})
        self.prompt_cache = prompt_cache
        log.info("OpenAI-compatible server %s, model %s (key from $%s)", base_url, model,
                 api_key_env)

    def _extra(self, request: Request) -> dict:
        extra = dict(self.extra_body)
        choices = request.sampling.choices
        if choices and self.constrain == "vllm":
            extra["structured_outputs"] = {"choice": list(choices)}
        if choices and self.constrain == "llamacpp":
            extra["grammar"] = choice_grammar(choices)
        # cache_prompt is llama.cpp's server's own field, sent only when it is configured (or,
        # with constrain: llamacpp, off as in process: reuse makes near ties depend on request
        # order). Other servers decide prefix caching at start-up (vllm serve
        # --enable-prefix-caching).
        if self.prompt_cache is not None:  # text generation never reuses (may_reuse_prompt)
            extra.setdefault("cache_prompt", bool(self.prompt_cache)
                             and may_reuse_prompt(request.sampling))
        elif self.constrain == "llamacpp":
            extra.setdefault("cache_prompt", False)
        return extra

    def _one(self, request: Request) -> Completion:
        s = request.sampling
        kwargs = dict(model=self.model, max_tokens=s.max_tokens, temperature=s.temperature,
                      top_p=s.top_p, extra_body=self._extra(request) or None)
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if self.endpoint == "chat":
            if s.logprobs:
                kwargs.update(logprobs=True, top_logprobs=s.logprobs)
            call = lambda: self.client.chat.completions.create(  # noqa: E731
                messages=chat_messages(request), **kwargs)
        else:
            if s.logprobs:
                kwargs["logprobs"] = s.logprobs
            call = lambda: self.client.completions.create(prompt=request.text, **kwargs)  # noqa: E731

        def answer() -> dict:
            resp = call()
            if not hasattr(resp, "model_dump"):  # the client hands back a non-JSON body as text
                raise NotJSONError(f"HTTP 200 but the body is not JSON "
                                   f"(it starts {str(resp)[:60]!r})")
            return resp.model_dump()

        data = self._with_retries(answer)
        if not data.get("choices"):
            raise LLMError(f"{self.base_url}: response without choices")
        return completion_from_choice(data["choices"][0], data.get("usage"), data.get("timings"))

    def _with_retries(self, call):
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except (self._openai.OpenAIError, NotJSONError, json.JSONDecodeError) as e:
                reason, wait = self._retry(e, attempt)
                if wait is None or attempt == attempts:
                    tried = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
                    raise LLMError(f"LLM server {self.base_url}: {type(e).__name__}: "
                                   f"{reason}{tried}") from e
                log.warning("LLM server %s: %s (attempt %d of %d); retrying in %.1f s",
                            self.base_url, reason, attempt, attempts, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _retry(self, e, attempt: int) -> tuple[str, float | None]:
        """Why ``e`` happened, and how long to wait before trying again (``None``: do not;
        the request itself is wrong)."""
        backoff = min(0.5 * 2 ** (attempt - 1), 8.0) * random.uniform(0.75, 1.0)
        # A proxy's or a half-started server's page instead of the API's JSON: a failed attempt
        if isinstance(e, NotJSONError):
            return str(e), backoff
        if isinstance(e, json.JSONDecodeError):
            return (f"HTTP 200 but the body is not JSON ({e.msg} at character {e.pos}; it "
                    f"starts {e.doc[:60]!r})"), backoff
        if isinstance(e, self._openai.APITimeoutError):
            return f"no answer within {self.timeout_s:g} s (timeout)", backoff
        if isinstance(e, self._openai.APIConnectionError):
            return f"cannot connect ({e.__cause__ or e})", backoff
        if isinstance(e, self._openai.APIStatusError):
            status = e.status_code
            body = e.body if isinstance(e.body, dict) else {}
            reason = f"HTTP {status}: {body.get('message') or e.message}"
            if status in RETRY_STATUS or status >= 500:
                return reason, _retry_after(e.response.headers) or backoff
            return reason, None
        return str(e), None

    def generate(self, requests: list[Request]) -> list[Completion]:
        out: list[Completion | None] = [None] * len(requests)
        for i, c in self.generate_iter(requests):
            out[i] = c
        return out  # type: ignore[return-value]

    def generate_iter(self, requests: list[Request]):
        if self.concurrency == 1 or len(requests) <= 1:
            for i, r in enumerate(requests):
                yield i, self._one(r)
            return
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._one, r): i for i, r in enumerate(requests)}
            try:
                for f in as_completed(futures):
                    yield futures[f], f.result()
            finally:  # on an error, do not start what has not started
                for f in futures:
                    f.cancel()

    def close(self) -> None:
        self.client.close()


def _retry_after(headers) -> float | None:
    """The wait a server asks for (``retry-after-ms``, or ``retry-after`` in seconds)."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if 0 <= value:
            return min(value, MAX_WAIT_S)
    return None

"""Any OpenAI-compatible server by ``base_url``: ``vllm serve``, llama.cpp's server, Ollama,
LiteLLM or a hosted API.

The ``openai`` client does the HTTP work: a timeout per request and ``max_retries`` retries
with exponential backoff on connection errors, 408/409/429 and 5xx (honouring Retry-After).
Requests of a batch go out ``concurrency`` at a time. The API key is read from the environment
variable named in the config and never logged.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor, as_completed

from cruxflow._extras import extra_hint
from cruxflow.llm.base import Backend, Completion, LLMError, Request, chat_messages, choice_grammar
from cruxflow.llm.openai_format import completion_from_choice

log = logging.getLogger(__name__)

# How each server family takes a constrained choice (the field goes into the request body).
CONSTRAINTS = ("none", "vllm", "llamacpp")


class OpenAIBackend(Backend):
    kind = "openai"

    def __init__(self, model: str, *, base_url: str, endpoint: str = "chat",
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 300.0,
                 max_retries: int = 5, concurrency: int = 8, constrain: str = "none",
                 extra_body: dict | None = None):
        super().__init__(model, endpoint=endpoint)
        if constrain not in CONSTRAINTS:
            raise LLMError(f"constrain must be one of {CONSTRAINTS}, not {constrain!r}")
        try:
            import openai
        except ImportError as e:
            raise LLMError(extra_hint("the openai backend", "llm", "openai")) from e
        self._openai = openai
        # Local servers take any key; the variable's value is never logged.
        key = os.environ.get(api_key_env) or "EMPTY"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s,
                                    max_retries=max_retries)
        self.base_url = base_url
        self.concurrency = max(1, int(concurrency))
        self.constrain = constrain
        self.extra_body = dict(extra_body or {})
        log.info("OpenAI-compatible server %s, model %s (key from $%s)", base_url, model,
                 api_key_env)

    def _extra(self, request: Request) -> dict:
        extra = dict(self.extra_body)
        choices = request.sampling.choices
        if choices and self.constrain == "vllm":
            extra["structured_outputs"] = {"choice": list(choices)}
        if self.constrain == "llamacpp":
            if choices:
                extra["grammar"] = choice_grammar(choices)
            # As in process: prefix reuse would make outputs depend on request order.
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
        try:
            if self.endpoint == "chat":
                if s.logprobs:
                    kwargs.update(logprobs=True, top_logprobs=s.logprobs)
                resp = self.client.chat.completions.create(
                    messages=chat_messages(request), **kwargs)
            else:
                if s.logprobs:
                    kwargs["logprobs"] = s.logprobs
                resp = self.client.completions.create(prompt=request.text, **kwargs)
        except self._openai.OpenAIError as e:
            raise LLMError(f"{self.base_url}: {type(e).__name__}: {e}") from e
        data = resp.model_dump()
        if not data.get("choices"):
            raise LLMError(f"{self.base_url}: response without choices")
        return completion_from_choice(data["choices"][0], data.get("usage"))

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

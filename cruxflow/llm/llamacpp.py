"""llama.cpp in process, through the prebuilt ``xllamacpp`` wheel (llama.cpp's own server code,
called without HTTP), and the same server on a port for the OpenAI-compatible backend."""

from __future__ import annotations

import logging
from pathlib import Path

from cruxflow._extras import extra, extra_hint
from cruxflow.data.limits import check_count
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
from cruxflow.weights import resolve_model

log = logging.getLogger(__name__)


def _params(model_path: str, *, n_ctx: int, threads: int, port: int = 0, host: str = "127.0.0.1",
            n_parallel: int = 1, verbose: bool = False):
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = model_path
    p.n_ctx = n_ctx * n_parallel  # the context is shared by the parallel slots
    p.n_parallel = n_parallel
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    # No busy-waiting between steps: with other jobs on the same cores (Snakemake runs several)
    # spinning threads slowed generation 2.5x in our measurement.
    p.cpuparams.poll = 0
    p.cpuparams_batch.poll = 0
    p.n_gpu_layers = 0
    p.verbosity = 1 if verbose else -1
    p.port = port
    p.hostnames = [host]
    return p


def gguf_path(model: str) -> str:
    """The GGUF file that ``model`` (a path or ``package:<module>/<file>``) names; a missing one
    is an :class:`LLMError` here rather than llama.cpp's "Failed to init" at load time."""
    try:
        path = resolve_model(model)
    except FileNotFoundError as e:
        raise LLMError(str(e)) from None
    if not Path(path).is_file():
        raise LLMError(f"model {model!r}: {path} does not exist (a GGUF file, or "
                       "package:<module>/<file>)")
    return path


class LlamaCppBackend(Backend):
    """A GGUF model on the CPU. ``model``: a path or ``package:<module>/<file>.gguf``."""

    kind = "llamacpp"

    def __init__(self, model: str, *, endpoint: str = "chat", n_ctx: int = 4096,
                 threads: int = 1, verbose: bool = False, prompt_cache: bool = False):
        super().__init__(model, endpoint=endpoint)
        self.prompt_cache = prompt_cache
        try:
            import xllamacpp
        except ImportError as e:
            raise LLMError(extra_hint("the llamacpp backend", "llm", "xllamacpp")) from e
        self._path = gguf_path(model)   # a missing model fails here, not at first use
        self._settings = {"n_ctx": check_count("n_ctx", n_ctx),
                          "threads": check_count("threads", threads), "verbose": verbose}
        self._xllamacpp = xllamacpp
        # The model is loaded on the first request: a job whose requests all come from the
        # cache never loads it. (It also avoids a hang in xllamacpp: destroying a Server
        # before it has answered anything can block forever in its destructor.)
        self._server = None
        self._closed = False

    def _loaded(self):
        if self._closed:
            raise LLMError("llama.cpp backend used after close()")
        if self._server is None:
            self._server = self._xllamacpp.Server(_params(self._path, **self._settings))
            log.info("llama.cpp: loaded %s (n_ctx %d, %d threads)", self._path,
                     self._settings["n_ctx"], self._settings["threads"])
        return self._server

    def _body(self, request: Request) -> dict:
        s = request.sampling
        # cache_prompt off by default: reusing the KV cache of the previous prompt's shared
        # prefix changes the numerics slightly (the prefix was computed in other batches), so
        # a near tie can flip with the request before it. The rating stages send their
        # requests in a fixed order (cruxflow.stages.ratings.request_order), so a run from
        # scratch stays reproducible with it on; docs/ratings.md measures the speed and the
        # flips (benchmarks/llm_ratings.py).
        # Text generation never reuses (may_reuse_prompt): its output must not depend on the
        # request before it, or a resumed job would differ from an uninterrupted one.
        body = {"max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p,
                "cache_prompt": bool(self.prompt_cache) and may_reuse_prompt(s)}
        if s.seed is not None:
            body["seed"] = s.seed
        if s.stop:
            body["stop"] = list(s.stop)
        if s.choices:
            body["grammar"] = choice_grammar(s.choices)
        if self.endpoint == "chat":
            body["messages"] = chat_messages(request)
            if s.logprobs:
                body.update(logprobs=True, top_logprobs=s.logprobs)
        else:
            body["prompt"] = request.text
            if s.logprobs:
                body["logprobs"] = s.logprobs
        return body

    def generate(self, requests: list[Request]) -> list[Completion]:
        return [c for _, c in self.generate_iter(requests)]

    def generate_iter(self, requests: list[Request]):
        server = self._loaded()
        for i, r in enumerate(requests):
            body = self._body(r)
            if self.endpoint == "chat":
                resp = server.handle_chat_completions(body)
            else:
                resp = server.handle_completions(body)
            if "error" in resp:
                err = resp["error"]
                raise LLMError(f"llama.cpp: {err.get('message', err)} "
                               f"(prompt starts {r.prompt[:80]!r})")
            yield i, completion_from_choice(resp["choices"][0], resp.get("usage"),
                                            resp.get("timings"))

    def close(self) -> None:
        self._server = None
        self._closed = True


def serve(model: str, *, host: str = "127.0.0.1", port: int = 8080, n_ctx: int = 4096,
          threads: int = 1, n_parallel: int = 1, verbose: bool = False):
    """Start llama.cpp's OpenAI-compatible HTTP server; returns the server object (keep it
    referenced: the server stops when it is garbage-collected)."""
    with extra(__name__, "llm"):
        import xllamacpp

    path = gguf_path(model)
    server = xllamacpp.Server(_params(path, n_ctx=n_ctx, threads=threads, port=port, host=host,
                                      n_parallel=n_parallel, verbose=verbose))
    return server

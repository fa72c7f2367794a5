"""The LLM layer: backends (llama.cpp in process, any OpenAI-compatible server, vLLM in process),
a shared persistent cache of calls, and the runner that puts them together.

``make_runner(config, name)`` builds what a workflow rule needs from the ``llm`` section of the
config (see ``cruxflow/schemas/config.schema.json``).
"""

from __future__ import annotations

from cruxflow.llm.base import (
    GENERATION,
    JUDGMENT,
    Backend,
    Completion,
    LLMError,
    Request,
    Sampling,
    backend_identity,
)
from cruxflow.llm.cache import LLMCache
from cruxflow.llm.runner import CallStats, LazyRunner, LLMRunner

__all__ = ["GENERATION", "JUDGMENT", "Backend", "CallStats", "Completion", "LLMCache",
           "LLMError", "LLMRunner", "LazyRunner", "Request", "Sampling", "backend_identity",
           "make_backend", "make_runner", "spec_identity"]

# Keys of a backend's config entry that are not constructor arguments.
_RUNNER_KEYS = {"kind", "model", "batch_size", "gpus", "mem_mb", "runtime", "model_revision"}


def make_backend(spec: dict, *, threads: int = 1) -> Backend:
    """A backend from one entry of ``llm.backends``."""
    try:
        backend = _make_backend(spec, threads)
    except TypeError as e:  # a key that this kind of backend does not take
        raise LLMError(f"LLM backend {spec.get('kind')!r}: {e}") from e
    if spec.get("model_revision") is not None:
        backend.model_revision = str(spec["model_revision"])
    return backend


def _make_backend(spec: dict, threads: int) -> Backend:
    kind = spec.get("kind")
    kwargs = {k: v for k, v in spec.items() if k not in _RUNNER_KEYS and v is not None}
    if kind == "llamacpp":
        from cruxflow.llm.llamacpp import LlamaCppBackend
        kwargs.setdefault("threads", threads)
        return LlamaCppBackend(spec["model"], **kwargs)
    if kind == "openai":
        from cruxflow.llm.openai_compat import OpenAIBackend
        return OpenAIBackend(spec["model"], **kwargs)
    if kind == "vllm":
        from cruxflow.llm.vllm_backend import VLLMBackend
        kwargs.setdefault("tensor_parallel_size", spec.get("gpus") or 1)
        return VLLMBackend(spec["model"], **kwargs)
    raise LLMError(f"unknown LLM backend kind {kind!r} (llamacpp, openai or vllm)")


def spec_identity(spec: dict) -> dict:
    """The cache-key identity of the backend that an ``llm.backends`` entry builds, without
    building it (no model is loaded, no server asked)."""
    revision = spec.get("model_revision")
    return backend_identity(spec["kind"], spec["model"], spec.get("endpoint") or "chat",
                            None if revision is None else str(revision))


def make_runner(llm_config: dict, backend_name: str, *, threads: int = 1,
                desc: str = "LLM") -> LLMRunner:
    backends = llm_config["backends"]
    if backend_name not in backends:
        raise LLMError(f"no LLM backend named {backend_name!r} in llm.backends "
                       f"(have: {', '.join(sorted(backends))})")
    spec = backends[backend_name]
    cache = LLMCache(llm_config["cache"]) if llm_config.get("cache") else None
    return LLMRunner(make_backend(spec, threads=threads), cache,
                     batch_size=spec.get("batch_size", 16), progress=True, desc=desc)

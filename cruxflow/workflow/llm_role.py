"""Resources and conda environment of the jobs that call one ``llm.backends`` entry.

The rules of the LLM stages (rules/generate.smk, rag.smk, beyond.smk, rerank.smk) ask a role
for their ``threads``, ``resources`` and ``conda`` per job: which backend a job uses depends on
its wildcards (a dataset's ``llm_backend``, ``rag.generator``, a reranker's ``llm_backend``...),
and what it needs depends on that backend's kind: llama.cpp runs on ``llm.threads`` CPU
threads, vLLM on its ``gpus`` in its own environment, a server costs one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The environments a role may choose, as rules name them (relative to rules/).
LLM_ENV = "../envs/llm.yaml"
VLLM_ENV = "../envs/vllm.yaml"
ENVS = (LLM_ENV, VLLM_ENV)
DEFAULT_MEM_MB = 4000
DEFAULT_RUNTIME = 720  # minutes


class LLMRole:
    """The backend that ``name(wildcards)`` picks from ``llm`` (the config's llm section) and
    what a job on it needs."""

    def __init__(self, llm: dict, name: Callable[[Any], str]):
        self.llm = llm
        self.name = name

    def spec(self, wildcards) -> dict:
        return self.llm["backends"][self.name(wildcards)]

    def threads(self, wildcards) -> int:
        return self.llm["threads"] if self.spec(wildcards)["kind"] == "llamacpp" else 1

    def gpus(self, wildcards) -> int:
        spec = self.spec(wildcards)
        return spec.get("gpus", 1) if spec["kind"] == "vllm" else 0

    def mem_mb(self, wildcards) -> int:
        return self.spec(wildcards).get("mem_mb", DEFAULT_MEM_MB)

    def runtime(self, wildcards) -> int:
        return self.spec(wildcards).get("runtime", DEFAULT_RUNTIME)

    def env(self, wildcards) -> str:
        """vLLM's own conda environment for vllm backends, the LLM one otherwise."""
        return VLLM_ENV if self.spec(wildcards)["kind"] == "vllm" else LLM_ENV

    @property
    def resources(self) -> dict[str, Callable[[Any], int]]:
        """A rule's ``resources:`` (``**role.resources``): GPUs, memory and runtime per job."""
        return {"gpu": self.gpus, "mem_mb": self.mem_mb, "runtime": self.runtime}

    @property
    def params(self) -> dict[str, Any]:
        """The ``params:`` every LLM rule passes its script (``**role.params``): the llm
        section and the job's backend name, which ``cruxflow.workflow.job`` builds the cached
        runner from."""
        return {"llm": self.llm, "backend": self.name}

"""Every reranker kind in one table: what builds it, what it needs, which options it takes.

``retrieval.rerankers.<name>.kind`` is looked up here by the factory
(:func:`cruxflow.rerank.factory.make_reranker`), the config check
(:func:`cruxflow.workflow.config.resolve`) and the workflow rules (``rules/rerank.smk`` picks
the rule, and with it the conda environment, by :attr:`Kind.env`). The JSON schema's kind enum
and option properties must agree with this table; tests/test_rerank_registry.py fails, naming
what to add, when they do not. docs/adding-a-reranker.md walks through adding a kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Keys every reranker entry may carry, whatever its kind: the rule's resources and device, the
# first stages it reranks (null: every one) and how deep (null: retrieval.depth).
COMMON = ("kind", "model", "gpus", "mem_mb", "runtime", "retrievers", "depth")
# Environments: "rerank" runs in envs/rerank.yaml (torch); "llm" in the LLM environment of the
# entry's llm backend (envs/llm.yaml, or envs/vllm.yaml for vllm backends).
ENVS = ("rerank", "llm")


@dataclass(frozen=True)
class Build:
    """What a builder gets besides the spec: the job's device, ``llm_runner(backend)`` for
    kinds that call an LLM through cruxflow's cached layer (``None``: the default one), and
    the topics' sub-questions."""

    device: str = "cpu"
    llm_runner: Callable[[str | None], Any] | None = None
    # The topics' own sub-questions by query text (for kinds that can reuse them).
    questions: Mapping[str, Sequence[str]] | None = None


@dataclass(frozen=True)
class Kind:
    """One reranker kind.

    ``builder``: ``"module:function"``, a function ``(spec, build) -> reranker`` called with the
    spec's options filled in from ``options``. ``extra``: the pip extra it needs. ``env``: see
    :data:`ENVS`. ``needs_gpu``: it cannot run on a CPU. ``needs_model``: the entry must name
    ``model`` (kinds that call an llm backend take the model from the backend).
    ``per_dataset``: one job reranks every first stage of a dataset with one loaded model, so
    that work which does not depend on the first stage is done once (MMR encodes a passage once
    however many first stages retrieve it: the demo's three pools share most passages).
    """

    name: str
    builder: str
    extra: str
    env: str
    options: Mapping[str, Any] = field(default_factory=dict)
    needs_gpu: bool = False
    needs_model: bool = True
    # An environment that some options choose instead (under envs/, without .yaml).
    env_of: Callable[[dict], str | None] | None = None
    alt_envs: tuple[str, ...] = ()   # every environment env_of may choose
    per_dataset: bool = False

    @property
    def module(self) -> str:
        return self.builder.partition(":")[0]

    def build(self, spec: dict, build: Build):
        from cruxflow._extras import extra

        module, _, function = self.builder.partition(":")
        # A dependency the module imports and the kind's extra installs: named in one line.
        with extra(f"reranker kind {self.name!r}", self.extra):
            builder = getattr(importlib.import_module(module), function)
        return builder(self.with_defaults(spec), build)

    def with_defaults(self, spec: dict) -> dict:
        """The spec with every option of this kind that it leaves out set to its default."""
        return {**self.options, **spec}


def _listwise_env(spec: dict) -> str | None:
    # FIRST and rank_llm's RankZephyr run in rank_llm's own environment (which pulls vLLM).
    return "rank_llm" if spec.get("engine", "cruxflow") == "rank_llm" else None


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("mmr", "cruxflow.rerank.mmr:from_spec", "rerank", "rerank",
         {"lambda": 0.5, "relevance": "cosine", "batch_size": 64}, per_dataset=True),
    Kind("cross-encoder", "cruxflow.rerank.cross_encoder:from_spec", "rerank", "rerank",
         {"batch_size": 32, "max_length": 512}),
    Kind("monot5", "cruxflow.rerank.monot5:from_spec", "rerank", "rerank",
         {"batch_size": 8, "max_length": 512, "dtype": "float32"}),
    Kind("setwise", "cruxflow.rerank.setwise:from_spec", "rerank", "rerank",
         {"num_child": 3, "k": 20, "passage_tokens": 128, "dtype": "float32"}),
    Kind("listwise", "cruxflow.rerank.listwise:from_spec", "llm", "llm",
         {"engine": "cruxflow", "first": False, "window": 20, "stride": 10, "max_words": 300,
          "max_tokens": 256, "batch_size": 32, "llm_backend": None, "base_url": None,
          "api_key_env": None},
         env_of=_listwise_env, alt_envs=("rank_llm",)),
    Kind("lancer", "cruxflow.rerank.lancer:from_spec", "llm", "llm",
         {"llm_backend": None, "subquestions": "generate", "n_subquestions": 2,
          "concat_original": None, "aggregation": "sum", "tau": 1, "max_words": None,
          "max_tokens": 512, "attempts": 3, "retry_temperature": 0.7},
         needs_model=False),
)}


def kind(name: str) -> Kind:
    """The kind called ``name``; a ValueError names the known kinds."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown reranker kind {name!r} (known kinds: "
                         f"{', '.join(KINDS)})") from None


def kinds_in_env(env: str) -> list[str]:
    """The kinds whose rule runs in ``env`` (one of :data:`ENVS`)."""
    if env not in ENVS:
        raise ValueError(f"unknown environment {env!r} (one of {', '.join(ENVS)})")
    return [k.name for k in KINDS.values() if k.env == env]


def per_dataset(spec: dict) -> bool:
    """Whether one job reranks every first stage of a dataset with ``spec`` (its kind's
    ``per_dataset``, and no ``retrievers`` option picking some of them)."""
    return kind(spec["kind"]).per_dataset and spec.get("retrievers") is None


def possible_envs(env: str) -> list[str]:
    """Every environment file a job of a kind that runs in ``env`` may use."""
    files = {"rerank": ["rerank.yaml"], "llm": ["llm.yaml", "vllm.yaml"]}[env]
    alt = {f"{a}.yaml" for n in kinds_in_env(env) for a in KINDS[n].alt_envs}
    return [*files, *sorted(alt)]


def uses_llm_backend(spec: dict) -> bool:
    """Whether the reranker calls an ``llm.backends`` entry through cruxflow's LLM layer (and
    so runs where that backend runs)."""
    k = kind(spec["kind"])
    return k.env == "llm" and not (k.env_of and k.env_of(spec))


def conda_env(spec: dict, llm: dict) -> str:
    """The conda environment file (under envs/) of the job that runs ``spec``; ``llm`` is the
    config's llm section, whose backend's kind picks the LLM environment."""
    k = kind(spec["kind"])
    own = k.env_of(spec) if k.env_of else None
    if own:
        return f"{own}.yaml"
    if not uses_llm_backend(spec):
        return f"{k.env}.yaml"
    backend = llm["backends"][spec.get("llm_backend") or llm["backend"]]
    return "vllm.yaml" if backend["kind"] == "vllm" else "llm.yaml"


def problems(name: str, spec: dict) -> list[tuple[str, str]]:
    """What is wrong with one ``retrieval.rerankers`` entry, as (key path, message)."""
    key = f"retrieval.rerankers.{name}"
    try:
        k = kind(spec.get("kind"))
    except ValueError as e:
        return [(f"{key}.kind", str(e))]
    out = []
    foreign = sorted(set(spec) - set(COMMON) - set(k.options))
    if foreign:
        out.append((key, f"option(s) {', '.join(foreign)} do not apply to kind {k.name!r} "
                         f"(its options: {', '.join(k.options) or 'none'})"))
    if k.needs_model and not spec.get("model"):
        out.append((f"{key}.model", f"kind {k.name!r} needs a model"))
    if k.needs_gpu and not spec.get("gpus"):
        out.append((f"{key}.gpus", f"kind {k.name!r} needs a GPU: set gpus (1 or more)"))
    return out

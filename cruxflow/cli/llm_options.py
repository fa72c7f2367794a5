"""The LLM options shared by the console commands that call a model (``cruxflow udcg``,
``cruxflow support``, ``cruxflow kpr``), so each picks its backend the same way:

- ``--model`` alone: a GGUF file (or ``package:<module>/<file>``) run in process by llama.cpp;
  the packaged SmolLM2 by default, so the commands work offline out of the box;
- ``--base-url URL --model NAME``: any OpenAI-compatible server (``vllm serve``, llama.cpp's
  server, a hosted API; the key from the environment variable ``--api-key-env`` names);
- ``--config config.yaml [--backend NAME]``: a backend of the workflow's ``llm`` section, with
  its cache, so the commands share calls with Snakemake runs.

Every call goes through the persistent cache (``--cache``; by default ``llm_cache.sqlite`` in
the command's output directory), so a re-run or a crash never pays twice. ``--timeout``,
``--max-retries`` and ``--constrain`` set (or, with ``--config``, override) how a server is
called (``--deadline`` bounds a request's attempts and waits together); each retry is logged
with its reason, and a run that gives up names the server, the bound it hit and what is
already cached. ``--model-revision`` joins the cache key (docs/llm.md, "the cache").
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary
from cruxflow.llm import LLMCache, LLMError, LLMRunner, make_backend
from cruxflow.llm.openai_compat import CONSTRAINTS
from cruxflow.weights import DEFAULT_GGUF

# Options that only a server (an ``openai`` backend) takes: option -> backend config key.
SERVER_OPTIONS = {"timeout": "timeout_s", "deadline": "deadline_s", "max_retries": "max_retries",
                  "constrain": "constrain"}


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("LLM (the same options for judge, udcg, support and kpr)")
    add = partial(vocabulary.add, g)
    add("model", default=None, default_text=DEFAULT_GGUF)
    add("base-url")
    add("api-key-env")
    add("endpoint")
    add("config", default=None, default_text="none", detail="use a backend of its llm section")
    add("backend", default=None, default_text="the config's llm.backend",
        detail="one of --config's")
    add("cache")
    add("threads")
    add("n-ctx")
    add("timeout")
    add("deadline")
    add("max-retries")
    add("constrain", choices=CONSTRAINTS, default=None)
    add("model-revision")


def runner_from_args(args: argparse.Namespace, *, default_cache: Path | None,
                     desc: str = "LLM") -> LLMRunner:
    """The runner the LLM options ask for. ``default_cache``: where the cache goes when
    neither ``--cache`` nor a config names one (``None``: no cache)."""
    if args.config is not None:
        from cruxflow.data.io import read_yaml

        if args.model or args.base_url:
            raise LLMError("give either --config or --model/--base-url, not both")
        config = read_yaml(args.config) or {}
        if not isinstance(config, dict):
            raise LLMError(f"{args.config}: expected a workflow config (a mapping with an llm "
                           "section)")
        llm = config.get("llm") or {}
        name = args.backend or llm.get("backend")
        backends = llm.get("backends") or {}
        if name not in backends:
            raise LLMError(f"{args.config}: no LLM backend {name!r} in llm.backends "
                           f"(have: {', '.join(sorted(backends)) or 'none'})")
        spec = backends[name]
        cache_path = args.cache or llm.get("cache") or default_cache
    else:
        if args.backend:
            raise LLMError("--backend needs --config")
        if args.base_url:
            if not args.model:
                raise LLMError("--base-url needs --model (the served model's name)")
            spec = {"kind": "openai", "model": args.model, "base_url": args.base_url,
                    "endpoint": args.endpoint, "api_key_env": args.api_key_env}
        else:
            spec = {"kind": "llamacpp", "model": args.model or DEFAULT_GGUF,
                    "endpoint": args.endpoint, "n_ctx": args.n_ctx}
        cache_path = args.cache or default_cache
    spec = {**spec, **_overrides(args, spec)}
    backend = make_backend(spec, threads=args.threads)
    cache = None
    if cache_path is not None:
        cache = LLMCache(cache_path)
    return LLMRunner(backend, cache, batch_size=spec.get("batch_size", 16), progress=True,
                     desc=desc)


def _overrides(args: argparse.Namespace, spec: dict) -> dict:
    """The backend config keys that the command line sets; server options on a backend that
    is no server are an error rather than ignored."""
    out = {}
    for option, key in SERVER_OPTIONS.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        if spec.get("kind") != "openai":
            flag = "--" + option.replace("_", "-")
            raise LLMError(f"{flag} applies to an OpenAI-compatible server (--base-url, or an "
                           f"openai backend of --config), not to a {spec.get('kind')} backend")
        out[key] = value
    if getattr(args, "model_revision", None) is not None:
        out["model_revision"] = args.model_revision
    return out


def add_role_arguments(parser: argparse.ArgumentParser, role: str, what: str) -> None:
    """``--ROLE-model``, ``--ROLE-base-url``, ``--ROLE-backend``: another LLM for one step of a
    command (``what``), by default the one of the LLM options. The other LLM options
    (``--threads``, ``--cache``, ``--config``, ...) are shared."""
    g = parser.add_argument_group(f"{role} LLM ({what}; default: the LLM above)")
    for option in ("model", "base-url", "backend"):
        vocabulary.add(g, f"{role}-{option}")


def role_runner_factory(args: argparse.Namespace, role: str, *, default_cache: Path | None,
                        desc: str):
    """A zero-argument function building the runner that ``--ROLE-*`` asks for, or ``None``
    when none of them is given (the step then uses the main LLM)."""
    model, base_url, backend = (getattr(args, f"{role}_{k}".replace("-", "_"))
                                for k in ("model", "base_url", "backend"))
    if not (model or base_url or backend):
        return None
    ns = argparse.Namespace(**vars(args))
    if backend:
        ns.backend = backend
    else:
        ns.config, ns.backend, ns.model, ns.base_url = None, None, model, base_url
        if not base_url:  # in process: the server options were given for the main LLM's server
            for option in SERVER_OPTIONS:
                setattr(ns, option, None)
    return lambda: runner_from_args(ns, default_cache=default_cache, desc=desc)

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
import os
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.llm import LLMCache, LLMError, LLMRunner, make_backend
from cruxflow.llm.openai_compat import CONSTRAINTS
from cruxflow.weights import DEFAULT_GGUF

# Options that only a server (an ``openai`` backend) takes: option -> backend config key.
SERVER_OPTIONS = {"timeout": "timeout_s", "deadline": "deadline_s", "max_retries": "max_retries",
                  "constrain": "constrain"}


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("LLM (the same options for udcg, support and kpr)")
    g.add_argument("--model",
                   help=f"GGUF path or package:<module>/<file> for llama.cpp, or the served "
                        f"model name with --base-url (default {DEFAULT_GGUF})")
    g.add_argument("--base-url", type=types.base_url,
                   help="OpenAI-compatible server, e.g. http://host:8000/v1")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the key for --base-url")
    g.add_argument("--endpoint", choices=["chat", "completion"], default="chat")
    g.add_argument("--config", type=Path,
                   help="a workflow config.yaml: use a backend of its llm section")
    g.add_argument("--backend", help="backend name in --config (default: its llm.backend)")
    g.add_argument("--cache", type=Path,
                   help="LLM call cache (SQLite; default: llm_cache.sqlite in --output, or "
                        "the config's llm.cache with --config)")
    g.add_argument("--threads", type=types.positive_int, default=os.cpu_count() or 1,
                   help="CPU threads for llama.cpp")
    g.add_argument("--n-ctx", type=types.positive_int, default=4096,
                   help="llama.cpp context window")
    g.add_argument("--timeout", type=types.positive_number, metavar="SECONDS",
                   help="the time one attempt at a request may take on the wall clock: "
                        "connecting, sending and the whole answer (default 300)")
    g.add_argument("--deadline", type=types.positive_number, metavar="SECONDS",
                   help="the time one request may take in all: every attempt and every wait "
                        "between them, a server's Retry-After included (default: what the "
                        "attempts and their backoffs can take)")
    g.add_argument("--max-retries", type=types.non_negative_int, metavar="N",
                   help="retries of a request after a timeout, a connection error, 429 or 5xx, "
                        "each logged with its reason and wait (default 5)")
    g.add_argument("--constrain", choices=CONSTRAINTS,
                   help="how the server takes a constrained choice (the 0-5 ratings): vllm's "
                        "structured_outputs, a llama.cpp grammar, or none (default none)")
    g.add_argument("--model-revision", metavar="ID",
                   help="a fingerprint of the weights (commit hash, file checksum) kept in the "
                        "cache key, so another model served under the same --model name never "
                        "reuses this one's answers")


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
    g.add_argument(f"--{role}-model", help="GGUF for llama.cpp, or the served model's name "
                                           f"with --{role}-base-url")
    g.add_argument(f"--{role}-base-url", type=types.base_url,
                   help=f"OpenAI-compatible server of the {role} LLM")
    g.add_argument(f"--{role}-backend", help="a backend of --config's llm section")


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

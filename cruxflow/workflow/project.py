"""``cruxflow init DIR``: a starting project for one's own documents (docs/own-data.md).

The project's ``config.yaml`` is the workflow's own ``config.yaml`` with its demo parts replaced:
``datasets`` names one's corpus (``format: documents``), ``llm`` chooses a backend among a served
one (OpenAI-compatible: ``cruxflow llm-serve``, vLLM's server), the packaged SmolLM2 in process
and, commented out, vLLM in process; ``rag.datasets`` runs RAG on it and ``beyond`` and ``runs``
start empty. Every other value (metrics, retrievers, rerankers, context sizes, sampling, RAG
bounds) is copied from the workflow's config, so the project runs with the same defaults as the
demo, including under ``--replace-workflow-config``: one source, nothing silently different.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from cruxflow.data.errors import DataError
from cruxflow.data.io import atomic_write, read_yaml

WORKFLOW = Path(__file__).resolve().parents[2]
EXAMPLE = WORKFLOW / "resources" / "own-data" / "constitution"
BACKENDS = ("served", "smollm2", "vllm")
# What the project changes in the workflow's config; tests/test_init.py checks all else is equal.
REPLACED = ("datasets", "llm.backend", "llm.backends", "llm.cache", "rag.datasets", "beyond",
            "runs")

SERVED = {
    "kind": "openai",
    "model": "SmolLM2-135M-Instruct",
    "base_url": "http://127.0.0.1:8080/v1",
    "endpoint": "chat",
    "constrain": "llamacpp",
    "prompt_cache": True,
}
VLLM_COMMENTED = """\
    # vLLM in this process, on GPUs (pip install 'cruxflow[vllm]'; the weights must be local):
    # vllm:
    #   kind: vllm
    #   model: meta-llama/Llama-3.1-8B-Instruct
    #   endpoint: completion
    #   gpus: 1
    #   max_model_len: 8192
    #   batch_size: 1024
"""


def workflow_config(workflow: Path = WORKFLOW) -> dict:
    path = Path(workflow) / "config.yaml"
    if not path.is_file() or not (Path(workflow) / "Snakefile").is_file():
        raise DataError("not a cruxflow workflow folder (no Snakefile and config.yaml): pass "
                        "--workflow with the folder of a cruxflow checkout", path=workflow)
    return read_yaml(path)


def project_config(base: dict, *, name: str, input_path: str, backend: str,
                   n_questions: int | None = None) -> dict:
    """The project's config: ``base`` (the workflow's) with the parts in :data:`REPLACED`."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    dataset = {"format": "documents", "input": input_path, "prefix": name}
    if n_questions is not None:
        dataset["n_questions"] = n_questions
    config = {"datasets": {name: dataset}}
    for key, value in base.items():
        if key not in config:
            config[key] = value
    llm = dict(base["llm"])
    # the in-process llama.cpp backend of the workflow (SmolLM2), beside the served one
    in_process = dict(base["llm"]["backends"])
    llm.update(cache="results/llm_cache.sqlite",
               backend=backend,
               backends={"served": dict(SERVED), **in_process})
    if backend == "vllm":
        llm["backends"]["vllm"] = {"kind": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct",
                                   "endpoint": "completion", "gpus": 1, "max_model_len": 8192,
                                   "batch_size": 1024}
    config["llm"] = llm
    config["rag"] = {**base["rag"], "datasets": [name]}
    config["runs"], config["beyond"] = {}, {}
    return config


def _section(key: str, value) -> str:
    return yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=96)


def render(config: dict, *, snakefile: Path) -> str:
    """The config as commented YAML."""
    name = next(iter(config["datasets"]))
    head = f"""\
# A cruxflow project for one's own documents, written by `cruxflow init` (docs/own-data.md).
# Run it from this folder:
#   snakemake -s {snakefile} --directory . \\
#     --configfile config.yaml --replace-workflow-config --cores 2
# Everything but `datasets`, the LLM backend, `rag.datasets`, `runs` and `beyond` is a copy of
# the workflow's own config.yaml: the same retrievers, rerankers, metrics and defaults as the
# demo. Edit freely; the keys are documented in cruxflow/schemas/config.schema.json.

# Your topics: a .jsonl file of topics or a folder of topic folders (docs/own-data.md, "Input").
# A topic that brings its request.txt / questions.txt keeps them; one with a reference.txt gets
# them generated from it (the paper's method); one with neither, from its documents.
# `distractors: FILE.jsonl` adds unrelated articles to the collection (optional).
"""
    llm = _section("llm", config["llm"])
    comment = ("  # served: an OpenAI-compatible server, e.g. `cruxflow llm-serve --port 8080`\n"
               "  # (the packaged SmolLM2 through llama.cpp's server) or `vllm serve MODEL`;\n"
               "  # smollm2: llama.cpp in this process, nothing to start.\n")
    llm = llm.replace("\n  backend:", "\n" + comment + "  backend:", 1)
    llm = llm.replace("\n  backends:\n", "\n  backends:\n" + VLLM_COMMENTED, 1)
    parts = [head + _section("datasets", config["datasets"])]
    for key, value in config.items():
        if key == "datasets":
            continue
        if key == "llm":
            parts.append(llm)
        elif key == "runs":
            parts.append("# Runs of your own to score: {" + name + ": {name: path to a TREC run "
                         "file}}.\n" + _section(key, value))
        else:
            parts.append(_section(key, value))
    return "\n".join(parts)


def init_project(directory, *, name: str = "own", input_path: str | None = None,
                 example: bool = False, backend: str = "served", n_questions: int | None = None,
                 workflow: Path = WORKFLOW, force: bool = False) -> Path:
    """Write ``directory/config.yaml`` (and with ``example`` a copy of the shipped corpus under
    ``directory/data``); return the config's path."""
    target = Path(directory)
    config_path = target / "config.yaml"
    if config_path.exists() and not force:
        raise DataError("exists: refusing to overwrite it (pass --force)", path=config_path)
    if example and input_path is not None:
        raise DataError("give either an input or the example corpus, not both", field="input")
    base = workflow_config(workflow)
    if example:
        input_path = "data"
        data = target / "data"
        if data.exists() and not force:
            raise DataError("exists: refusing to overwrite it (pass --force)", path=data)
    elif input_path is None:
        input_path = "data"
    config = project_config(base, name=name, input_path=input_path, backend=backend,
                            n_questions=n_questions)
    text = render(config, snakefile=(Path(workflow) / "Snakefile").resolve())
    target.mkdir(parents=True, exist_ok=True)
    if example:
        shutil.copytree(EXAMPLE, target / "data", dirs_exist_ok=True)
    with atomic_write(config_path) as f:
        f.write(text)
    return config_path

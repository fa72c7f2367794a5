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

import os
import shutil
from pathlib import Path

import yaml

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.documents import IRDS_PREFIX
from cruxflow.data.io import read_yaml
from cruxflow.data.outputs import atomic_directory, atomic_write, ensure_dir

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
                   n_questions: int | None = None, prompt_cache: bool = False,
                   questions_from: str = "documents") -> dict:
    """The project's config: ``base`` (the workflow's) with the parts in :data:`REPLACED`.
    ``prompt_cache`` (what it buys and costs: ``cruxflow init --prompt-cache``'s help) is
    written on every llama.cpp backend, off by default: a resumed run then writes what an
    uninterrupted one writes, byte for byte."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    dataset = {"format": "documents", "input": input_path, "prefix": name}
    if n_questions is not None:
        dataset["n_questions"] = n_questions
    if questions_from != "documents":   # the authors' Researchy way (docs/own-data.md)
        dataset["questions_from"] = questions_from
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
    for spec in llm["backends"].values():   # the llama.cpp ones: in process or served
        if spec.get("kind") == "llamacpp" or spec.get("constrain") == "llamacpp":
            spec["prompt_cache"] = bool(prompt_cache)
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
                 workflow: Path = WORKFLOW, force: bool = False,
                 prompt_cache: bool = False, questions_from: str = "documents") -> Path:
    """Write ``directory/config.yaml`` (and with ``example`` a copy of the shipped corpus under
    ``directory/data``); return the config's path. A given ``input_path`` must exist: a
    relative one is read from the current folder, as any path a command is given, and written
    into the config relative to the project folder (which the workflow reads it from). Whole
    or nothing: a full or read-only disk leaves no folder or file of the project behind."""
    target = Path(directory)
    config_path = target / "config.yaml"
    if config_path.exists() and not force:
        raise DataError("exists: refusing to overwrite it (pass --force)", path=config_path)
    if example and input_path is not None:
        raise DataError("give either an input or the example corpus, not both", field="input")
    if input_path is not None and not str(input_path).startswith(IRDS_PREFIX):
        input_path = from_project(input_path, target)
    base = workflow_config(workflow)
    if example:
        input_path = "data"
        data = target / "data"
        if data.exists() and not force:
            raise DataError("exists: refusing to overwrite it (pass --force)", path=data)
    elif input_path is None:
        input_path = "data"
    config = project_config(base, name=name, input_path=input_path, backend=backend,
                            n_questions=n_questions, prompt_cache=prompt_cache,
                            questions_from=questions_from)
    text = render(config, snakefile=(Path(workflow) / "Snakefile").resolve())
    made = next((p for p in reversed([target, *target.parents]) if not p.exists()), None)
    ensure_dir(target)
    try:
        if example:
            _copy_example(target / "data")
        with atomic_write(config_path) as f:
            f.write(text)
    except BaseException:
        if made is not None:   # the folders this call made, with what it put there
            shutil.rmtree(made, ignore_errors=True)
        raise
    return config_path


def from_project(input_path, project: Path) -> str:
    """``input_path``, given where the user stands (a relative path is read from the current
    folder), as the project's config says it: relative to the project folder, or absolute as
    given. One that does not exist is refused, naming where it was looked for."""
    given = Path(input_path)
    if not os.path.lexists(given):
        raise DataError("no such file or folder (a .jsonl file of topics or a folder of topic "
                        "folders; a relative path is read from the current folder, "
                        f"{Path.cwd()})", path=input_path)
    if given.is_absolute():
        return str(given)
    return os.path.relpath(given.absolute(), project.absolute())


def _copy_example(data: Path) -> None:
    """The example corpus into ``data``: a new folder whole or not at all; an existing one
    (``--force``) file by file. The first file the system refuses stops the copy with one
    line (``shutil.copytree`` would go on and gather a list of them)."""
    def copy(src, dst):
        try:
            return shutil.copy2(src, dst)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise DataError(f"cannot copy the example corpus: {reason}", path=data) from None

    try:
        if data.exists():
            shutil.copytree(EXAMPLE, data, dirs_exist_ok=True, copy_function=copy)
            return
        with atomic_directory(data) as tmp:
            shutil.copytree(EXAMPLE, tmp, dirs_exist_ok=True, copy_function=copy)
    except OSError as exc:   # a folder that could not be made
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise DataError(f"cannot copy the example corpus: {reason}", path=data) from None

"""``cruxflow init DIR``: write a starting project for one's own documents (docs/own-data.md)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary
from cruxflow.data.ingest.documents import IRDS_PREFIX
from cruxflow.workflow.project import BACKENDS, WORKFLOW, from_project, init_project


def _cmd_init(args) -> int:
    path = init_project(args.directory, name=args.dataset_name, input_path=args.input,
                        example=args.example, backend=args.backend,
                        n_questions=args.n_questions, questions_from=args.questions_from,
                        workflow=args.workflow, force=args.force,
                        prompt_cache=args.prompt_cache)
    snakefile = (Path(args.workflow) / "Snakefile").resolve()
    print(f"wrote {path}")
    if args.input is not None and not args.input.startswith(IRDS_PREFIX):
        written = from_project(args.input, path.parent)   # where the workflow reads it from
        if written != args.input:
            print(f"the config reads your input {args.input} as {written}, relative to "
                  f"{path.parent}")
    if args.example:
        print(f"copied the example corpus to {path.parent / 'data'}")
    if args.backend == "served":
        print("start the model server first, e.g.: cruxflow llm-serve --port 8080")
    print(f"then, in {path.parent}:\n  snakemake -s {snakefile} --directory . "
          "--configfile config.yaml --replace-workflow-config --cores 2")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow init`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "init",
        description="Write DIR/config.yaml: a workflow config for your own topics and "
                    "documents (ingested with --format documents), with an LLM backend, ready "
                    "for `snakemake`. See docs/own-data.md.")
    p.add_argument("directory", type=Path, help="the project folder (made if missing)")
    add = partial(vocabulary.add, p)
    add("dataset-name")
    add("input", default_text="data in the project folder",
        detail="here your topics: a .jsonl file or a folder of topic folders (a relative path "
               "is read from the current folder, and written into the config relative to the "
               "project folder)")
    add("example")
    add("backend", choices=BACKENDS, default="served",
        detail="served: an OpenAI-compatible server (cruxflow llm-serve, vLLM's); smollm2: the "
               "packaged SmolLM2 with llama.cpp in process; vllm: vLLM in process")
    add("n-questions")
    add("questions-from", default="documents",
        detail="request: the CRUX authors' Researchy way, for topics that bring a request "
               "(and may bring no documents); their ratings are those of the pool of the "
               "first stages' top k (config key holes)")
    add("workflow", default=WORKFLOW, default_text="this checkout")
    add("prompt-cache")
    add("force")
    p.set_defaults(func=_cmd_init)

"""``cruxflow init DIR``: write a starting project for one's own documents (docs/own-data.md)."""

from __future__ import annotations

from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.workflow.project import BACKENDS, PROMPT_CACHE_HELP, WORKFLOW, init_project


def _cmd_init(args) -> int:
    path = init_project(args.directory, name=args.name, input_path=args.input,
                        example=args.example, backend=args.backend, n_questions=args.questions,
                        workflow=args.workflow, force=args.force,
                        prompt_cache=args.prompt_cache)
    snakefile = (Path(args.workflow) / "Snakefile").resolve()
    print(f"wrote {path}")
    if args.example:
        print(f"copied the example corpus to {path.parent / 'data'}")
    if args.backend == "served":
        print("start the model server first, e.g.: cruxflow llm-serve --port 8080")
    print(f"then, in {path.parent}:\n  snakemake -s {snakefile} --directory . "
          "--configfile config.yaml --replace-workflow-config --cores 2")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow init`` to the CLI's subparsers."""
    p = subparsers.add_parser("init", help="write a starting project for your own documents")
    p.add_argument("directory", type=Path, help="project folder (made if missing)")
    p.add_argument("--name", type=types.name, default="own",
                   help="the dataset's name (output paths) and distractor prefix (default: own)")
    p.add_argument("--input", help="your topics: a .jsonl file or a folder of topic folders, "
                                   "relative to the project folder or absolute (default: data)")
    p.add_argument("--example", action="store_true",
                   help="copy the shipped example corpus (excerpts of the US Constitution) to "
                        "DIR/data and use it")
    p.add_argument("--backend", choices=BACKENDS, default="served",
                   help="served: an OpenAI-compatible server (cruxflow llm-serve, vLLM's); "
                        "smollm2: the packaged SmolLM2 with llama.cpp in process; vllm: vLLM "
                        "in process (default: served)")
    p.add_argument("--questions", type=types.positive_int,
                   help="sub-questions to generate per topic (default: 10, as for Multi-News)")
    p.add_argument("--workflow", type=Path, default=WORKFLOW,
                   help="the cruxflow checkout whose Snakefile and config.yaml to use")
    p.add_argument("--prompt-cache", action="store_true", help=PROMPT_CACHE_HELP)
    p.add_argument("--force", action="store_true", help="overwrite an existing config.yaml")
    p.set_defaults(func=_cmd_init)

"""cruxflow's console commands, one module per command. Each module parses its arguments, calls
the library and prints; nothing outside this package imports it.

``cruxflow init``      write a starting project for one's own documents (docs/own-data.md)
``cruxflow ingest``    read a raw corpus into the CRUX data model (docs/data-model.md)
``cruxflow export``    a dataset's sub-questions and ratings as nuggets (docs/nuggets.md)
``cruxflow evaluate``  score a retrieval run or contexts against a dataset (docs/evaluate.md)
``cruxflow crux-eval`` the CRUX authors' evaluation script, reproduced (docs/evaluate.md)
``cruxflow agreement`` the LLM judge against human labels (docs/human-labels.md)
``cruxflow annotate``  collect human labels in a web app (docs/annotate.md)
``cruxflow meta-eval`` the judge against annotators, items and rankings (docs/judge-trust.md)
``cruxflow ppi``       a judge's mean corrected by human labels (docs/judge-trust.md)
``cruxflow udcg``      UDCG of retrieved contexts (docs/udcg.md)
``cruxflow support``   TREC 2024 RAG support of cited answers (docs/support.md)
``cruxflow kpr``       Long2RAG key point recall of responses (docs/kpr.md)
``cruxflow plan``      requests, tokens and time or cost of the LLM stages (docs/plan.md)
``cruxflow llm-serve`` serve a GGUF model with llama.cpp's OpenAI-compatible server
"""

from __future__ import annotations

import importlib
import sys

from cruxflow._extras import extra_for
from cruxflow.cli.args import OneLineParser
from cruxflow.data.errors import DataError
from cruxflow.llm import LLMError

DESCRIPTION = ("cruxflow: evaluate retrieval for long-form RAG (CRUX and beyond). Each command "
               "has its own --help.")
# Command modules in the order of ``cruxflow --help``; each has ``add_command(subparsers)``.
COMMANDS = ("init", "ingest", "export", "evaluate", "crux_eval", "agreement", "annotate",
            "meta_eval", "ppi", "udcg", "support", "kpr", "plan", "llm_serve")


def build_parser(only: str | None = None) -> OneLineParser:
    """The CLI's parser; with ``only`` (a command's module name) just that command's, so that
    running one command does not import every other's dependencies (pandas, scipy: about
    half a second)."""
    from cruxflow import __version__

    parser = OneLineParser(prog="cruxflow", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"cruxflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"cruxflow.cli.{name}").add_command(sub)
    return parser


def _command(argv) -> str | None:
    """The module of the command ``argv`` names first, or None (help, version, a typo)."""
    first = next((a for a in argv if not a.startswith("-")), None) if argv else None
    name = first.replace("-", "_") if first else None
    return name if name in COMMANDS and argv[0] == first else None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(argv)).parse_args(argv)
    try:
        return args.func(args)
    except (DataError, LLMError) as exc:
        print(f"cruxflow: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:   # an optional dependency missing: say which extra, no traceback
        message = extra_for(exc, f"cruxflow {args.command}")
        if message is None:
            raise
        print(f"cruxflow: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

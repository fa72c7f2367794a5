"""cruxflow's console commands, one module per command. Each module parses its arguments, calls
the library and prints; nothing outside this package imports it.

``cruxflow init``      write a starting project for one's own documents (docs/own-data.md)
``cruxflow ingest``    read a raw corpus into the CRUX data model (docs/data-model.md)
``cruxflow export``    a dataset's sub-questions and ratings as nuggets (docs/nuggets.md)
``cruxflow evaluate``  score a retrieval run or contexts against a dataset (docs/evaluate.md)
``cruxflow crux-eval`` the CRUX authors' evaluation script, reproduced (docs/evaluate.md)
``cruxflow judge``     rate the unjudged passages in runs' top k (docs/judge.md)
``cruxflow agreement`` any label sets or leaderboards compared, with intervals (docs/judge-trust.md)
``cruxflow annotate``  collect human labels in a web app (docs/annotate.md)
``cruxflow meta-eval`` the old name of agreement
``cruxflow ppi``       a judge's mean corrected by human labels (docs/judge-trust.md)
``cruxflow udcg``      UDCG of retrieved contexts (docs/udcg.md)
``cruxflow support``   TREC 2024 RAG support of cited answers (docs/support.md)
``cruxflow kpr``       Long2RAG key point recall of responses (docs/kpr.md)
``cruxflow plan``      requests, tokens and time or cost of the LLM stages (docs/plan.md)
``cruxflow llm-serve`` serve a GGUF model with llama.cpp's OpenAI-compatible server
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from cruxflow._extras import extra_for
from cruxflow.cli import vocabulary
from cruxflow.cli.args import OneLineParser
from cruxflow.data.errors import DataError
from cruxflow.data.io import check_outputs, inputs_protected, outputs_together, same_file

DESCRIPTION = ("cruxflow: evaluate retrieval for long-form RAG (CRUX and beyond). Each command "
               "has its own --help; a flag means the same in every command "
               "(cruxflow/cli/vocabulary.py).")
# Command modules in the order of ``cruxflow --help``, each with its one-line help (the
# command's parser takes it from here: vocabulary.command); each module has
# ``add_command(subparsers)``.
COMMANDS = {
    "init": "write a starting project for your own documents",
    "ingest": "read a corpus into the CRUX data model",
    "export": "write a dataset's sub-questions and ratings as AutoNuggetizer or NuggetBank "
              "nuggets",
    "evaluate": "score a retrieval run or contexts against a dataset",
    "crux_eval": "the CRUX authors' evaluation script (P, nDCG, alpha-nDCG, Cov @10)",
    "judge": "rate the unjudged passages in runs' top k (the holes)",
    "agreement": "any two label sets or leaderboards compared, items and rankings, with "
                 "intervals (which judge can I trust)",
    "annotate": "collect human labels in a web app (paper App. A.2)",
    "meta_eval": "the old name of agreement (the same flags)",
    "ppi": "a judge's mean corrected by a few human labels, with an interval (PPI)",
    "udcg": "UDCG (Trappolini et al. 2025): utility- and distraction-aware scores of retrieved "
            "contexts, and their correlation with RAG answers",
    "support": "support of RAG answers by their citations (TREC 2024 RAG Track)",
    "kpr": "Long2RAG key point recall (KPR, KPP, KPF) of responses",
    "plan": "requests, cached answers, tokens and time or cost of the LLM stages",
    "llm_serve": "serve a GGUF model with llama.cpp's OpenAI-compatible server",
}


def build_parser(only: str | None = None, *, summary: bool = False) -> OneLineParser:
    """The CLI's parser; with ``only`` (a command's module name) just that command's, so that
    running one command does not import every other's dependencies (pandas, scipy: about
    half a second). ``summary``: each command by name and help line only (no module
    imported, numpy neither), enough for ``cruxflow --help``, ``--version`` and a mistyped
    command."""
    from cruxflow import __version__

    parser = OneLineParser(prog="cruxflow", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"cruxflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS if only is None else (only,):
        if summary:
            sub.add_parser(name.replace("_", "-"), help=COMMANDS[name], add_help=False)
        else:
            importlib.import_module(f"cruxflow.cli.{name}").add_command(sub)
    if not summary:
        for name, command in sub.choices.items():   # renamed flags: refused, or still accepted
            vocabulary.add_old_spellings(command, name)
    return parser


def _command(argv) -> str | None:
    """The module of the command ``argv`` names first, or None (help, version, a typo)."""
    first = next((a for a in argv if not a.startswith("-")), None) if argv else None
    name = first.replace("-", "_") if first else None
    return name if name in COMMANDS and argv[0] == first else None


# Options whose path a command writes (a file, or a folder it writes ``args.writes`` into).
OUTPUT_OPTIONS = ("output", "cache", "db", "export")


def _paths(value):
    """The paths an option's value names: a Path, a string naming an existing file or folder
    (or ``NAME=PATH``), or a list of these."""
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, Path):
            yield item
        elif isinstance(item, str) and item:
            for text in (item, item.partition("=")[2]):
                if text and os.path.lexists(text):
                    yield Path(text)
                    break


def _inputs_and_outputs(args):
    inputs, outputs = [], []
    for dest, value in vars(args).items():
        if dest in ("func", "writes", "command"):
            continue
        option = "--" + dest.replace("_", "-")
        if dest in OUTPUT_OPTIONS:
            outputs += [(p, option, tuple(getattr(args, "writes", ())) if dest == "output"
                         else ()) for p in _paths(value) if isinstance(value, Path)]
        else:
            inputs += [(p, option) for p in _paths(value)]
    return inputs, outputs


def _refuse_outputs_inside_datasets(outputs, inputs) -> None:
    """No output lies inside a dataset the command reads: a folder given as ``--dataset``, or
    one with ingest's manifest that holds an input (``--run data/judgments/eta3/oracle.run``).
    The dataset would then hold files that are not its own, and a later ``ingest --output``
    over it would refuse to replace it."""
    datasets: dict[Path, str] = {}
    for path, option in inputs:
        if option == "--dataset" and path.is_dir():
            datasets.setdefault(path, option)
        for folder in (path, *path.absolute().parents):
            if (folder / "manifest.json").is_file():
                datasets.setdefault(folder, f"of {option}")
    if not datasets:
        return
    from cruxflow.data.ingest import is_our_manifest

    for out, option, _ in outputs:
        for folder, named in datasets.items():
            if named != "--dataset" and not is_our_manifest(folder / "manifest.json"):
                continue
            if same_file(out, folder) or any(same_file(parent, folder)
                                             for parent in Path(out).absolute().parents):
                raise DataError(f"lies inside the dataset {named} {folder}: choose another "
                                f"{option} outside it", path=out)


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors a user's input or setup causes, printed as one line: DataError, and
    LLMError where the LLM layer was imported (only it raises one; importing it for this
    would add a tenth of ``crux-eval``'s start to every command)."""
    llm = sys.modules.get("cruxflow.llm")
    return (DataError,) if llm is None else (DataError, llm.LLMError)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    if command is None:     # help, version or a mistake: argparse exits on the summary
        build_parser(summary=True).parse_args(argv)
    args = build_parser(command).parse_args(argv)
    try:
        inputs, outputs = _inputs_and_outputs(args)
        check_outputs(outputs, inputs)
        _refuse_outputs_inside_datasets(outputs, inputs)
        with inputs_protected(inputs), outputs_together():
            return args.func(args)
    except _user_errors() as exc:
        print(f"cruxflow: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:   # an optional dependency missing: say which extra, no traceback
        message = extra_for(exc, f"cruxflow {args.command}")
        if message is None:
            raise
        print(f"cruxflow: error: {message}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        # A command's usage error, raised as SystemExit("cruxflow X: ..."): one line and exit 2
        # like argparse's, not Python's exit 1 for a message
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            exc.code = 2
        raise
    except KeyboardInterrupt:  # Ctrl-C: every writer is atomic, so nothing half-written
        print("cruxflow: interrupted; outputs written before stay as they were",
              file=sys.stderr)
        return 130
    except OSError as exc:  # the system refused (disk full, read-only, ...): not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cruxflow: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""cruxflow's console commands, one module per command. Each module parses its arguments, calls
the library and prints; nothing outside this package imports it.

``cruxflow init``      write a starting project for one's own documents (docs/own-data.md)
``cruxflow fetch``     download the field's released sets by name (docs/released-data.md)
``cruxflow ingest``    read a raw corpus into the CRUX data model (docs/data-model.md)
``cruxflow export``    a dataset's sub-questions and ratings as nuggets (docs/nuggets.md)
``cruxflow evaluate``  score retrieval runs or contexts against a dataset (docs/evaluate.md)
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

import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
from pathlib import Path

from cruxflow._extras import extra_for
from cruxflow.cli import vocabulary
from cruxflow.cli.args import OneLineParser
from cruxflow.cli.commands import COMMANDS
from cruxflow.data.errors import DataError
from cruxflow.data.outputs import check_outputs, inputs_protected, outputs_together, same_file
from cruxflow.data.text import printable

DESCRIPTION = ("cruxflow: evaluate retrieval for long-form RAG (CRUX and beyond). Each command "
               "has its own --help; a flag means the same in every command "
               "(cruxflow/cli/vocabulary/declared.py).")


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, as Ctrl-C is: every writer cleans up the same."""


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """For the command: SIGTERM (``kill``, a scheduler's time limit) ends it as Ctrl-C does,
    its temporaries removed, with one line (exit 143); the handler before is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


class _Terminal:
    """Standard output or error for the length of a command. Text from the inputs (a run
    file's name holding ESC and BEL) is shown escaped, never sent: no control character but
    newline and tab (and, on standard error, the carriage return a progress bar begins its
    redraw with) reaches the terminal (:func:`cruxflow.data.text.printable`). On standard
    output, a write the system refuses (``> /dev/full``, a full disk) is one line naming it
    (exit 2), where it was an ``OSError`` naming no file; a closed pipe stays as it was."""

    def __init__(self, stream, *, bar: bool):
        self._stream, self._bar = stream, bar

    def _guarded(self, method, *args):
        try:
            return getattr(self._stream, method)(*args)
        except OSError as exc:
            if exc.errno == errno.EPIPE or self._bar:
                raise
            raise _stdout_error(exc) from None

    def write(self, text):
        if isinstance(text, str):
            head = "\r" if self._bar and text.startswith("\r") else ""
            text = head + printable(text[len(head):], keep="\n\t")
        return self._guarded("write", text)

    def flush(self):
        return self._guarded("flush")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _stdout_error(exc: OSError) -> DataError:
    """A failed write to standard output as one line; what it still holds is dropped (the
    descriptor now writes to /dev/null), so that Python says nothing more at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return DataError(f"cannot write: {exc.strerror or exc}", path="standard output")


@contextlib.contextmanager
def _terminal():
    """:class:`_Terminal` in place of standard output and error for the block; standard
    output flushed at its end, so that a full disk is found before the command's files are
    moved into place, not at exit."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Terminal(out, bar=False), _Terminal(err, bar=True)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout, sys.stderr = out, err


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
        with _sigterm_as_interrupt(), inputs_protected(inputs), outputs_together(), \
                _terminal():
            return args.func(args)
    except _user_errors() as exc:
        print(f"cruxflow: error: {printable(exc)}", file=sys.stderr)
        return 2
    except ImportError as exc:   # an optional dependency missing: say which extra, no traceback
        message = extra_for(exc, f"cruxflow {args.command}")
        if message is None:
            raise
        print(f"cruxflow: error: {printable(message)}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        # A command's usage error, raised as SystemExit("cruxflow X: ..."): one line and exit 2
        # like argparse's, not Python's exit 1 for a message
        if isinstance(exc.code, str):
            print(printable(exc.code), file=sys.stderr)
            exc.code = 2
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: every writer is atomic
        what, code = ("terminated", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"cruxflow: {what}; outputs written before stay as they were", file=sys.stderr)
        return code
    except OSError as exc:  # the system refused (disk full, read-only, ...): not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"cruxflow: error: {printable(where)}{printable(exc.strerror or exc)}",
              file=sys.stderr)
        return 1



if __name__ == "__main__":
    sys.exit(main())

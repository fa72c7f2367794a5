"""How a flag of the command line is declared and added (the declarations themselves, one per
name, are :mod:`cruxflow.cli.vocabulary.declared`).

A :class:`Flag` gives a name its one meaning (the start of its help in every command), its
grammar (the argparse type or action), and its default, or the one place that holds the default
when a method fixes it (``home``: e.g. :class:`~cruxflow.beyond.udcg.UdcgOptions`). A command
adds a flag with :func:`add`, which may say what the flag does *in that command* (``detail``),
whether it is required, and, where the flag allows it, its own choices or default; it can change
neither the meaning nor the grammar. The help's ``(default ...)`` is written from the parser's
own default, so the two cannot disagree. :func:`add` marks the argparse action with its flag,
so that a test can tell a flag added by hand.

Kept light: the CLI imports this module to build any command's parser.
"""


from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cruxflow.cli.commands import COMMANDS

_UNSET: Any = object()


@dataclass(frozen=True)
class Flag:
    """One flag name and its one meaning."""

    name: str                        # without the dashes: "eta" is --eta
    meaning: str                     # the start of its help in every command
    type: Callable | None = None     # the grammar of a value (None: a string)
    action: Any = None               # "store_true", "extend", an Action class
    nargs: str | int | None = None
    const: Any = None
    metavar: str | None = None
    choices: tuple | None = None     # None: none, or the command's own (``home``)
    default: Any = None
    default_text: str | None = None  # how a default that is not a plain value reads
    # Where the default (and choices) live when a method fixes them: the command passes them
    # from there, and the test checks they equal it. None: the default is the one above.
    home: str | None = None
    single_type: Callable | None = None   # the grammar where a command takes one value only
    single: str | None = None        # the meaning where a command takes one value only
    spellings: tuple[str, ...] = ()  # other accepted spellings, shown (the authors' script's)
    dest: str | None = None          # the attribute, where an options field is named otherwise
    short: str | None = None         # what the flag is, in a few words (for messages)

    @property
    def option(self) -> str:
        return f"--{self.name}"

    @property
    def option_strings(self) -> list[str]:
        """Every spelling the flag is given by (a boolean's --no-NAME included)."""
        negative = [f"--no-{self.name}"] if self.action is argparse.BooleanOptionalAction else []
        return [self.option, *self.spellings, *negative]

    @property
    def is_switch(self) -> bool:
        return self.action in ("store_true", "store_false")


VOCABULARY: dict[str, Flag] = {}


def register(flag: Flag) -> Flag:
    """Declare a flag; a name declared twice is an error (one name, one meaning). Other homes
    of options (a format registry, a measure registry) declare their flags through this too."""
    if flag.name in VOCABULARY and VOCABULARY[flag.name] != flag:
        raise ValueError(f"--{flag.name} is declared twice in the vocabulary")
    for spelling in flag.option_strings[1:]:
        if spelling.lstrip("-") in VOCABULARY:
            raise ValueError(f"{spelling} (a spelling of --{flag.name}) is a flag of its own")
    VOCABULARY[flag.name] = flag
    return flag


# --- building a parser -------------------------------------------------------------------------

def show(value) -> str:
    """A default as the help shows it."""
    if isinstance(value, list | tuple):   # as a list flag is given: separated by spaces
        return " ".join(show(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


DEFAULT_RE = r"\(default:? (?P<value>.*)\)$"


def _help(flag: Flag, detail: str | None, default, default_text: str | None,
          required: bool, single: bool = False) -> str:
    text = flag.meaning + (f"; {detail}" if detail else "")
    if single and flag.single:
        text = flag.single + (f"; {detail}" if detail else "")
    if required or flag.is_switch or flag.action == "version":
        return text.replace("%", "%%")
    shown = default_text or flag.default_text
    if shown is not None:
        shown = f": {shown}"
    elif default is None:
        raise ValueError(f"--{flag.name}: a flag with no default needs a default_text "
                         "saying what happens without it")
    else:
        shown = f" {show(default)}"
    return f"{text} (default{shown})".replace("%", "%%")


def add(container, name: str, *, detail: str | None = None, required: bool = False,
        default: Any = _UNSET, default_text: str | None = None, choices=None,
        single: bool = False, metavar=None, keep_unset: bool = False, const: Any = _UNSET):
    """Add the vocabulary's flag ``--name`` to a parser or argument group.

    ``detail``: what the flag does in this command, after its meaning. ``default``,
    ``choices`` and ``const``: only for a flag whose default lives with the method (``home``);
    ``default``
    may also be None with ``keep_unset`` (a command that must know whether the flag was given:
    the help then shows the vocabulary's default, or for a flag with a ``home`` its
    ``default_text``). ``single``: the command takes one value
    (the flag's ``single_type``, else one value of its type)."""
    flag = VOCABULARY[name]
    if default is not _UNSET and flag.home is None and not (keep_unset and default is None):
        raise ValueError(f"--{name}: its default is the vocabulary's ({show(flag.default)})")
    if (choices is not None or const is not _UNSET) and flag.home is None:
        raise ValueError(f"--{name}: its choices and const are the vocabulary's")
    value = flag.default if default is _UNSET else default
    kwargs: dict[str, Any] = {}
    if flag.action is not None:
        kwargs["action"] = flag.action
    nargs = None if single else flag.nargs
    if nargs is not None:
        kwargs["nargs"] = nargs
    if single and flag.action == "extend":
        kwargs.pop("action")
    if const is not _UNSET or flag.const is not None:
        kwargs["const"] = flag.const if const is _UNSET else const
    typ = flag.single_type if single and flag.single_type else flag.type
    if typ is not None:
        kwargs["type"] = typ
    if choices or flag.choices:
        kwargs["choices"] = choices or flag.choices
    if flag.dest:
        kwargs["dest"] = flag.dest
    if not flag.is_switch:
        if single and flag.single_type and metavar is None:
            metavar = flag.name.upper()
        if metavar or flag.metavar:
            kwargs["metavar"] = metavar or flag.metavar
    if required:
        kwargs["required"] = True
    elif not (flag.is_switch and default is _UNSET):   # a switch: off (argparse's) unless given
        kwargs["default"] = value
    shown_text = default_text
    if keep_unset and value is None and shown_text is None and flag.default is not None:
        shown_text = show(flag.default)
    kwargs["help"] = _help(flag, detail, value, shown_text, required, single)
    action = container.add_argument(flag.option, *flag.spellings, **kwargs)
    action.default_text = shown_text or flag.default_text
    action.vocabulary = flag
    action.single = single
    action.keep_unset = keep_unset
    return action


def command(subparsers, name: str, *, description: str) -> argparse.ArgumentParser:
    """A command's parser: its one-line help from :data:`cruxflow.cli.commands.COMMANDS` (which
    ``cruxflow --help`` shows without importing the command) and its description."""
    help_line = COMMANDS.get(name.replace("-", "_"))
    if not help_line or not description:
        raise ValueError(f"cruxflow {name}: a command needs a help line "
                         "(cruxflow.cli.commands.COMMANDS) and a description")
    return subparsers.add_parser(name, help=help_line, description=description)


def flag_of(action: argparse.Action) -> Flag | None:
    """The vocabulary's flag an action was built from (None: not built by :func:`add`)."""
    return getattr(action, "vocabulary", None)

"""``cruxflow meta-eval``: the old name of ``cruxflow agreement`` (the judge against annotators,
item by item and system by system, now any label sets; docs/judge-trust.md), kept with the same
flags; it says so in one line on standard error."""

from __future__ import annotations

from cruxflow.cli import agreement, vocabulary


def _cmd_meta_eval(args) -> int:
    agreement.notice("cruxflow meta-eval")
    return agreement.run(args)


def add_command(subparsers) -> None:
    """Add ``cruxflow meta-eval`` (``cruxflow agreement`` under its old name)."""
    p = vocabulary.command(subparsers, "meta-eval",
                           description="The old name of cruxflow agreement, with the same "
                                       "flags: " + agreement.DESCRIPTION)
    agreement.add_flags(p)
    p.set_defaults(func=_cmd_meta_eval, writes=("agreement.json",))

"""The flags renamed when the command line got one vocabulary (:mod:`cruxflow.cli.vocabulary`,
docs/cli.md): where the old name is a flag with a meaning of its own it is refused with one line
naming the new flag; else it stays accepted, hidden, with one deprecation line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from cruxflow.cli.vocabulary.flags import VOCABULARY


@dataclass(frozen=True)
class Renamed:
    """An old spelling of a flag, by command: the flag it is now."""

    new: str        # the flag's name now
    note: str = ""  # what to change besides the name


def is_refused(old: str) -> bool:
    """Whether an old spelling is refused rather than accepted: it is a flag of its own now
    (accepting it would give that name a second meaning)."""
    return old.removeprefix("--") in VOCABULARY \
        or any(old in f.option_strings[1:] for f in VOCABULARY.values())


def refusal(old: str, renamed: Renamed) -> str:
    """The one line a refused old spelling gets."""
    flag = VOCABULARY[old.removeprefix("--")]
    note = f" ({renamed.note})" if renamed.note else ""
    return f"{old} is now {renamed.new}{note}; in every command, {old} is {flag.short}"


# (command, old flag) -> the flag now. Where the old name is a flag of the vocabulary with a
# meaning of its own, it is refused (one line naming the new flag); else it stays accepted,
# hidden, with one deprecation line.
RENAMED: dict[tuple[str, str], Renamed] = {
    ("meta-eval", "--runs"): Renamed("--run"),
    ("meta-eval", "--k"): Renamed("--measure", "the measures by name: --measure Cov@K "
                                               "alpha_nDCG_crux@K for the old --k K"),
    ("meta-eval", "--alpha"): Renamed("--confidence", "PPI's interval level: --confidence 0.95 "
                                                      "for the old --alpha 0.05"),
    ("ppi", "--alpha"): Renamed("--confidence", "the interval's level: --confidence 0.95 for "
                                                "the old --alpha 0.05"),
    ("ppi", "--judge"): Renamed("--judge-values"),
    ("ppi", "--human"): Renamed("--human-values"),
    ("agreement", "--passages"): Renamed("--human", "the annotators' Task 2 ratings"),
    ("agreement", "--reports"): Renamed("--human-reports", "the annotators' Task 1 labels"),
    ("support", "--input"): Renamed("--answers"),
    ("support", "--judge"): Renamed("--judge-pairs", "which cited pairs the LLM judges"),
    ("udcg", "--input"): Renamed("--questions"),
    ("udcg", "--judge-attempts"): Renamed("--attempts"),
    ("kpr", "--input"): Renamed("--questions"),
    ("export", "--collection"): Renamed("--collection-name", "the NuggetBank test_collection"),
    ("evaluate", "--name"): Renamed("--run-name"),
    ("evaluate", "--paired"): Renamed("--test", "one test: t-test or none as before; both is "
                                                "gone"),
    ("crux-eval", "--paired"): Renamed("--test", "one test: t-test or none as before; both is "
                                                 "gone"),
    ("ingest", "--corpus"): Renamed("--collection"),
    ("init", "--name"): Renamed("--dataset-name"),
    ("init", "--questions"): Renamed("--n-questions", "how many sub-questions per topic"),
}


# --- old spellings in a built parser -----------------------------------------------------------

class Refused(argparse.Action):
    """An old spelling that means something else now: one line naming the new flag."""

    def __init__(self, option_strings, dest, message: str, **kwargs):
        super().__init__(option_strings, argparse.SUPPRESS, nargs="?", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
        self.message = message

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(self.message)


def _deprecating(action: argparse.Action, old: str, new: str, command: str) -> None:
    """Make ``action`` say one deprecation line when given by its ``old`` spelling."""
    base = type(action)
    if not getattr(base, "_deprecating", False):
        class Deprecating(base):
            _deprecating = True
            deprecated: dict = {}

            def __call__(self, parser, namespace, values, option_string=None):
                if option_string in self.deprecated:
                    print(f"cruxflow {command}: warning: {option_string} is deprecated: use "
                          f"{self.deprecated[option_string]}", file=sys.stderr)
                super().__call__(parser, namespace, values, option_string)

        action.__class__ = Deprecating
        action.deprecated = {}
    action.deprecated[old] = new


def add_old_spellings(parser: argparse.ArgumentParser, command: str) -> None:
    """The command's renamed flags (:data:`RENAMED`): refused where the old name is a flag of
    its own now, else accepted (hidden from the help) with a deprecation line."""
    for (cmd, old), entry in RENAMED.items():
        if cmd != command:
            continue
        if old in parser._option_string_actions:
            raise ValueError(f"cruxflow {command}: {old} is renamed but still a flag here")
        if is_refused(old):
            parser.add_argument(old, action=Refused, message=refusal(old, entry))
            continue
        action = parser._option_string_actions[entry.new]
        parser._option_string_actions[old] = action   # parsed as the new flag, not shown
        _deprecating(action, old, entry.new, command)

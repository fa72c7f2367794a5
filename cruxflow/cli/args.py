"""Argument types shared by the console commands, so a bad value is refused by argparse with
one line (exit 2) instead of being used silently or failing deep inside a run."""

from __future__ import annotations

import argparse
import codecs
import math
import re
import sys

from cruxflow.data.model import RATING_MAX, RATING_MIN


class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line, ``cruxflow <command>: error: ...`` (exit 2), like every
    other error of the CLI; the usage is one ``--help`` away."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but a value after a switch (``plan --json out.json``, once a file
        name) is refused as such, not as an unrecognized argument."""
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and args is not None:
            args = list(args)
            for before, token in zip(args, args[1:], strict=False):
                action = self._option_string_actions.get(before)
                if token == extras[0] and action is not None and action.nargs == 0 \
                        and not token.startswith("-"):
                    note = ("; it prints JSON to standard output (--output DIR writes files)"
                            if before == "--json" else "")
                    self.error(f"{before} is a switch and takes no value, got {token!r}{note}")
        return namespace, extras


def release_path(text: str):
    """A folder or file that may be a registered set's name (``crux-mds-duc04``,
    ``crux-labeling/annotator_1/crux_testb``): its place in the cache (``cruxflow fetch``); a
    name not fetched is refused in one line naming the fetch to run."""
    from cruxflow.data.errors import DataError
    from cruxflow.datasets import resolve

    try:
        return resolve(text)
    except DataError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def named_release_path(text: str) -> str:
    """:func:`release_path` for ``[NAME=]PATH`` values (``--human ann1=crux-labeling/...``):
    the path part resolved, the name kept."""
    import os

    label, sep, rest = text.partition("=")
    if sep and "/" not in label and not os.path.lexists(text):
        return f"{label}={release_path(rest)}"
    return str(release_path(text))


def _integer(text: str, low: int, high: int | None, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    return value


def count(name: str):
    """The argument type of the count ``name`` (``resamples``, ``attempts``, ...): an integer
    within the bounds :data:`cruxflow.data.limits.COUNTS` declares for it, which the public
    functions and the config check apply too."""
    from cruxflow.data.limits import COUNTS

    bound = COUNTS[name.replace("-", "_")]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if problem := bound.problem(value):
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = parse.__qualname__ = f"count({name!r})"
    return parse


def grade(text: str) -> int:
    """A grade of a label scale (a threshold from which a label is positive): an integer from
    0 to 100 (TREC's and CRUX's scales run 0-3, 0-4, 0-5)."""
    return _integer(text, 0, 100, "a grade is an integer from 0 to 100")


def shard(text: str) -> tuple[int, int]:
    """``I/N``: shard I (0-based) of N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected I/N (shard I of N, 0-based), got {text!r}")
    i, n = int(m[1]), int(m[2])
    if n < 1 or i >= n:
        raise argparse.ArgumentTypeError(f"shard I of N needs 0 <= I < N, got {text!r}")
    return i, n


def say_paired_work(policy, topics: int, tests: int) -> None:
    """One line before paired tests that will take long: what they are and about how long
    (:func:`cruxflow.data.limits.paired_test_seconds`)."""
    from cruxflow.data.limits import long_work_note, paired_test_seconds

    if policy.test != "randomization":
        return
    note = long_work_note(f"the paired tests ({policy.resamples:,} resamples of {topics:,} "
                          f"topics for {tests:,} tests)",
                          paired_test_seconds(policy.resamples, topics, tests), "--resamples")
    if note:
        print(note, file=sys.stderr, flush=True)


class Items(list):
    """The values one word of a list flag gives (``--k 10 20``: a word each). A word with commas
    (``--k 10,20``, the form these flags once took) gives several and keeps its ``text``: the
    flag then says one deprecation line (:class:`ListFlag`)."""

    text = ""


def _items(text: str, one, *, drop_empty: bool = False) -> Items:
    """``text`` as :class:`Items`, each part between commas read by ``one``."""
    parts = [p.strip() for p in text.split(",")] if "," in text else [text]
    out = Items(one(p) for p in parts if p or not drop_empty)
    out.text = text if "," in text else ""
    return out


class ListFlag(argparse.Action):
    """A flag that takes a list: values separated by spaces, as argparse reads every list
    (``--k 10 20``, ``--annotators a b``; given twice, the last one holds). A value with commas
    (``--k 10,20``, the old form) is read as before, with one deprecation line that writes the
    list the new way. :meth:`checked` checks the whole list (a subclass's rule)."""

    def __call__(self, parser, namespace, values, option_string=None):
        flat = [item for value in values for item in value]
        try:
            checked = self.checked(flat)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        if any(getattr(value, "text", "") for value in values):
            print(f"{parser.prog}: warning: commas between values are deprecated: write "
                  f"{option_string} {' '.join(map(str, flat))}", file=sys.stderr)
        setattr(namespace, self.dest, checked)

    def checked(self, values: list):
        return values


def _context_size(part: str) -> int | str:
    from cruxflow.metrics.scorer import parse_context_size

    try:
        return part if part == "all" else parse_context_size(part)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"context size must be 'oracle', 'all' or a positive integer, got {part!r}") from None


def context_sizes(text: str) -> Items:
    """A value of ``--k``: a context size, ``oracle`` (|Z*|), ``all`` (each ranked list as
    given) or a positive integer (or, deprecated, several separated by commas)."""
    return _items(text, _context_size)


class ContextSizes(ListFlag):
    """``--k K [K ...]``: each size once."""

    def checked(self, values: list) -> list[int | str]:
        for i, k in enumerate(values):
            if k in values[:i]:
                raise argparse.ArgumentTypeError(f"context size {k!r} is given twice")
        return values


def rank_cutoffs(ks: list, command: str, what: str) -> list[int]:
    """The ``--k`` of a command that cuts each ranked list at rank k (``what`` it does): its
    sizes, positive integers; ``oracle`` or ``all`` is a usage error of ``command``, in one
    line (``oracle`` and ``all`` cut by the judgments or not at all, evaluate's)."""
    bad = [k for k in ks if not isinstance(k, int)]
    if bad:
        raise SystemExit(f"cruxflow {command}: error: argument --k: {bad[0]!r} is a context size "
                         f"of evaluate; {command} takes positive integers: {what} (see "
                         f"cruxflow {command} --help)")
    return ks


def output_dir(text: str):
    """``--output``: the directory a command writes its files to (created if missing); an
    existing file is refused, so that no command takes --output as a file name."""
    from pathlib import Path

    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file: --output names a directory")
    return path


def name(text: str) -> str:
    """A name that becomes part of file names (a topic id prefix, a dataset or collection
    name): :func:`cruxflow.data.names.name_problem`'s rule, the config schema's too (its
    pattern is :data:`cruxflow.data.names.NAME_PATTERN`, through the format registry)."""
    from cruxflow.data.names import name_problem

    if problem := name_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def base_url(text: str) -> str:
    """An OpenAI-compatible server's URL: the rule of
    :func:`cruxflow.llm.openai_compat.check_base_url`, which the config check applies too."""
    from cruxflow.llm.openai_compat import check_base_url

    if problem := check_base_url(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free one, where a command takes that)."""
    return _integer(text, 0, 65535, "must be a port from 0 to 65535")


def eta(text: str) -> int:
    """The answerability threshold: a rating from 1 to 5 (0 would make every question
    answerable by every passage)."""
    return _integer(text, RATING_MIN + 1, RATING_MAX,
                    f"must be a rating from {RATING_MIN + 1} to {RATING_MAX}")


def _number(text: str, ok, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    return value


def open_unit_interval(text: str) -> float:
    """A number strictly between 0 and 1 (a confidence level), in the words of
    :func:`cruxflow.data.limits.level_problem` (which the API's checks use)."""
    from cruxflow.data.limits import level_problem

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if problem := level_problem(value):
        raise argparse.ArgumentTypeError(problem)
    return value


def fraction(text: str) -> float:
    """A number or a fraction such as ``1/3``, at least 0."""
    from fractions import Fraction

    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a number or fraction: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def columns(text: str) -> Items:
    """A value of a list of column names (or, deprecated, several separated by commas; empty
    parts dropped)."""
    return _items(text, str, drop_empty=True)


class Columns(ListFlag):
    """Column names, as a tuple (an options class's field)."""

    def checked(self, values: list) -> tuple[str, ...]:
        return tuple(v for v in values if v)


def annotators(text: str) -> Items:
    """A value of ``--annotators``: an annotator's name (or, deprecated, several separated by
    commas)."""
    return _items(text, str)


class Annotators(ListFlag):
    """``--annotators NAME [NAME ...]``: names of letters, digits, '_', '.', '-', each once."""

    def checked(self, values: list) -> list[str]:
        from cruxflow.annotate.assign import check_annotators

        try:
            return check_annotators(values)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def unit_interval(text: str) -> float:
    """A number from 0 to 1 (alpha-nDCG's redundancy penalty)."""
    return _number(text, lambda v: 0 <= v <= 1, "must lie in 0..1")


def non_negative(text: str) -> float:
    """A finite number >= 0 (an exponent)."""
    return _number(text, lambda v: v >= 0, "must be at least 0")


def positive_number(text: str) -> float:
    """A finite number > 0 (a timeout in seconds)."""
    return _number(text, lambda v: v > 0, "must be more than 0")


def encoding(text: str) -> str:
    """A text encoding Python knows (checked before any file is read)."""
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None
    return text

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


def context_sizes(text: str) -> list[int | str]:
    """``--k``: comma-separated context sizes, each ``oracle`` (|Z*|), ``all`` (each ranked
    list as given) or a positive integer."""
    from cruxflow.metrics.scorer import parse_context_size

    out: list[int | str] = []
    for part in (x.strip() for x in text.split(",")):
        try:
            k = part if part == "all" else parse_context_size(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"context size must be 'oracle', 'all' or a positive integer, got {part!r}"
            ) from None
        if k in out:
            raise argparse.ArgumentTypeError(f"context size {part!r} is given twice")
        out.append(k)
    return out


def rank_cutoff(text: str) -> int:
    """``--k`` where a command takes one context size, a positive integer: a cut of each ranked
    list at k (``oracle`` and ``all`` cut by score and mean nothing there)."""
    if "," not in text:
        _context_size_error(text.strip())
    sizes = context_sizes(text)
    if len(sizes) > 1:
        raise argparse.ArgumentTypeError(f"this command takes one context size, got {text!r}")
    if not isinstance(sizes[0], int):
        raise argparse.ArgumentTypeError(
            f"{sizes[0]!r} is a context size of evaluate; this command cuts each ranked list "
            "at a positive integer k")
    return sizes[0]


def _context_size_error(text: str) -> None:
    """A bad integer as what it is (``--k 0``: not a positive integer)."""
    try:
        int(text)
    except ValueError:
        return
    _integer(text, 1, None, "must be a positive integer")


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
    """A number strictly between 0 and 1 (a confidence level)."""
    return _number(text, lambda v: 0 < v < 1, "must lie strictly between 0 and 1")


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


def columns(text: str) -> tuple[str, ...]:
    """Comma-separated column names (empty parts dropped)."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def annotators(text: str) -> list[str]:
    """Annotator names, comma-separated."""
    from cruxflow.annotate.assign import check_annotators

    try:
        return check_annotators(text.split(","))
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

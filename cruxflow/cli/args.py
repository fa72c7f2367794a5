"""Argument types shared by the console commands, so a bad value is refused by argparse with
one line (exit 2) instead of being used silently or failing deep inside a run."""

from __future__ import annotations

import argparse
import codecs
import math

from cruxflow.data.model import RATING_MAX, RATING_MIN


class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line, ``cruxflow <command>: error: ...`` (exit 2), like every
    other error of the CLI; the usage is one ``--help`` away."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def eta(text: str) -> int:
    """The answerability threshold: a rating from 1 to 5 (0 would make every question
    answerable by every passage)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not RATING_MIN < value <= RATING_MAX:
        raise argparse.ArgumentTypeError(
            f"must be a rating from {RATING_MIN + 1} to {RATING_MAX}, got {value}")
    return value


def encoding(text: str) -> str:
    """A text encoding Python knows (checked before any file is read)."""
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None
    return text


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def unit_interval(text: str) -> float:
    """A number from 0 to 1 (alpha-nDCG's redundancy penalty)."""
    value = _finite(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in 0..1, got {value}")
    return value


def non_negative(text: str) -> float:
    """A finite number >= 0 (an exponent, a timeout)."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def positive_number(text: str) -> float:
    """A finite number > 0 (a timeout in seconds)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return value

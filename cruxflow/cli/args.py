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


def _integer(text: str, low: int, high: int | None, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    return value


def positive_int(text: str) -> int:
    return _integer(text, 1, None, "must be at least 1")


def non_negative_int(text: str) -> int:
    return _integer(text, 0, None, "must be at least 0")


# The paired tests of evaluate and crux-eval with several runs: flags and defaults come from
# the paired-test policy (cruxflow.metrics.policy), so that the CLI's are the API's and the
# workflow's; ``--test none`` compares nothing.
NO_TEST = "none"


def add_paired_options(parser) -> None:
    """``--test``, ``--correction``, ``--resamples``, ``--seed``: the paired tests between
    every pair of runs (:data:`cruxflow.metrics.policy.POLICY` by default)."""
    from cruxflow.metrics.policy import CORRECTIONS, POLICY, TESTS

    group = parser.add_argument_group("paired tests between every pair of runs (several runs)")
    group.add_argument("--test", choices=[*TESTS, NO_TEST], default=POLICY.test,
                       help="the paired test: randomization (sign flips of the mean "
                            "difference, the default), t-test, wilcoxon (signed-rank), or none")
    group.add_argument("--correction", choices=list(CORRECTIONS), default=POLICY.correction,
                       help="the multiple-testing correction over the pairs of each measure: "
                            "holm (the default), bh (Benjamini-Hochberg), bonferroni, none")
    group.add_argument("--resamples", type=positive_int, default=POLICY.resamples,
                       help="randomization test resamples (default %(default)s; exact when "
                            "2^topics is fewer)")
    group.add_argument("--seed", type=non_negative_int, default=POLICY.seed,
                       help="randomization test seed (default %(default)s)")


def paired_policy(args):
    """The policy the paired-test flags ask for; ``None`` for ``--test none``."""
    from cruxflow.metrics.policy import POLICY

    if args.test == NO_TEST:
        return None
    return POLICY.with_(test=args.test, correction=args.correction,
                          resamples=args.resamples, seed=args.seed)


def rank_cutoff(text: str) -> int:
    """``crux-eval --k``: the rank-column cutoff, a positive integer (``evaluate --k``'s
    ``oracle`` and ``all`` cut by score and have no meaning for the authors' rank cut)."""
    if text.strip() in ("oracle", "all"):
        raise argparse.ArgumentTypeError(
            f"{text.strip()!r} is a context size of evaluate; crux-eval cuts by the rank "
            "column and takes a positive integer")
    return _integer(text, 1, None, "must be a positive integer")


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
    name): :func:`cruxflow.data.names.name_problem`'s rule, the config schema's too."""
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
    return _integer(text, 1, 65535, "must be a port from 1 to 65535")


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

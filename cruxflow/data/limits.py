"""The upper bound of every count a user gives, declared once, derived from what it computes.

A count (resamples, bootstrap resamples, attempts, threads, sample sizes, tokens, ...) is the
size of some work: resamples x topics x tests cells of a randomization test, resamples x
topics integers of a bootstrap's draws, one LLM call per attempt. Unbounded, ``--resamples
1000000000`` ran for minutes in silence and ``meta-eval --bootstrap 1000000000`` asked for
29.8 GiB and failed with a traceback. Every count is declared here (:data:`COUNTS`) with its
least and most value and why; the command line's argument types (``cruxflow.cli.args.count``),
the config schema's bounds and the public functions outside :mod:`cruxflow.metrics` that
take a count (:func:`check_count`) apply the same declaration, with the same words. Work whose
size depends on the inputs as well (the topics, the tests) is estimated before it starts
(:func:`paired_test_seconds`, :func:`bootstrap_bytes`): a long one says so in one line, one
that could not fit in memory is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

from cruxflow.data.errors import DataError


@dataclass(frozen=True)
class Count:
    """A count's allowed values, ``least`` to ``most``, and why ``most`` (what a larger value
    would compute, or why it cannot help)."""

    most: int
    why: str
    least: int = 1

    def problem(self, value) -> str | None:
        """Why ``value`` is not an allowed count (a sentence), or ``None``."""
        if isinstance(value, bool) or not isinstance(value, Integral):   # numpy's are Integral
            return f"must be an integer from {self.least} to {self.most:,}, got {value!r}"
        if value < self.least:
            return f"must be at least {self.least}, got {value}"
        if value > self.most:
            return f"must be at most {self.most:,} ({self.why}), got {value}"
        return None


# The longest context window of any model (tokens); an answer cannot outgrow it.
MAX_CONTEXT_TOKENS = 1 << 20
# A word is at least one byte and its space: no record under the 32 MiB bound holds more.
MAX_WORDS = 16 << 20
_TOKENS = Count(MAX_CONTEXT_TOKENS, "an answer cannot outgrow the longest context window")
_WORDS = Count(MAX_WORDS, "no record under the 32 MiB bound on a record holds more words")

COUNTS: dict[str, Count] = {
    # statistics
    "resamples": Count(1_000_000, "a p-value moves in steps of 1/(resamples + 1): a million "
                                  "resolve 1e-6, below any corrected level; the work is "
                                  "resamples x topics x tests"),
    "bootstrap": Count(100_000, "an interval's ends are settled to three digits long before; "
                                "the draws take resamples x topics x 8 bytes", least=0),
    "seed": Count(2 ** 32 - 1, "llama.cpp's and vLLM's seeds are 32-bit", least=0),
    # LLM calls
    "attempts": Count(100, "each is one more LLM call for an output still unparsed"),
    "max_retries": Count(100, "each is one more attempt at a failing server; the deadline "
                              "bounds them too", least=0),
    "threads": Count(1024, "more threads than one machine's cores only contend"),
    "parallel": Count(1024, "each slot of the server holds a context window of KV cache"),
    "n_ctx": Count(MAX_CONTEXT_TOKENS, "no model's context window is longer; llama.cpp "
                                       "allocates its KV cache for all of it"),
    "judge_max_tokens": _TOKENS,
    "sample_max_tokens": _TOKENS,
    "max_answer_tokens": _TOKENS,
    "extract_max_tokens": _TOKENS,
    "max_tokens": _TOKENS,
    "free_max_tokens": _TOKENS,
    "top_logprobs": Count(20, "the OpenAI API's and vLLM's most first-token alternatives"),
    "batch_size": Count(1_000_000, "requests or passages held in memory together"),
    "shards": Count(100_000, "jobs of one stage, each a process"),
    "encoding_shards": Count(100_000, "jobs of one stage, each a process"),
    "logprobs": Count(20, "the OpenAI API's and vLLM's most first-token alternatives"),
    "calibrate_requests": Count(10_000, "each is a real request, paid for"),
    "gpus": Count(100_000, "more than any cluster lends one plan"),
    "concurrency": Count(1024, "requests in flight at once, each a thread and a connection"),
    # samples and sizes
    "n_questions": Count(1000, "each sub-question is rated against every passage of its topic"),
    "overlap": Count(1000, "annotators per item"),
    "sample": Count(10_000_000, "more labels than any annotation round gives"),
    "samples": Count(10_000, "each is one LLM call per passage"),
    "contexts_per_question": Count(10_000, "each context is one LLM answer per question"),
    "context_size": Count(1000, "passages in one prompt, which must fit a context window"),
    "depth": Count(1_000_000, "passages of one ranked list"),
    "positive_depth": Count(1_000_000, "passages of one ranked list"),
    "negative_depth": Count(1_000_000, "passages of one ranked list", least=0),
    "negatives": Count(1_000_000, "passages of one ranked list", least=0),
    "top": Count(1_000_000, "systems of one ranking (the k of a top-k overlap)"),
    "rounds": Count(100, "each round is one LLM call per document; a round that adds "
                         "nothing ends them earlier"),
    "max_words": _WORDS,
    "max_passage_words": _WORDS,
    "max_document_words": _WORDS,
    "chunk_words": _WORDS,
    "summary_length": _WORDS,
    "min_docs": Count(1_000_000, "documents one topic needs"),
    "max_topics": Count(100_000_000, "topics of one dataset"),
}


def count_problem(name: str, value) -> str | None:
    """Why ``value`` is not an allowed ``name`` (a flag's or an option's name, ``-`` or ``_``
    alike), or ``None``."""
    return COUNTS[name.replace("-", "_")].problem(value)


def check_count(name: str, value, label: str | None = None) -> int:
    """``value`` as an int if it is an allowed ``name``, else a ``ValueError`` (a
    :class:`~cruxflow.data.errors.DataError`: one line at the command line) naming it as
    ``label`` (the function's argument; default ``name``) in the command line's words."""
    if problem := count_problem(name, value):
        raise DataError(f"{label or name} {problem}")
    return int(value)


def level_problem(value) -> str | None:
    """Why ``value`` is not a probability strictly between 0 and 1 (a confidence level, a
    significance level), in the command line's words (``--confidence``), or ``None``."""
    import math
    from numbers import Real

    if isinstance(value, bool) or not isinstance(value, Real):   # numpy's floats are Real
        return f"not a number: {value!r}"
    if not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if not 0 < value < 1:
        return f"must lie strictly between 0 and 1, got {value}"
    return None


def check_level(name: str, value) -> float:
    """``value`` as a float if it lies strictly between 0 and 1, else a
    :class:`~cruxflow.data.errors.DataError` naming ``name`` (the argument) as the command line
    words it."""
    if problem := level_problem(value):
        raise DataError(f"{name} {problem}")
    return float(value)


# --- work that depends on the inputs too ------------------------------------------------------

# Measured on the build machine (2 shared cores, loaded) with cruxflow.metrics.stats.paired's
# randomization test (benchmarks/count_estimates.py): 10,240 resamples of 5,000 topics for
# 100 tests took 1.6-2.1 s, for 1 test 0.8-1.0 s; 102,400 resamples of 200 topics for 30 tests
# 0.9-2.0 s. The estimates are within a factor of two of these, above rather than below.
_SECONDS_PER_SIGN = 2.5e-8         # drawing one random sign (a resample x topic cell)
_SECONDS_PER_CELL = 1.5e-10        # one resample x topic x test cell of the product
_SECONDS_PER_BLOCK = 5e-4          # a block of 1,024 resamples besides
_SIGN_BLOCK = 1024
# Long enough to say what it will take before it starts.
SAY_AFTER_SECONDS = 10.0
# The most a bootstrap's draws may take: more would swap or fail late.
BOOTSTRAP_MEMORY_BYTES = 2 << 30


def paired_test_seconds(resamples: int, topics: int, tests: int) -> float:
    """About how long the randomization tests take: ``tests`` tests over up to ``topics``
    topics, each exact (every sign pattern) where 2^topics <= ``resamples``."""
    if tests < 1 or topics < 2:
        return 0.0
    drawn = min(resamples, 2 ** min(topics, 62))
    blocks = -(-drawn // _SIGN_BLOCK)
    return (blocks * _SECONDS_PER_BLOCK
            + drawn * topics * (_SECONDS_PER_SIGN + tests * _SECONDS_PER_CELL))


def bootstrap_bytes(resamples: int, topics: int) -> int:
    """The memory a bootstrap's draws take: ``resamples`` x ``topics`` indices of 8 bytes."""
    return max(0, resamples) * max(0, topics) * 8


# A bootstrap's statistic, once per resample: a rank correlation and tau_AP of the systems'
# means took 1.7-2.9 ms a resample here (kendall_tau and tau_ap of one resample's means, as
# cruxflow.paper.system_agreement computes them; 2,000 resamples of 50-500 topics and 10-40
# systems).
_SECONDS_PER_BOOTSTRAP = 2.5e-3


def bootstrap_seconds(resamples: int, intervals: int) -> float:
    """About how long ``intervals`` bootstrap intervals of rank correlations take."""
    return max(0, resamples) * max(0, intervals) * _SECONDS_PER_BOOTSTRAP


def check_bootstrap(resamples: int, topics: int, option: str = "bootstrap") -> None:
    """A ``ValueError`` (a :class:`~cruxflow.data.errors.DataError`, one sentence naming
    ``option``) where the draws would not fit in :data:`BOOTSTRAP_MEMORY_BYTES`."""
    need = bootstrap_bytes(resamples, topics)
    if need > BOOTSTRAP_MEMORY_BYTES:
        most = BOOTSTRAP_MEMORY_BYTES // (8 * max(1, topics))
        raise DataError(f"{option} {resamples:,} of {topics:,} topics would draw "
                        f"{need / 2 ** 30:.1f} GiB of indices (more than "
                        f"{BOOTSTRAP_MEMORY_BYTES / 2 ** 30:.0f} GiB): at most {most:,} here")


# A bootstrap that draws one index for each of more cells than this (resamples x items,
# resamples x topics x systems: the rank statistics' bootstraps of cruxflow agreement) is
# refused: its draws alone would take gigabytes, its loop minutes
MAX_BOOTSTRAP_CELLS = 200_000_000


def check_bootstrap_cells(resamples: int, *counts: int, what: str,
                          option: str = "--bootstrap") -> None:
    """A :class:`~cruxflow.data.errors.DataError` of one line where ``resamples`` x ``counts``
    (``what`` they are, e.g. ``resamples x items x pairs``) exceeds
    :data:`MAX_BOOTSTRAP_CELLS`."""
    cells = resamples
    for c in counts:
        cells *= max(int(c), 1)
    if cells > MAX_BOOTSTRAP_CELLS:
        sizes = " x ".join(f"{c:,}" for c in (resamples, *counts))
        raise DataError(f"{option} {resamples:,}: {sizes} {what} = {cells:,} cells, more "
                        f"than {MAX_BOOTSTRAP_CELLS:,} (gigabytes and minutes); give fewer "
                        "resamples")


def long_work_note(what: str, seconds: float, flag: str) -> str | None:
    """The one line said before work estimated to take ``seconds`` (``None`` when it is
    short): ``cruxflow: note: the paired tests (...): about 4 minutes; --resamples sets it``."""
    if seconds < SAY_AFTER_SECONDS:
        return None
    return f"cruxflow: note: {what}: {duration(seconds)}; {flag} sets it"


def duration(seconds: float) -> str:
    """``about 40 s``, ``about 3 minutes``, ``about 2.5 hours``."""
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} minutes"
    return f"about {seconds / 3600:.1f} hours"

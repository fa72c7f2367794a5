"""The paired-test policy: how cruxflow compares runs pairwise, declared once.

Every door that compares runs (``cruxflow evaluate`` and ``cruxflow crux-eval`` with several
runs, the workflow's significance table, ``cruxflow.compare``) takes its defaults from
:data:`POLICY`, and its output names the test and the correction it used
(:meth:`Policy.describe`). The tests and corrections themselves are computed in
:mod:`cruxflow.metrics.stats`; this module holds only the declaration, without numpy, so that
the command line can build its flags from it cheaply.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from cruxflow.data.limits import check_count

TESTS = {
    "randomization": "paired randomization test (sign flips) of the mean difference",
    "t-test": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
}
CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni",
               "none": "no"}
ALTERNATIVES = ("two-sided", "less", "greater")


@dataclass(frozen=True)
class Policy:
    """How runs are compared pairwise: which paired test (with how many resamples and which
    seed, for the randomization test), which alternative, and which multiple-testing
    correction over the pairs of one measure (the family)."""

    test: str = "randomization"
    correction: str = "holm"
    resamples: int = 9999
    seed: int = 0
    alternative: str = "two-sided"

    def __post_init__(self):
        for name, allowed in (("test", TESTS), ("correction", CORRECTIONS),
                              ("alternative", ALTERNATIVES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"unknown {name} {getattr(self, name)!r} "
                                 f"({', '.join(allowed)})")
        for name in ("resamples", "seed"):   # the bounds every door applies (data/limits.py)
            check_count(name, getattr(self, name))

    def with_(self, **changes) -> Policy:
        """A copy with ``changes`` (None values keep the policy's own, as
        :meth:`cruxflow.metrics.options.MetricOptions.with_`)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def adjusted_header(self) -> str:
        """The adjusted p-value's column heading in printed tables: ``p (Holm)``."""
        short = {"bh": "BH", "none": "not adjusted"}.get(self.correction,
                                                          CORRECTIONS[self.correction])
        return f"p ({short})"

    def describe(self, family: str = "measure") -> str:
        """One sentence naming the test and the correction, as every door prints it."""
        test = f"{self.alternative} {TESTS[self.test]}"
        if self.test == "randomization":
            test += (f" ({self.resamples:,} resamples, exact when 2^topics <= "
                     f"{self.resamples:,}; seed {self.seed})")
        if self.correction == "none":
            return f"{test}; p-values not adjusted for multiple comparisons"
        return (f"{test}; p-values {CORRECTIONS[self.correction]}-adjusted over the pairs of "
                f"each {family}")


POLICY = Policy()

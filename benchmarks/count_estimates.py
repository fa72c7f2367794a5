"""Benchmark: the estimates ``cruxflow.data.limits`` says before long work (issue 55, class 5)
against the work itself, measured here.

For a few sizes it times ``cruxflow.metrics.stats.paired.randomization_p_values`` (the randomization
tests of ``evaluate`` and ``crux-eval`` with several runs) and
``cruxflow.metrics.stats.rank_agreement`` (the bootstrap intervals of ``meta-eval``), and prints
each beside :func:`~cruxflow.data.limits.paired_test_seconds` and
:func:`~cruxflow.data.limits.bootstrap_seconds`. The estimates are meant to be right within a
factor of two or three, enough to say "about 4 minutes" before the work starts.

    .venv/bin/python benchmarks/count_estimates.py [--seed 0]

It prints figures; no test asserts them (timings on a shared machine are noisy: the load
average is printed beside them).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from cruxflow.data.limits import bootstrap_seconds, paired_test_seconds
from cruxflow.metrics.stats import rank_agreement
from cruxflow.metrics.stats.paired import randomization_p_values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("randomization tests: resamples, topics, tests, measured s, estimated s")
    for resamples, topics, tests in [(10_240, 5000, 100), (10_240, 1000, 500),
                                     (102_400, 200, 30), (10_240, 5000, 1),
                                     (50_000, 50, 10)]:
        diffs = [rng.normal(size=topics) for _ in range(tests)]
        start = time.perf_counter()
        randomization_p_values(diffs, resamples=resamples)
        took = time.perf_counter() - start
        print(f"  {resamples:>8,} {topics:>6,} {tests:>5,} {took:8.2f} "
              f"{paired_test_seconds(resamples, topics, tests):8.2f}")
    print("bootstrap of rank agreement: resamples, topics, systems, measured s, estimated s")
    for resamples, topics, systems in [(2000, 50, 10), (2000, 500, 10), (2000, 50, 40)]:
        a = rng.random((topics, systems))
        b = a + rng.normal(0, 0.1, a.shape)
        start = time.perf_counter()
        rank_agreement(a, b, n_resamples=resamples)
        took = time.perf_counter() - start
        print(f"  {resamples:>8,} {topics:>6,} {systems:>5,} {took:8.2f} "
              f"{bootstrap_seconds(resamples, 1):8.2f}")


if __name__ == "__main__":
    main()

"""Benchmark: ``cruxflow crux-eval`` on many Multi-News-sized runs with and without its default
paired tests (issue 41: 21 runs, all 210 pairs x the script's 4 measures = 840 tests, in under
60 s and 1 GB on 2 cores; the table has a fifth column, Judged@10, tested too: 1,050 tests).

Writes the synthetic inputs of ``benchmarks/crux_eval.py`` (``--topics`` 4,986 topics, 12
judged passages x 10 sub-questions, top-100 runs, seeded) and then, one after the other:

* ``cruxflow crux-eval --run <21 runs> --qrel Q --judge J --test none``: scoring only;
* the same with the policy's default tests (the paired randomization test, 9,999 resamples,
  Holm over the pairs of each measure), its table printed (to a file);
* in one process: the 1,050 tests alone (``cruxflow.metrics.crux_eval.compare_runs`` on the
  scored runs), their time and peak traced memory; and ``--scipy N`` of the same tests through
  ``scipy.stats.permutation_test`` (``batch=1000``) for scale.

It prints each wall time (best of ``--repeat``) and peak memory (max RSS of the process), with
the machine's load average before and after.

    .venv/bin/python benchmarks/paired_tests.py [--topics 4986] [--runs 21] [--repeat 3]
        [--scipy 2] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crux_eval import best, write_inputs  # noqa: E402  (the inputs and the timer, shared)

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def in_process(qrels: Path, judge: Path, runs: list[Path], n_scipy: int) -> None:
    import numpy as np
    from scipy import stats

    from cruxflow.metrics.crux_eval import compare_runs, crux_eval_runs

    results = crux_eval_runs(runs, qrels, judge)
    tracemalloc.start()
    started = time.perf_counter()
    rows = compare_runs(results)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"the {len(rows)} tests alone ({len(rows) // max(1, len(results[0].measures))} "
          f"pairs x {len(results[0].measures)} columns; compare_runs, in process): "
          f"{seconds:.2f} s, "
          f"peak traced memory {peak:.0f} MiB; {sum(r['p_adjusted'] < 0.05 for r in rows)} "
          "pairs differ at Holm-adjusted p < 0.05")
    if n_scipy:
        first = results[0].measures[0]
        a, b = results[0].per_topic, results[1].per_topic
        topics = sorted(t for t in a if a[t][first] is not None and b.get(t, {}).get(first)
                        is not None)
        x = np.array([a[t][first] for t in topics])
        y = np.array([b[t][first] for t in topics])
        started = time.perf_counter()
        for _ in range(n_scipy):
            p = stats.permutation_test((x, y), lambda u, v, axis: np.mean(u - v, axis=axis),
                                       permutation_type="samples", vectorized=True,
                                       n_resamples=9999, batch=1000,
                                       rng=np.random.default_rng(0)).pvalue
        each = (time.perf_counter() - started) / n_scipy
        ours = next(r["p"] for r in rows if r["measure"] == first)
        print(f"scipy.stats.permutation_test (batch=1000) on one of them: {each:.2f} s a test "
              f"(x {len(rows)} = {each * len(rows):.0f} s); p {p:.4f} there, {ours:.4f} here "
              "(other draws)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=4986)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scipy", type=int, default=2, help="tests through scipy, for scale")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        qrels, judge, runs = write_inputs(folder, args.topics, args.runs, args.seed)
        print(f"inputs: {args.topics} topics, top-100 runs x {args.runs} "
              f"({time.perf_counter() - started:.1f} s to write); {os.cpu_count()} cores; "
              f"load average {load()}")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "cruxflow.cli", "crux-eval", "--qrel", str(qrels),
               "--judge", str(judge), "--run", *map(str, runs)]
        off_time, off_rss, _ = best(args.repeat, [*cmd, "--test", "none"], env=env)
        on_time, on_rss, out = best(args.repeat, cmd, env=env)
        pairs = args.runs * (args.runs - 1) // 2
        print(f"crux-eval, {args.runs} runs, --test none:      {off_time:6.2f} s "
              f"{off_rss:6.0f} MiB")
        print(f"crux-eval, {args.runs} runs, default tests:    {on_time:6.2f} s "
              f"{on_rss:6.0f} MiB ({pairs} pairs x every column; "
              f"{on_time - off_time:.2f} s for the tests)")
        policy = next(line for line in out.splitlines() if line.startswith("paired tests"))
        print(f"  {policy}")
        in_process(qrels, judge, runs, args.scipy)
        print(f"load average after: {load()}")


if __name__ == "__main__":
    main()

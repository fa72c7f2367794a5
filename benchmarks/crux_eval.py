"""Benchmark: ``cruxflow crux-eval`` against the CRUX authors' rac_eval.py (issue 26).

Writes synthetic inputs shaped like CRUX-Multi-News (``--topics`` 4,986 topics, 12 judged
passages x 10 sub-questions each, ratings -1 and 0-5; the release's diversity qrels at eta 3:
one line ``topic question passage 1`` per rating >= 3; top-100 runs whose lines mix 8 of the
topic's judged passages with unjudged ones), seeded, into a temporary folder. Then, on the same
machine, one after the other:

* the authors' script as they publish it, ``python crux/evaluation/rac_eval.py --run R --qrel Q
  --judge J`` in a clone of DylanJoo/crux (``--authors DIR``, default ``$CRUXFLOW_CRUX_REPO``;
  a bare git directory is exported with ``git archive`` into the temporary folder), once per
  run as the script scores one run per call;
* ``cruxflow crux-eval --authors-line`` on one run, and on ``--runs`` (21) runs in one call
  (the script's line per run), and on the 21 runs as a user scores them: the table and the
  policy's default paired tests between every pair of runs (issue 51's targets: >= 5x the
  script for one run, >= 15x for 21 with the tests; ``benchmarks/paired_tests.py`` times the
  tests alone). The script and crux-eval on one run take turns, ``--repeat`` times.

It checks that the four means of every run agree to the 4 decimals the script prints, and
prints the wall time, the ratio and the peak memory (max RSS of the process, from
``resource``) of each. Both sides run with their bytecode caches, as installed packages have
them (a first, untimed call of each writes any that are missing, ``PYTHONDONTWRITEBYTECODE``
dropped for the children). Timings on a shared machine are noisy: it runs each ``--repeat`` (3)
times and reports the best.

    .venv/bin/python benchmarks/crux_eval.py [--authors DIR] [--topics 4986] [--runs 21]
        [--repeat 3] [--seed 7]

The authors' script needs ``ir_measures``, ``numpy`` and ``pandas`` (the venv has them);
nothing of it is copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from clones import clone, export

SCRIPT = Path("crux") / "evaluation" / "rac_eval.py"
QUESTIONS, JUDGED, DEPTH, JUDGED_IN_RUN = 10, 12, 100, 8
RATINGS = np.array([-1, 0, 0, 0, 0, 1, 2, 3, 4, 5])


def write_inputs(folder: Path, n_topics: int, n_runs: int, seed: int) -> tuple[Path, Path,
                                                                               list[Path]]:
    """The qrels, the judge file and ``n_runs`` runs, seeded."""
    rng = np.random.default_rng(seed)
    grid = RATINGS[rng.integers(0, len(RATINGS), size=(n_topics, JUDGED, QUESTIONS))]
    topics = [f"mn-{t}" for t in range(n_topics)]
    judge, qrels = folder / "judge.jsonl", folder / "div_qrels-tau3.txt"
    with judge.open("w") as out:
        for t, tid in enumerate(topics):
            for p in range(JUDGED):
                out.write(json.dumps({"id": tid, "docid": f"{tid}:{p}#{p}",
                                      "rating": grid[t, p].tolist()}) + "\n")
    with qrels.open("w") as out:
        for t, tid in enumerate(topics):
            for q in range(QUESTIONS):
                for p in np.flatnonzero(grid[t, :, q] >= 3):
                    out.write(f"{tid} {q} {tid}:{p}#{p} 1\n")
    runs = []
    for r in range(n_runs):
        path = folder / "runs" / f"system{r:02d}.run"
        path.parent.mkdir(exist_ok=True)
        lines = []
        for tid in topics:
            docs = [f"{tid}:{p}#{p}" for p in rng.choice(JUDGED, JUDGED_IN_RUN, replace=False)]
            docs += [f"other-{rng.integers(10**6)}:0#{i}" for i in range(DEPTH - len(docs))]
            order = rng.permutation(DEPTH)
            # a few ties, as real runs have: scores rounded to 2 decimals
            scores = np.round(np.sort(rng.uniform(0, 30, DEPTH))[::-1], 2)
            lines += [f"{tid} Q0 {docs[i]} {rank} {scores[rank - 1]:.2f} system{r:02d}\n"
                      for rank, i in enumerate(order, 1)]
        path.write_text("".join(lines))
        runs.append(path)
    return qrels, judge, runs


def export_checkout(authors: Path | None, folder: Path) -> Path:
    """A directory holding the authors' package ``crux`` with rac_eval.py: ``--authors`` or
    ``$CRUXFLOW_CRUX_REPO`` (benchmarks/clones.py)."""
    given = clone(authors, "CRUXFLOW_CRUX_REPO", "--authors", "benchmarks/crux_eval.py")
    found = export(given, folder / "crux-authors")
    if not (found / SCRIPT).is_file():
        sys.exit(f"benchmarks/crux_eval.py: {given} has no {SCRIPT}; clone "
                 "https://github.com/DylanJoo/crux at a commit that has it")
    return found


def timed(argv: list[str], env: dict | None = None, cwd: Path | None = None
          ) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of a child process."""
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "dt = time.perf_counter() - t; "
               "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
               "sys.stderr.write(p.stderr if p.returncode else ''); "
               "print(f'{dt} {rss}'); print(p.stdout, end=''); sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True,
                          text=True, env=env, cwd=cwd)
    if proc.returncode:
        sys.exit(f"benchmarks/crux_eval.py: {' '.join(argv[:4])} ... failed:\n{proc.stderr}")
    head, _, out = proc.stdout.partition("\n")
    seconds, rss = map(float, head.split())
    return seconds, rss, out


def means(line: str) -> dict[str, str]:
    """The script's line ``folder | file | P@10 | 0.1234 | ...`` as {name: value}."""
    last = line.strip().splitlines()[-1]   # the script's loader prints the qrels frame first
    cells = [c.strip() for c in last.split("|")][2:]
    return {cells[i]: cells[i + 1] for i in range(0, len(cells) - 1, 2) if cells[i]}


def best(n: int, argv: list[str], **kw) -> tuple[float, float, str]:
    results = [timed(argv, **kw) for _ in range(n)]
    return min(r[0] for r in results), max(r[1] for r in results), results[0][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=Path,
                        help="a clone of DylanJoo/crux holding crux/evaluation/rac_eval.py "
                             "(default: $CRUXFLOW_CRUX_REPO)")
    parser.add_argument("--topics", type=int, default=4986)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checkout = export_checkout(args.authors, folder)
        started = time.perf_counter()
        qrels, judge, runs = write_inputs(folder, args.topics, args.runs, args.seed)
        print(f"inputs: {args.topics} topics, {JUDGED} judged passages x {QUESTIONS} questions, "
              f"top-{DEPTH} runs x {args.runs} ({time.perf_counter() - started:.1f} s to write)")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
              f"{os.cpu_count()} cores")
        # both sides with their bytecode caches, as an installed package has them: a first,
        # untimed call of each writes those of modules that lack them (under
        # PYTHONDONTWRITEBYTECODE every call would compile cruxflow's modules again)
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env = {**base, "PYTHONPATH": str(checkout)}
        authors_cmd = [sys.executable, str(checkout / SCRIPT), "--qrel", str(qrels),
                       "--judge", str(judge)]
        ours_cmd = [sys.executable, "-m", "cruxflow.cli", "crux-eval", "--qrel", str(qrels),
                    "--judge", str(judge), "--authors-line"]
        ours_env = {**base, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        timed([*authors_cmd, "--run", str(runs[0])], env=env, cwd=checkout)
        timed([*ours_cmd, "--run", str(runs[0])], env=ours_env)

        # the two sides take turns, so that a slower minute of a shared machine weighs on both
        a_tries, o_tries = [], []
        for _ in range(max(1, args.repeat)):
            a_tries.append(timed([*authors_cmd, "--run", str(runs[0])], env=env, cwd=checkout))
            o_tries.append(timed([*ours_cmd, "--run", str(runs[0])], env=ours_env))
        (a_time, a_rss, a_out), (o_time, o_rss, o_out) = min(a_tries), min(o_tries)
        if means(a_out.strip()) != means(o_out.strip()):
            sys.exit(f"values differ:\n  authors: {a_out.strip()}\n  ours:    {o_out.strip()}")
        print(f"\n1 run:  rac_eval.py {a_time:6.2f} s {a_rss:7.0f} MiB | crux-eval "
              f"{o_time:6.2f} s {o_rss:7.0f} MiB | ratio {a_time / o_time:.2f}x")

        # the script scores one run per call: every run, once
        a_lines, a_total, a_peak = [], 0.0, 0.0
        for run in runs:
            seconds, rss, out = timed([*authors_cmd, "--run", str(run)], env=env, cwd=checkout)
            a_total, a_peak = a_total + seconds, max(a_peak, rss)
            a_lines.append(out.strip().splitlines()[-1])
        m_time, m_rss, m_out = best(args.repeat, [*ours_cmd, "--run", *map(str, runs)],
                                    env=ours_env)
        o_lines = m_out.strip().splitlines()
        bad = [(a, o) for a, o in zip(a_lines, o_lines, strict=True) if means(a) != means(o)]
        if bad:
            sys.exit(f"values differ for {len(bad)} runs, e.g.:\n  {bad[0][0]}\n  {bad[0][1]}")
        print(f"{len(runs)} runs: rac_eval.py {a_total:6.2f} s {a_peak:7.0f} MiB "
              f"({len(runs)} calls) | crux-eval {m_time:6.2f} s {m_rss:7.0f} MiB (one call) | "
              f"ratio {a_total / m_time:.2f}x; one call = {m_time / o_time:.1f}x one run")
        print(f"means agree to 4 decimals for all {len(runs)} runs, e.g. "
              f"{re.sub(r'^.*? [|] ', '', o_lines[0])}")
        # the 21 runs as a user scores them: the table and the policy's default paired tests
        # between every pair of runs (issue 51's target: >= 15x the script's 21 calls)
        tested = [sys.executable, "-m", "cruxflow.cli", "crux-eval", "--qrel", str(qrels),
                  "--judge", str(judge), "--run", *map(str, runs)]
        t_time, t_rss, t_out = best(args.repeat, tested, env=ours_env)
        tests = sum(1 for line in t_out.splitlines() if line.startswith(("P@10", "nDCG@10",
                                                                         "alpha_nDCG@10",
                                                                         "Cov@10",
                                                                         "Judged@10")))
        print(f"{len(runs)} runs with the default paired tests ({tests} tests): crux-eval "
              f"{t_time:6.2f} s {t_rss:7.0f} MiB | ratio to the script's {len(runs)} calls "
              f"{a_total / t_time:.2f}x")


if __name__ == "__main__":
    main()

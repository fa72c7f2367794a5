"""Benchmark: ``cruxflow evaluate --crux-root`` of 21 Multi-News-sized runs with its default
paired tests (issue 51: under 60 s and 1 GB on 2 cores).

Writes a CRUX release subset shaped like CRUX-Multi-News test, seeded, into a temporary
folder: ``crux-mds-multi_news/`` with ``topic/`` (``--topics``, 4,986 requests),
``subtopics/`` (10 sub-questions each), ``judge/`` (12 rated passages x 10 ratings a topic,
-1 and 0-5) and ``qrels/div_qrels-tau3.txt`` (one line per rating >= 3), and
``crux-mds-corpus/`` beside it holding each topic's 12 judged passages (60-120 words) and 100
unjudged ones (10-20 words); then ``--runs`` (21) top-100 runs, each ranking per topic 8 of
its judged passages among 92 of its unjudged ones (scores rounded to 2 decimals: a few ties).

It times ``cruxflow evaluate --crux-root crux-mds-multi_news --run <the runs>`` as a user runs
it: the release read once, both routes (the workflow's scorer at k = |Z*|, 10, 20 and the
authors' script's measures at 10), the policy's default paired tests between every pair of
runs on the printed measures (the paired randomization test, 9,999 resamples, Holm), the
tables printed. It prints the wall time (best of ``--repeat``), the CPU time and the peak
memory (max RSS of the process), and the load average before and after.

    .venv/bin/python benchmarks/evaluate_many.py [--topics 4986] [--runs 21] [--repeat 2]
        [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crux_eval import QUESTIONS, RATINGS  # noqa: E402  (the ratings' shape, shared)

ROOT = Path(__file__).resolve().parents[1]
JUDGED, UNJUDGED, DEPTH, JUDGED_IN_RUN = 12, 100, 100, 8


def write_release(folder: Path, n_topics: int, n_runs: int, seed: int) -> tuple[Path, list]:
    rng = np.random.default_rng(seed)
    subset, corpus = folder / "crux-mds-multi_news", folder / "crux-mds-corpus" / "collections"
    for sub in ("topic", "subtopics", "judge", "qrels", "runs"):
        (subset / sub).mkdir(parents=True)
    corpus.mkdir(parents=True)
    topics = [f"multi_news-test-{t}" for t in range(n_topics)]
    grid = RATINGS[rng.integers(0, len(RATINGS), size=(n_topics, JUDGED, QUESTIONS))]
    words = np.array([f"w{i}" for i in range(5000)])

    def text(n: int) -> str:
        return " ".join(words[rng.integers(0, len(words), n)])

    with (subset / "topic" / "requests.multi_news-test.jsonl").open("w") as out:
        for tid in topics:
            out.write(json.dumps({"id": tid, "request": f"Write a report on {tid}."}) + "\n")
    with (subset / "subtopics" / "subquestions.multi_news-test.jsonl").open("w") as out:
        for tid in topics:
            out.write(json.dumps({"id": tid, "subquestions": [f"q{i}?" for i in
                                                              range(QUESTIONS)]}) + "\n")
    with (subset / "judge" / "ratings.jsonl").open("w") as judge, \
            (subset / "qrels" / "div_qrels-tau3.txt").open("w") as qrels, \
            (corpus / "multi_news-test-docs.jsonl").open("w") as docs:
        for t, tid in enumerate(topics):
            for p in range(JUDGED):
                pid = f"{tid}:{p % 3}#{p}"
                judge.write(json.dumps({"id": tid, "docid": pid,
                                        "rating": grid[t, p].tolist()}) + "\n")
                docs.write(json.dumps({"id": pid, "contents": text(
                    int(rng.integers(60, 121)))}) + "\n")
            for q in range(QUESTIONS):
                for p in np.flatnonzero(grid[t, :, q] >= 3):
                    qrels.write(f"{tid} {q} {tid}:{p % 3}#{p} 1\n")
            for u in range(UNJUDGED):
                docs.write(json.dumps({"id": f"{tid}:{3 + u // 10}#{JUDGED + u}",
                                       "contents": text(int(rng.integers(10, 21)))}) + "\n")
    runs = []
    for r in range(n_runs):
        path = subset / "runs" / f"system{r:02d}.run"
        lines = []
        for tid in topics:
            own = [f"{tid}:{p % 3}#{p}" for p in rng.choice(JUDGED, JUDGED_IN_RUN, replace=False)]
            other = [f"{tid}:{3 + u // 10}#{JUDGED + u}"
                     for u in rng.choice(UNJUDGED, DEPTH - JUDGED_IN_RUN, replace=False)]
            docs_ = own + other
            order = rng.permutation(DEPTH)
            scores = np.round(np.sort(rng.uniform(0, 30, DEPTH))[::-1], 2)
            lines += [f"{tid} Q0 {docs_[i]} {rank} {scores[rank - 1]:.2f} system{r:02d}\n"
                      for rank, i in enumerate(order, 1)]
        path.write_text("".join(lines))
        runs.append(path)
    return subset, runs


def timed(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of a child process, and its stdout."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"benchmarks/evaluate_many.py: the command failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=4986)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subset, runs = write_release(Path(tmp), args.topics, args.runs, args.seed)
        print(f"inputs: {args.topics} topics, {JUDGED} judged passages x {QUESTIONS} questions, "
              f"{UNJUDGED} unjudged passages a topic, top-{DEPTH} runs x {args.runs} "
              f"({time.perf_counter() - started:.1f} s to write)")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
              f"{os.cpu_count()} cores")
        argv = [sys.executable, "-m", "cruxflow.cli", "evaluate", "--crux-root", str(subset),
                "--run", *map(str, runs)]
        tries = [timed(argv) for _ in range(max(1, args.repeat))]
        wall, cpu, rss, out = min(tries)
        pairs = args.runs * (args.runs - 1) // 2
        print(f"cruxflow evaluate --crux-root, {args.runs} runs, default paired tests "
              f"({pairs} pairs x 4 measures x 3 k, and the script's 5 measures): "
              f"{wall:.1f} s wall (best of {len(tries)}), {cpu:.1f} s CPU, {rss:.0f} MiB peak "
              f"(the target: under 60 s and 1 GB)")
        print("its table's first rows:\n" + "\n".join(out.splitlines()[:4]))
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

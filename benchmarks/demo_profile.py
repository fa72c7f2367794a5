"""Where a finished workflow run spent its time, from Snakemake's own records: each job's
``benchmark:`` file (wall seconds, CPU seconds) and its end time (the file's modification
time). Prints per rule the jobs, their wall and CPU seconds, and the run's span with how much of
it the cores sat idle, then the jobs that ran alone at the end.

    python benchmarks/demo_profile.py [RUN_FOLDER] [--cores 2]

RUN_FOLDER: where the run wrote ``benchmarks/results/`` (default: the current folder, where
``bash scripts/demo.sh`` runs). Used for issue 41's demo: which jobs to batch or pack.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path


def jobs(folder: Path) -> list[tuple[float, float, float, str, str]]:
    """(start, end, wall s, CPU s, rule, job) of every job, start and end in epoch seconds."""
    out = []
    root = folder / "benchmarks/results"
    for path in sorted(root.rglob("*.tsv")):
        rows = list(csv.DictReader(path.open(), delimiter="\t"))
        if not rows:
            continue
        end = path.stat().st_mtime
        wall = float(rows[-1]["s"])
        cpu = float(rows[-1].get("cpu_time") or 0.0)
        rel = path.relative_to(root)
        out.append((end - wall, end, wall, cpu, rel.parts[0].removesuffix(".tsv"),
                    str(rel.with_suffix(""))))
    return sorted(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default=".", type=Path)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--tail", type=int, default=8, help="how many of the last jobs to list")
    args = ap.parse_args(argv)
    found = jobs(args.folder)
    if not found:
        raise SystemExit(f"no benchmark files under {args.folder / 'benchmarks/results'}")
    by_rule: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for _, _, wall, cpu, rule, _ in found:
        by_rule[rule][0] += 1
        by_rule[rule][1] += wall
        by_rule[rule][2] += cpu
    first, last = min(j[0] for j in found), max(j[1] for j in found)
    span = last - first
    busy = sum(j[2] for j in found)
    print(f"{len(found)} jobs from the first job's start to the last one's end: {span:.0f} s; "
          f"job wall time {busy:.0f} s, {busy / span:.2f} jobs at once on average "
          f"({args.cores} cores: {max(0.0, args.cores * span - busy):.0f} core-seconds idle)")
    print(f"\n{'rule':24s} {'jobs':>5s} {'wall s':>8s} {'CPU s':>8s}")
    for rule, (n, wall, cpu) in sorted(by_rule.items(), key=lambda x: -x[1][1]):
        print(f"{rule:24s} {n:5d} {wall:8.1f} {cpu:8.1f}")
    print(f"\nthe last {args.tail} jobs (start and end in seconds from the first job's start):")
    for start, end, wall, _, _, name in sorted(found, key=lambda j: j[1])[-args.tail:]:
        print(f"  {start - first:6.0f} {end - first:6.0f} {wall:6.1f}  {name}")


if __name__ == "__main__":
    main()

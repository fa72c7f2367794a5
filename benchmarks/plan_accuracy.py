"""How right the cost plan was: a plan's seconds per LLM stage (``cruxflow plan --json PATH``,
made before the run) against what the run's jobs took: the CPU seconds each job records of
itself in ``logs/<rule>/...calls.json`` (``cpu_seconds``: its imports, model load and calls; a
1-thread llama.cpp job's time on a core of its own, what a calibrated plan predicts for a CPU
backend), and the wall seconds of its Snakemake benchmark file (``benchmarks/results/<rule>/
...tsv``, ``s``; on a machine shared with other work they include the waits for a core; the
files' ``cpu_time`` is sampled every few seconds and misses short jobs, so it is not used). Also
the requests the run sent against the planned ones.

    .venv/bin/python benchmarks/plan_accuracy.py --plan myproject/plan_cal.json --workdir myproject
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

STAGES = ("passages", "report_requests", "subquestions", "ratings", "rag_generate", "rag_judge")


PARTS = {"passages": "data generation", "report_requests": "data generation",
         "subquestions": "data generation", "ratings": "data generation",
         "rag_generate": "RAG", "rag_judge": "RAG"}


def _diff(planned: float, measured: float) -> str:
    return f"{planned / measured - 1:+6.0%}" if measured else f"{'':>6}"


def measured(workdir: Path, rule: str) -> dict:
    wall = cpu = 0.0
    jobs = 0
    for path in (workdir / "benchmarks" / "results" / rule).rglob("*.tsv"):
        rows = list(csv.DictReader(path.open(), delimiter="\t"))
        wall += float(rows[-1]["s"])
        jobs += 1
    requests = calls = 0
    for path in (workdir / "logs" / rule).rglob("*.calls.json"):
        counts = json.loads(path.read_text())
        requests += counts["requests"]
        calls += counts["calls"]
        cpu += counts.get("cpu_seconds") or 0.0
    return {"jobs": jobs, "wall": wall, "cpu": cpu, "requests": requests, "calls": calls}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", type=Path, required=True, help="the plan's JSON")
    ap.add_argument("--workdir", type=Path, required=True, help="the finished run's folder")
    args = ap.parse_args(argv)
    plan = json.loads(args.plan.read_text())
    planned: dict[str, dict] = {}
    for row in plan["stages"]:
        p = planned.setdefault(row["stage"], {"seconds": 0.0, "requests": 0})
        p["seconds"] += row["seconds"]
        p["requests"] += row["requests"]
    print(f"{'stage':16} {'planned s':>10} {'jobs cpu s':>10} {'diff':>6} {'jobs wall s':>11}"
          f" {'planned req':>11} {'requests':>8} {'calls':>6}")
    sums: dict[str, list[float]] = {}
    for stage in STAGES:
        if stage not in planned:
            continue
        m = measured(args.workdir, stage)
        p = planned[stage]
        if not m["jobs"]:
            print(f"{stage:16} {p['seconds']:10.1f} {'not run':>10}")
            continue
        for part in (PARTS[stage], "total"):
            sums.setdefault(part, [0.0, 0.0, 0.0])
            for i, x in enumerate((p["seconds"], m["cpu"], m["wall"])):
                sums[part][i] += x
        print(f"{stage:16} {p['seconds']:10.1f} {m['cpu']:10.1f} {_diff(p['seconds'], m['cpu'])}"
              f" {m['wall']:11.1f} {p['requests']:11d} {m['requests']:8d} {m['calls']:6d}")
    for part in ("data generation", "RAG", "total"):
        if part in sums:
            plan_s, cpu, wall = sums[part]
            print(f"{part:16} {plan_s:10.1f} {cpu:10.1f} {_diff(plan_s, cpu)} {wall:11.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

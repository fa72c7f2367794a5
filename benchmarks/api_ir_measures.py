"""Benchmark: ``cruxflow.evaluate`` against ``ir_measures.calc_aggregate`` on TREC-style inputs
(issue 51: at most 2x ir_measures' time, with equal values).

Synthetic TREC-style inputs, seeded: ``--topics`` topics (5,000), each with graded qrels of
100 judged documents (grades 0-3, most 0; 70 from the run's top 200, as TREC's pools are, and 30
others), and two runs: the top 100 and the top 1,000 of each topic (ids like
``msmarco_v2.1_doc_12_3456789``; a few tied scores). The measures: nDCG@10, R@100 and AP (the
whole list: trec_eval's map). Each route runs ``--repeat`` times in a fresh child process, the
routes taking turns; it prints the best wall time of the evaluation (after the imports) and the
CPU time of that try, the child's peak memory, and checks that every route gives ir_measures'
three values:

* ``ir_measures, dicts``: ``calc_aggregate(measures, qrels, run)`` on dicts read beforehand;
* ``ir_measures, files``: reading both files with ``ir_measures.read_trec_qrels/run``, then
  ``calc_aggregate``;
* ``cruxflow, dicts``: ``cruxflow.evaluate(run, qrels, measures)`` on the same dicts;
* ``cruxflow, files``: ``cruxflow.evaluate(run_file, Judgments(relevance=qrels_file), ...)``.

    .venv/bin/python benchmarks/api_ir_measures.py [--topics 5000] [--repeat 3] [--seed 7]

It prints figures; no test asserts them (timings on a shared machine are noisy: the load
average is printed beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURES = ["nDCG@10", "R@100", "AP"]
ROUTES = ["ir_measures, dicts", "ir_measures, files", "cruxflow, dicts", "cruxflow, files"]
DEPTHS = (100, 1000)


def write_inputs(folder: Path, n_topics: int, seed: int) -> dict[str, str]:
    """The qrels and the two runs (top 100, top 1,000), seeded. As in TREC, a topic's judged
    documents are mostly its runs' top documents (a pool: 70 of the run's top 200) and a few
    others (30), graded 0-3 with most 0; a run's other documents are judged for no topic (ids
    from a space of 10^9 documents)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    qrels_path, runs = folder / "qrels.txt", {d: folder / f"top{d}.run" for d in DEPTHS}
    with qrels_path.open("w") as qrels, runs[100].open("w") as r100, \
            runs[1000].open("w") as r1000:
        for t in range(n_topics):
            tid = f"2024-{100000 + t}"
            ids = [f"msmarco_v2.1_doc_{d // 10**7:02d}_{d % 10**7}"
                   for d in rng.choice(10**9, 1030, replace=False).tolist()]
            ranked, others = ids[:1000], ids[1000:]
            judged = [ranked[i] for i in rng.choice(200, 70, replace=False).tolist()] + others
            grades = rng.choice(4, len(judged), p=[0.6, 0.2, 0.12, 0.08])
            qrels.write("".join(f"{tid} 0 {d} {g}\n"
                                for d, g in zip(judged, grades.tolist(), strict=True)))
            # scores to 2 decimals: a few ties, as real runs have
            scores = np.round(np.sort(rng.uniform(0, 40, 1000))[::-1], 2)
            lines = [f"{tid} Q0 {d} {r} {s:.2f} run\n"
                     for r, (d, s) in enumerate(zip(ranked, scores.tolist(), strict=True), 1)]
            r1000.write("".join(lines))
            r100.write("".join(lines[:100]))
    return {"qrels": str(qrels_path), **{f"run{d}": str(p) for d, p in runs.items()}}


def child(route: str, paths: dict[str, str], depth: int) -> dict:
    """One route in this (fresh) process: {seconds, cpu, values, rss}."""
    import resource
    import time
    import warnings

    import ir_measures

    import cruxflow

    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    run_path = paths[f"run{depth}"]
    if route.startswith("cruxflow"):
        # cruxflow's modules, imported when first used, imported before the clock starts
        # (ir_measures' are at its import)
        import cruxflow.data.runs
        import cruxflow.metrics.api
        import cruxflow.metrics.compute
        import cruxflow.metrics.inputs
        import cruxflow.metrics.scorer  # noqa: F401
    if route.endswith("dicts"):
        qrels, run = {}, {}
        for q in ir_measures.read_trec_qrels(paths["qrels"]):
            qrels.setdefault(q.query_id, {})[q.doc_id] = q.relevance
        for s in ir_measures.read_trec_run(run_path):
            run.setdefault(s.query_id, {})[s.doc_id] = s.score
    start, cpu = time.perf_counter(), time.process_time()
    if route == "ir_measures, dicts":
        got = ir_measures.calc_aggregate(measures, qrels, run)
        values = {str(m): got[m] for m in measures}
    elif route == "ir_measures, files":
        got = ir_measures.calc_aggregate(measures, list(ir_measures.read_trec_qrels(
            paths["qrels"])), list(ir_measures.read_trec_run(run_path)))
        values = {str(m): got[m] for m in measures}
    else:
        if route == "cruxflow, dicts":
            run_in, judgments = run, qrels
        else:
            run_in, judgments = run_path, cruxflow.Judgments(relevance=paths["qrels"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # ties at the cutoffs: counted, not shown
            frame = cruxflow.evaluate(run_in, judgments, MEASURES)
        values = frame.mean().to_dict()
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "values": values, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--depth", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, json.loads(args.paths), args.depth)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_inputs(Path(tmp), args.topics, args.seed)
        print(f"{args.topics} TREC-style topics, graded qrels (0-3) of 100 documents each; load "
              f"average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        for depth in DEPTHS:
            best: dict[str, dict] = {}
            for _ in range(args.repeat):
                for route in ROUTES:
                    out = subprocess.run([sys.executable, __file__, "--child", route, "--paths",
                                          json.dumps(paths), "--depth", str(depth)],
                                         capture_output=True, text=True, env=os.environ,
                                         check=True).stdout
                    got = json.loads(out.strip().splitlines()[-1])
                    if route not in best or got["seconds"] < best[route]["seconds"]:
                        best[route] = got
            print(f"\ntop {depth} ({args.topics * depth:,} run lines)")
            print("| route | wall s (best) | CPU s | x ir_measures (same input) | peak RSS MiB | "
                  + " | ".join(MEASURES) + " |")
            print("| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in MEASURES) + " |")
            for route in ROUTES:
                r = best[route]
                base = best["ir_measures, " + route.split(", ")[1]]
                print(f"| {route} | {r['seconds']:.3f} | {r['cpu']:.3f} | "
                      f"{r['seconds'] / base['seconds']:.2f} | {r['rss']:.0f} | "
                      + " | ".join(f"{r['values'][m]:.6f}" for m in MEASURES) + " |")
            want = best["ir_measures, dicts"]["values"]
            for route in ROUTES:
                for m in MEASURES:
                    assert abs(best[route]["values"][m] - want[m]) < 1e-12, (route, m)
            print("every route gives ir_measures' three values (to 1e-12)")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

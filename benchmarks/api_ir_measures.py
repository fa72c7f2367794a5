"""Benchmark: ``cruxflow.evaluate`` against ``ir_measures.calc_aggregate`` for ir_measures' own
measures (issue 41, item 2: within 2x of ir_measures, at no more than twice its memory).

Synthetic inputs shaped like CRUX-Multi-News (``--topics`` 4,986 topics, 12 judged passages x
10 sub-questions each, a top-100 run; ``benchmarks/crux_eval.py``'s writer, seeded), and the
relevance qrels of P* graded 2-1 (P** 2, the rest 1) written from the ratings. The measures:
nDCG@10, R@100, AP@100. Each route runs ``--repeat`` times in a fresh child process (one
after the other on the same machine); it prints the best wall time of the evaluation (after
the imports) and the child's peak memory (max RSS, imports included: numpy, pandas and
ir_measures are most of it), and checks that every route gives the same three values:

* ``ir_measures, dicts``: ``calc_aggregate(measures, qrels, run)`` on dicts read beforehand
  (what the issue timed at 0.19 s);
* ``ir_measures, files``: reading both files with ``ir_measures.read_trec_qrels/run``, then
  ``calc_aggregate``;
* ``cruxflow, dicts``: ``cruxflow.evaluate(run, qrels, measures)`` on the same dicts;
* ``cruxflow, files``: ``cruxflow.evaluate(run_file, Judgments(relevance=qrels_file), ...)``;
* ``cruxflow, from the ratings``: ``cruxflow.evaluate(run_file, judge_file, ...)``, the
  relevance qrels derived (P** by the greedy, for every topic at once).

    .venv/bin/python benchmarks/api_ir_measures.py [--topics 4986] [--repeat 3] [--seed 7]

Each route's modules are imported before its clock starts. It prints figures; no test
asserts them (timings on a shared machine are noisy: the load
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

MEASURES = ["nDCG@10", "R@100", "AP@100"]
ROUTES = ["ir_measures, dicts", "ir_measures, files", "cruxflow, dicts", "cruxflow, files",
          "cruxflow, from the ratings"]


def write_inputs(folder: Path, n_topics: int, seed: int) -> dict[str, Path]:
    sys.path.insert(0, str(Path(__file__).parent))
    from crux_eval import write_inputs as write_crux

    from cruxflow.data.ingest.crux_common import read_ratings
    from cruxflow.data.io import write_qrels
    from cruxflow.data.model import Dataset, Topic
    from cruxflow.metrics.judgments import derive, relevance_qrels

    _, judge, runs = write_crux(folder, n_topics, 1, seed)
    ratings = read_ratings(judge).by_topic()
    n = {t: len(next(iter(m.values()))) for t, m in ratings.items()}
    dataset = Dataset({t: Topic(t, None, [], questions=[""] * n[t]) for t in ratings}, {}, {},
                      {(t, p): r for t, m in ratings.items() for p, r in m.items()})
    judged = derive(dataset)
    qrels = folder / "relevance.qrels"
    write_qrels(qrels, ((t, "0", p, g) for t, docs in relevance_qrels(
        judged, dataset.ratings_by_topic()).items() for p, g in docs.items()))
    return {"judge": judge, "run": runs[0], "qrels": qrels}


def child(route: str, paths: dict[str, str]) -> dict:
    """One route in this (fresh) process: {seconds, values}."""
    import resource
    import time

    import ir_measures

    import cruxflow

    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    if route.startswith("cruxflow"):
        # cruxflow's modules, imported when first used, imported before the clock starts
        # (ir_measures' are at its import): the scorer's, the inputs', the compute functions'
        import cruxflow.metrics.api
        import cruxflow.metrics.compute
        import cruxflow.metrics.cuts
        import cruxflow.metrics.inputs
        import cruxflow.metrics.scorer  # noqa: F401
    if route.endswith("dicts"):
        qrels, run = {}, {}
        for q in ir_measures.read_trec_qrels(paths["qrels"]):
            qrels.setdefault(q.query_id, {})[q.doc_id] = q.relevance
        for s in ir_measures.read_trec_run(paths["run"]):
            run.setdefault(s.query_id, {})[s.doc_id] = s.score
    start = time.perf_counter()
    if route == "ir_measures, dicts":
        got = ir_measures.calc_aggregate(measures, qrels, run)
        values = {str(m): got[m] for m in measures}
    elif route == "ir_measures, files":
        got = ir_measures.calc_aggregate(measures, list(ir_measures.read_trec_qrels(
            paths["qrels"])), list(ir_measures.read_trec_run(paths["run"])))
        values = {str(m): got[m] for m in measures}
    else:
        if route == "cruxflow, dicts":
            run_in, judgments = run, qrels
        elif route == "cruxflow, files":
            run_in, judgments = paths["run"], cruxflow.Judgments(relevance=paths["qrels"])
        else:
            run_in, judgments = paths["run"], paths["judge"]
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # ties at the cutoffs: counted, not shown
            frame = cruxflow.evaluate(run_in, judgments, MEASURES)
        values = frame.mean().to_dict()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "values": values,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=4986)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, json.loads(args.paths))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: str(v) for k, v in write_inputs(Path(tmp), args.topics, args.seed).items()}
        print(f"{args.topics} topics x top 100 ({sum(1 for _ in open(paths['run']))} run lines); "
              f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for route in ROUTES:
                out = subprocess.run([sys.executable, __file__, "--child", route, "--paths",
                                      json.dumps(paths)], capture_output=True, text=True,
                                     env=os.environ, check=True).stdout
                got = json.loads(out.strip().splitlines()[-1])
                if route not in best or got["seconds"] < best[route]["seconds"]:
                    best[route] = got
        base = best["ir_measures, dicts"]
        print("| route | seconds (best) | x ir_measures, dicts | peak RSS (MiB) | "
              + " | ".join(MEASURES) + " |")
        print("| --- | --- | --- | --- | " + " | ".join("---" for _ in MEASURES) + " |")
        for route in ROUTES:
            r = best[route]
            print(f"| {route} | {r['seconds']:.3f} | {r['seconds'] / base['seconds']:.2f} | "
                  f"{r['rss']:.0f} | " + " | ".join(f"{r['values'][m]:.6f}" for m in MEASURES)
                  + " |")
        for route in ROUTES:
            for m in MEASURES:
                assert abs(best[route]["values"][m] - base["values"][m]) < 1e-9, (route, m)
        print("every route gives the same three values (to 1e-9)")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

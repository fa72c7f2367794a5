"""Benchmark: Table 1's context metrics (ContextScorer) at Multi-News test scale (issue 19).

Synthetic data shaped like Multi-News test: per topic 10 sub-questions and 40 rated passages
(60-120 words; ratings -1 and 0-5, four in ten 0), 21 pipelines whose top-20 per topic holds
14 of the topic's passages and 6 of other topics' (unrated for it), context sizes
k in {|Z*|, 10, 20}. Prints, for ``--sizes`` (200 and 4,986 topics, Multi-News test's count):
building the scorer (judgments' qrels, arrays, token counts of Z*), scoring all 21 x 3 runs
(CRUX columns, IR columns, both alpha-nDCGs) in one call (``ContextScorer.score_many``: the
runs' contexts stacked, each measure called once per stack) and in one call per run and k
(``ContextScorer.score``, as the workflow's per-pipeline jobs score their run); each figure
the median of ``--repeat`` (3) fresh scorers at the largest size and of proportionally more
at a smaller one (25 x 3 at 200 topics), the sizes taking turns a round at a time so that a
slower minute of a shared machine weighs on both (the scoring includes what a scorer builds
on first use: the judged passages' index and token counts); the cost per context and the
ratio of the two sizes' scoring times (issue 41's target: <= 3 s at 4,986 topics, a ratio
near 4,986 / 200 = 25) and, from the two sizes, a call's time as a fixed part plus a part per
topic; the wall time with the pipelines split over ``--processes`` (2) processes, as the
workflow's per-pipeline jobs run on 2 cores; then the route before issue 19 (a Python loop
over topics, ir_measures and pyndeval rebuilt for every run and size) at ``--old-topics``
(50) with the largest difference between the two routes' values.

    .venv/bin/python benchmarks/metrics.py [--sizes 200 4986] [--repeat 3] [--old-topics 50]
        [--seed 13] [--processes 2]

It prints figures; no test asserts them (timings on a shared machine are noisy: run it 2-3
times; the load average is printed before and after).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cruxflow.data.io import RunRow
from cruxflow.data.model import Dataset, Passage, Topic
from cruxflow.data.runs import as_run
from cruxflow.metrics.judgments import derive, diversity_rows, relevance_qrels
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import regex_token_count

# the old route's per-topic formulas and libraries: the tests' oracles
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from oracles import libraries as ir  # noqa: E402
from oracles.crux_formulas import alpha_ndcg, coverage, density  # noqa: E402

SIZES = ["oracle", 10, 20]

VOCABULARY = np.array([f"w{i}" for i in range(5000)])
RATING_CHOICES = np.array([-1, 0, 0, 0, 0, 1, 2, 3, 4, 5])


def synthetic(n_topics: int, *, seed: int = 13, questions: int = 10, judged: int = 40,
              pipelines: int = 21, depth: int = 20, foreign: int = 6):
    """A dataset shaped like Multi-News test and ``pipelines`` runs over it.

    Each topic has ``questions`` sub-questions and ``judged`` rated passages of 60-120 words;
    each run's top ``depth`` per topic holds ``depth - foreign`` of the topic's passages and
    ``foreign`` passages of other topics (unjudged for this topic).
    """
    rng = np.random.default_rng(seed)
    topics, passages, ratings = {}, {}, {}
    pids = np.empty((n_topics, judged), dtype=object)
    words = rng.integers(0, len(VOCABULARY), size=(n_topics * judged, 120))
    lengths = rng.integers(60, 121, size=n_topics * judged)
    grid = RATING_CHOICES[rng.integers(0, len(RATING_CHOICES), size=(n_topics, judged, questions))]
    for t in range(n_topics):
        tid = f"t{t}"
        topics[tid] = Topic(tid, "summary", [f"{tid}:{d}" for d in range(3)], query="q",
                            questions=[f"q{i}?" for i in range(questions)])
        for j in range(judged):
            pid = f"{tid}:{j % 3}#{j}"
            i = t * judged + j
            text = " ".join(VOCABULARY[words[i, :lengths[i]]])
            passages[pid] = Passage(pid, text, tid, f"{tid}:{j % 3}")
            ratings[(tid, pid)] = grid[t, j].tolist()
            pids[t, j] = pid
    runs = []
    for _ in range(pipelines):
        own = np.argsort(rng.random((n_topics, judged)), axis=1)[:, :depth - foreign]
        other = rng.integers(0, n_topics - 1, size=(n_topics, foreign))
        other += other >= np.arange(n_topics)[:, None]          # never the topic itself
        slot = rng.integers(0, judged, size=(n_topics, foreign))
        run = {}
        for t in range(n_topics):
            tid = f"t{t}"
            docs = list(pids[t, own[t]]) + list(dict.fromkeys(pids[other[t], slot[t]]))
            order = rng.permutation(len(docs))
            run[tid] = [RunRow(tid, docs[i], r + 1, float(depth - r))
                        for r, i in enumerate(order)]
        runs.append(run)
    return Dataset(topics, {}, passages, ratings), runs


def _clocks() -> np.ndarray:
    """Wall time and this process's CPU time: on a shared machine the CPU time is what the
    scoring would take on an idle one (it runs on one core)."""
    return np.array([time.perf_counter(), time.process_time()])


def new_route(ds: Dataset, runs, many: bool = True) -> dict:
    """Build a scorer and score every run at every k: in one call (``many``) or one call
    per run and k."""
    judged = derive(ds, 3)
    texts = {p: x.contents for p, x in ds.passages.items()}
    # the runs by column, as the workflow reads its run files (block by block: no object
    # per line; benchmarks/api_ir_measures.py times that reading)
    runs = [as_run(run) for run in runs]
    start = _clocks()
    scorer = ContextScorer(ds, judged, texts, regex_token_count)
    built = _clocks()
    cases = [(run, f"s{i}", k) for i, run in enumerate(runs) for k in SIZES]
    frame = scorer.score_many(cases) if many else pd.concat(
        [scorer.score(*case) for case in cases], ignore_index=True)
    scored = _clocks()
    return {"build": built - start, "score": scored - built, "contexts": len(frame),
            "frame": frame}


def write_runs(runs, folder: Path) -> list[Path]:
    """The runs as TREC run files (``query Q0 passage rank score tag``)."""
    paths = []
    for i, run in enumerate(runs):
        path = folder / f"s{i:02d}.run"
        path.write_text("".join(f"{r.query_id} Q0 {r.doc_id} {r.rank} {r.score:.6f} s{i}\n"
                                for rows in run.values() for r in rows))
        paths.append(path)
    return paths


def workflow_route(ds: Dataset, paths: list[Path]) -> dict:
    """Each run as rule context_metrics scores it (workflow_scripts/context_metrics.py), the
    scorer built once: the run file read (``read_run_file``), checked against the collection
    (``check_run``), its tie warning, and one ``score_many`` call for its three sizes. CPU
    seconds of each part, summed over the runs."""
    from cruxflow.data.runs import check_run, read_run_file

    judged = derive(ds, 3)
    texts = {p: x.contents for p, x in ds.passages.items()}
    clock = time.process_time
    parts = dict.fromkeys(("build", "read", "check", "score"), 0.0)
    start = clock()
    scorer = ContextScorer(ds, judged, texts, regex_token_count)
    parts["build"] = clock() - start
    rows = 0
    for i, path in enumerate(paths):
        start = clock()
        run = read_run_file(path).lines
        parts["read"] += clock() - start
        start = clock()
        check_run(run, ds.topics, texts, path)
        parts["check"] += clock() - start
        start = clock()
        scorer.tie_line(run, SIZES)
        rows += len(scorer.score_many([(run, f"s{i}", k) for k in SIZES]))
        scorer.forget_runs()
        parts["score"] += clock() - start
    return {**parts, "rows": rows}


_SHARED: tuple = ()   # (dataset, judgments, texts, runs) for the forked workers of parallel_route


def _score_share(share: list[int]) -> int:
    ds, judged, texts, runs = _SHARED
    scorer = ContextScorer(ds, judged, texts, regex_token_count)
    return len(scorer.score_many([(runs[i], f"s{i}", k) for i in share for k in SIZES]))


def parallel_route(ds: Dataset, runs, processes: int) -> float:
    """Wall time of the 21 pipelines split over ``processes`` forked processes, each
    building its own scorer, as the workflow's per-pipeline jobs do on ``--cores 2``."""
    global _SHARED
    # what new_route has before its clock starts (judgments, texts, runs read by column):
    # the processes time building their scorer and scoring, as the table's columns do
    _SHARED = (ds, derive(ds, 3), {p: x.contents for p, x in ds.passages.items()},
               [as_run(run) for run in runs])
    shares = [list(range(i, len(runs), processes)) for i in range(processes)]
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        pool.map(_score_share, shares)
    return time.perf_counter() - start


def old_route(ds: Dataset, runs) -> dict:
    """The scorer before issue 19, one topic at a time (kept here only to compare)."""
    judged = derive(ds, 3)
    texts = {p: x.contents for p, x in ds.passages.items()}
    start = _clocks()
    scorer = ContextScorer(ds, judged, texts, regex_token_count)
    matrix = ds.ratings_by_topic()
    judged = {t: j for t, j in judged.items() if j.kept}
    qrels = relevance_qrels(judged, matrix)
    diversity = ir.diversity_frame(diversity_rows(judged, matrix, 3))
    frames = []
    for run in runs:
        for k in SIZES:
            ctxs = {t: [r.doc_id for r in run.get(t, [])[:len(j.required) if k == "oracle"
                                                         else k]] for t, j in judged.items()}
            ir_scores = ir.per_query(ctxs, qrels)          # evaluator rebuilt per call
            qids = [q for q in ctxs if q in set(diversity["query_id"])]   # as it was
            ndeval = ir.per_query_ndeval({q: ctxs[q] for q in qids}, diversity)
            records = []
            for tid, j in judged.items():
                rows = scorer.rating_rows(tid, ctxs[tid])
                oracle = scorer.rating_rows(tid, j.required)
                cov = coverage(rows, j.kept)
                tok = sum(regex_token_count(texts[p]) for p in ctxs[tid])
                records.append({
                    "topic": tid, "Cov": cov,
                    "alpha_nDCG_crux": alpha_ndcg(rows, oracle, j.kept),
                    "Den": density(cov, tok, coverage(oracle, j.kept),
                                   scorer.oracle_tokens[tid]),
                    **ir_scores[tid], "alpha_nDCG_published": ndeval.get(tid, 0.0)})
            frames.append(pd.DataFrame.from_records(records))
    return {"time": _clocks() - start, "frame": pd.concat(frames)}


def _pair(values, digits: int = 2) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 4986])
    parser.add_argument("--repeat", type=int, default=3,
                        help="score each size this many times (fresh scorers), print medians")
    parser.add_argument("--old-topics", type=int, default=50)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--processes", type=int, default=2,
                        help="also score the pipelines split over this many processes")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print("| topics | contexts | build scorer (s) | score 21 x 3 runs in one call (s) | "
          "per context (us) | one call per run and k (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    per_context, per_call, wall = {}, {}, {}
    data = {n: synthetic(n, seed=args.seed) for n in args.sizes}
    # the sizes take turns, a round at a time, so that a slower minute of a shared machine
    # weighs on every size alike; a smaller size is scored more times a round (as many times
    # as it is smaller, at most 25x), for a median over about the same time per size
    tries: dict[int, list] = {n: [] for n in args.sizes}
    for _ in range(max(args.repeat, 1)):
        for n, (ds, runs) in data.items():
            for _ in range(min(25, max(1, round(max(args.sizes) / n)))):
                tries[n] += [new_route(ds, runs, many) for many in (True, False)]
    for n, (ds, runs) in data.items():
        med = {key: [np.median([t[key] for t in tries[n][i::2]], axis=0) for i in (0, 1)]
               for key in ("build", "score")}
        contexts = tries[n][0]["contexts"]
        per_context[n] = med["score"][0] / contexts
        per_call[n] = med["score"][1] / (len(runs) * len(SIZES))   # one run at one k
        print(f"| {n} | {contexts} | {_pair(med['build'][0])} | {_pair(med['score'][0])} | "
              f"{_pair(per_context[n] * 1e6, 1)} | {_pair(med['score'][1])} |")
        if args.processes > 1:
            wall[n] = parallel_route(ds, runs, args.processes)
    if len(args.sizes) >= 2:
        a, b = args.sizes[0], args.sizes[-1]
        ratio = per_context[b] * b / (per_context[a] * a)
        print(f"scoring time ratio {b}/{a} topics, in one call: {_pair(ratio)}; one call per "
              f"run and k: {_pair(per_call[b] / per_call[a])} (linear: {b / a:.2f})")
        # a call's time as a fixed part and a part per topic, from the two sizes: a ratio
        # below the linear one is the fixed part (pandas' frame, numpy's per-call overhead)
        slope = (per_call[b] - per_call[a]) / (b - a)
        print(f"one call per run and k: {_pair((per_call[a] - slope * a) * 1e3)} ms "
              f"fixed + {_pair(slope * 1e6)} us per topic")
    print(f"(each figure: wall / CPU time of this process, the median of {args.repeat} "
          "fresh scorers at the largest size, of proportionally more at a smaller one)")
    for n, seconds in wall.items():
        print(f"{n} topics, build + score split over {args.processes} processes: "
              f"{seconds:.2f} s wall")
    # through the workflow's own call (issue 51's target: at most 3 s for the 21 x 3 contexts)
    n = max(args.sizes)
    ds, runs = data[n]
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_runs(runs, Path(tmp))
        tries = [workflow_route(ds, paths) for _ in range(max(args.repeat, 1))]
    med = {key: float(np.median([t[key] for t in tries])) for key in tries[0]}
    print(f"{n} topics x {len(runs)} run files x {len(SIZES)} k, as rule context_metrics scores "
          f"each run (CPU s, median of {len(tries)}): score_many per run {med['score']:.2f} "
          f"(the target: <= 3 s); with reading the files {med['read']:.2f} and checking them "
          f"{med['check']:.2f}: {med['score'] + med['read'] + med['check']:.2f}; the scorer "
          f"built once {med['build']:.2f}")
    if args.old_topics > 0:
        compare_old(args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def compare_old(args) -> None:
    ds, runs = synthetic(args.old_topics, seed=args.seed)
    old, new = old_route(ds, runs), new_route(ds, runs)
    # the columns whose definition the old route shares (nDCG@k and alpha_nDCG@k came later)
    cols = ["Cov", "alpha_nDCG_crux", "Den", "R", "AP", "alpha_nDCG_published"]
    diff = np.nanmax(np.abs(old["frame"][cols].to_numpy()
                            - new["frame"][cols].to_numpy()))
    print(f"{args.old_topics} topics, build + score (wall / CPU s): before issue 19 "
          f"{_pair(old['time'])}, now {_pair(new['build'] + new['score'])}; "
          f"largest difference between the values: {diff:.1e}")


if __name__ == "__main__":
    main()

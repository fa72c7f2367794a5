"""crux-eval's P, nDCG and alpha-nDCG (the engine's, under rac_eval.py's names) against the
libraries the script calls (pytrec_eval and pyndeval, tests/oracles/libraries.py): the same
topics and the same values, compared exactly, on the release's files and on random qrels and
runs with tied scores, unjudged passages, topics on one side only, subtopics that first appear
out of order and ranks that keep more than k lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from oracles.libraries import rac_eval_values

from cruxflow.data.ingest.crux_common import DiversityQrels, JudgeRatings
from cruxflow.data.runs import RunFile, read_run_file
from cruxflow.metrics.crux_eval import crux_eval

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"


def _both(qrels, judge, top: RunFile, k: int = 10, alpha: float = 0.5):
    """(the engine's values through crux-eval, the libraries'), per measure and run topic."""
    result = crux_eval(top, qrels, judge, k=k, alpha=alpha)
    engine = {}
    for short, name in zip(("P", "nDCG", "alpha_nDCG"), result.measures[:3], strict=True):
        engine[short] = {t: row[name] for t, row in result.per_topic.items()
                         if t in top.lines.topics and row[name] is not None}
    want = rac_eval_values(qrels if not isinstance(qrels, Path) else _qrels(qrels), top, k,
                           alpha)
    want = {m: {t: v for t, v in values.items() if t in top.lines.topics}
            for m, values in want.items()}
    # a measure no topic is evaluated for: absent from one route, empty in the other
    return ({m: v for m, v in route.items() if v} for route in (engine, want))


def _qrels(path):
    from cruxflow.data.ingest.crux_common import read_diversity_qrels

    return read_diversity_qrels(path)


def test_the_release_files_score_the_same_both_ways():
    top = read_run_file(DUC / "run" / "bm25.run", max_rank=10)
    got, want = _both(DUC / "qrels" / "div_qrels-tau3.txt", DUC / "judge", top)
    assert got == want and all(want.values())


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    n_topics = int(rng.integers(1, 12))
    subtopic_names = [f"s{i}" for i in rng.permutation(8)]   # first appearance out of order
    rows, run = [], {}
    for t in range(n_topics):
        tid = f"t{t}"
        # ids that carry their topic, as CRUX's do, or (every third case) ids that two topics
        # may share, as NeuCLIR's documents do
        passages = list(dict.fromkeys(
            f"d{rng.integers(30)}" if seed % 3 == 0 else f"{tid}:{rng.integers(100)}#{j}"
            for j in range(int(rng.integers(1, 15)))))
        subtopics = list(rng.choice(subtopic_names, int(rng.integers(1, 6)), replace=False))
        for s in subtopics:
            for p in passages:
                if rng.random() < 0.5:   # some judged 0, some topics with only 0 lines
                    rows.append((tid, s, p, int(rng.random() < 0.3 + 0.5 * (t % 2))))
        if rng.random() < 0.85:          # a topic of the run (or a qrels topic it misses)
            shown = [p for p in passages if rng.random() < 0.7]
            shown += [f"other-{rng.integers(10**6)}" for _ in range(int(rng.integers(0, 12)))]
            shown = list(dict.fromkeys(shown))
            scores = np.round(rng.uniform(0, 3, len(shown)), int(rng.integers(0, 2)))
            run[tid] = [(p, float(sc), i + 1)
                        for i, (p, sc) in enumerate(zip(shown, scores, strict=True))]
    if rng.random() < 0.5:
        run["not-in-qrels"] = [("x#1", 1.0, 1), ("x#2", 1.0, 2)]
    rng.shuffle(rows)
    unique = list({r[:3]: r for r in rows}.values())
    return DiversityQrels(Path("random.txt"), unique), run


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("k, alpha", [(10, 0.5), (3, 0.5), (20, 0.9)])
def test_random_qrels_and_runs_score_the_same_both_ways(seed, k, alpha):
    qrels, run = _random_case(seed)
    if not qrels.rows:
        pytest.skip("no qrels lines drawn")
    top = RunFile(Path("r.run"), k, run)
    got, want = _both(qrels, JudgeRatings(), top, k=k, alpha=alpha)
    assert got == want

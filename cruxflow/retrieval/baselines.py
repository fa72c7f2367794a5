"""Reference runs that need no retriever: lower bounds to read the metrics against.

``random``: a seeded random ranking of the whole passage collection (what a context looks like
with no retrieval at all); ``random-relevant``: a seeded random ranking of the topic's relevant
passages P* (relevant but blind to coverage, so it shows what redundancy costs).
The oracle context Z* itself is written by :mod:`cruxflow.metrics.judgments`.
"""

from __future__ import annotations

import numpy as np

from cruxflow.metrics.judgments import TopicJudgments


def random_ranking(judgments: dict[str, TopicJudgments], passage_ids: list[str], *,
                   relevant_only: bool, depth: int = 100, seed: int = 0):
    rng = np.random.default_rng(seed)
    pool_all = sorted(passage_ids)
    out = {}
    for tid in sorted(judgments):
        pool = sorted(judgments[tid].relevant) if relevant_only else pool_all
        picked = rng.permutation(len(pool))[:depth]
        out[tid] = [(pool[i], float(depth - r)) for r, i in enumerate(picked)]
    return out

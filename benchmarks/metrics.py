"""Benchmark: scoring every context of Table 1 (ContextScorer) at Multi-News test scale.

draft
"""

from __future__ import annotations

import numpy as np

from cruxflow.data.io import RunRow
from cruxflow.data.model import Dataset, Passage, Topic

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

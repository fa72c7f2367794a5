"""The correlation protocol of Sec. 7.2 and the traditional IR metrics beside UDCG.

- :func:`sample_contexts` -- from a question's top ``depth`` passages, ``n`` contexts of
  ``size`` passages, half with at least one relevant passage and half with none;
- :func:`ir_metrics` -- nDCG, RR (MRR), AP (MAP), P (Precision) and Success (Hits) at the
  context's length, through ir_measures, with the relevance labels as qrels and the context
  order as the run;
- :func:`correlations` -- Spearman (scipy) per question between a metric's scores of its
  contexts and the ideal grades (correct > abstained > incorrect), averaged over questions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np

from cruxflow.metrics.stats import rank_correlation

IR_NAMES = ("nDCG", "MRR", "MAP", "P", "Hits")
_MAX_TRIES = 1000


def sample_contexts(relevant: Sequence[bool], *, n_contexts: int = 10, size: int = 5,
                    depth: int = 25, rng: random.Random) -> tuple[list[list[int]], dict]:
    """Contexts as lists of passage indices (into the question's ranked list), in the order the
    LLM sees them, and what happened: ``{"balanced": bool, "with_relevant": n,
    "without_relevant": n, "duplicates": n}``.

    The pool is the first ``depth`` passages. ``ceil(n/2)`` contexts hold at least one relevant
    passage: ``size`` passages drawn uniformly from the pool, redrawn until one is relevant
    (uniform over such subsets); the other ``floor(n/2)`` are ``size`` passages drawn from the
    pool's irrelevant ones. Each draw is in random order. When the pool has no relevant passage
    every context is drawn without one, and when it has fewer than ``size`` irrelevant ones
    every context holds a relevant one; either way ``balanced`` is False. A context already
    drawn for the question is redrawn (up to 1000 times; then kept and counted). A pool smaller
    than ``size`` gives no context (the caller skips the question).
    """
    if n_contexts < 1 or size < 1 or depth < 1:
        raise ValueError("n_contexts, size and depth must be at least 1")
    pool = list(range(min(depth, len(relevant))))
    info = {"balanced": True, "with_relevant": 0, "without_relevant": 0, "duplicates": 0}
    if len(pool) < size:
        info["balanced"] = False
        return [], info
    rel = [i for i in pool if relevant[i]]
    irr = [i for i in pool if not relevant[i]]
    n_pos = (n_contexts + 1) // 2
    if not rel:
        n_pos = 0
    elif len(irr) < size:
        n_pos = n_contexts
    info["balanced"] = n_pos == (n_contexts + 1) // 2
    seen: set[tuple[int, ...]] = set()
    contexts: list[list[int]] = []

    def draw_positive() -> list[int]:
        for _ in range(_MAX_TRIES):
            ctx = rng.sample(pool, size)
            if any(relevant[i] for i in ctx):
                return ctx
        # Practically unreachable: one relevant passage and the rest at random, shuffled.
        ctx = [rng.choice(rel), *rng.sample([i for i in pool if i not in rel], size - 1)]
        rng.shuffle(ctx)
        return ctx

    for n in range(n_contexts):
        positive = n < n_pos
        for _ in range(_MAX_TRIES):
            ctx = draw_positive() if positive else rng.sample(irr, size)
            if tuple(ctx) not in seen:
                break
        else:
            info["duplicates"] += 1
        seen.add(tuple(ctx))
        contexts.append(ctx)
        info["with_relevant" if positive else "without_relevant"] += 1
    return contexts, info


def ir_metrics(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
               ) -> dict[str, dict[str, float]]:
    """``{context id: {nDCG, MRR, MAP, P, Hits}}`` with ir_measures at cutoff ``k`` = the
    context's length (nDCG@k, RR@k, AP@k, P@k, Success@k; trec_eval's definitions: AP divides
    by all relevant passages in the qrels, nDCG's ideal is over the qrels). ``runs`` maps a
    context to its passage ids in order, ``qrels`` a context to its question's labels (1
    relevant, 0 not). A context whose question has no relevant passage scores 0 everywhere.
    """
    import ir_measures

    from cruxflow.metrics.ir import per_query

    out: dict[str, dict[str, float]] = {}
    by_k: dict[int, list[str]] = {}
    for cid, docs in runs.items():
        by_k.setdefault(len(docs), []).append(cid)
    for k, cids in sorted(by_k.items()):
        measures = {"nDCG": ir_measures.nDCG @ k, "MRR": ir_measures.RR @ k,
                    "MAP": ir_measures.AP @ k, "P": ir_measures.P @ k,
                    "Hits": ir_measures.Success @ k}
        qrels_k = {c: dict(qrels[c]) for c in cids}
        scores = per_query({c: list(runs[c]) for c in cids}, qrels_k, measures)
        for c in cids:
            out[c] = {name: scores.get(c, {}).get(name, 0.0) for name in IR_NAMES}
    return out


def spearman(scores: Sequence[float], grades: Sequence[float]) -> float | None:
    """Spearman's rho of one question's contexts; ``None`` when either side is constant or has
    fewer than two defined values (rho is undefined)."""
    return rank_correlation(list(scores), list(grades), "spearman").value


def correlations(rows: Sequence[Mapping], metrics: Sequence[str], *, group: str = "item_id",
                 grade: str = "grade_value") -> dict[str, dict]:
    """Per metric: the mean over questions of Spearman between the metric's scores of the
    question's contexts and their ideal grades, the number of questions averaged and the
    number skipped (rho undefined: the metric or the grades constant over the question)."""
    by_q: dict[str, list[Mapping]] = {}
    for r in rows:
        by_q.setdefault(str(r[group]), []).append(r)
    out = {}
    for m in metrics:
        rhos, skipped = [], 0
        for rs in by_q.values():
            rho = spearman([r.get(m) for r in rs], [r[grade] for r in rs])
            if rho is None:
                skipped += 1
            else:
                rhos.append(rho)
        out[m] = {"spearman": float(np.mean(rhos)) if rhos else None,
                  "questions": len(rhos), "skipped": skipped}
    return out

"""The correlation protocol of Sec. 7.2 and the traditional IR metrics beside UDCG.

- :func:`sample_contexts` -- from a question's top ``depth`` passages, ``n`` contexts of
  ``size`` passages, half with at least one relevant passage and half with none;
- :func:`ir_metrics` -- nDCG, RR (MRR), AP (MAP), P (Precision) and Success (Hits) at the
  context's length, through ir_measures, with the relevance labels as qrels and the context
  order as the run;
- :func:`ideal_grade` -- Sec. 6.2's rule: a correct answer is completely correct only when
  its context holds a relevant passage, otherwise partially correct;
- :func:`correlations` -- Spearman (scipy) per question between a metric's scores of its
  contexts and the ideal grades (correct > partially correct > abstained > incorrect),
  averaged over the same questions for every metric.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np

from cruxflow.beyond.udcg.steps import ABSTAINED, CORRECT, INCORRECT
from cruxflow.metrics.stats import rank_correlation

IR_NAMES = ("nDCG", "MRR", "MAP", "P", "Hits")
PARTIALLY_CORRECT = "PARTIALLY_CORRECT"
# Sec. 7.2's ideal order of the contexts by their answers, with Sec. 6.2's partially correct
# answers between a correct answer and an abstention.
IDEAL_VALUE = {CORRECT: 3, PARTIALLY_CORRECT: 2, ABSTAINED: 1, INCORRECT: 0}
GRADINGS = ("context-aware", "answer-only")
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

    out: dict[str, dict[str, float]] = {}
    by_k: dict[int, list[str]] = {}
    for cid, docs in runs.items():
        by_k.setdefault(len(docs), []).append(cid)
    for k, cids in sorted(by_k.items()):
        measures = {ir_measures.nDCG @ k: "nDCG", ir_measures.RR @ k: "MRR",
                    ir_measures.AP @ k: "MAP", ir_measures.P @ k: "P",
                    ir_measures.Success @ k: "Hits"}
        qrels_k = {c: dict(qrels[c]) for c in cids if any(v > 0 for v in qrels[c].values())}
        # the context's order as its scores: descending by rank, no ties
        ranked = {c: {d: float(len(runs[c]) - i) for i, d in enumerate(runs[c])}
                  for c in cids if c in qrels_k and runs[c]}
        scores: dict[str, dict[str, float]] = {}
        if ranked:
            for m in ir_measures.iter_calc(list(measures), qrels_k, ranked):
                scores.setdefault(m.query_id, {})[measures[m.measure]] = float(m.value)
        for c in cids:
            out[c] = {name: scores.get(c, {}).get(name, 0.0) for name in IR_NAMES}
    return out


def spearman(scores: Sequence[float], grades: Sequence[float]) -> float | None:
    """Spearman's rho of one question's contexts; ``None`` when either side is constant or has
    fewer than two defined values (rho is undefined)."""
    return rank_correlation(list(scores), list(grades), "spearman").value


def ideal_grade(grade: str, relevant_in_context: int, grading: str = "context-aware") -> str:
    """The grade a context's answer gets in the ideal ranking. ``context-aware`` (Sec. 6.2): "a
    response is completely correct only if the input context to the LLM contains at least a
    relevant passage and its response matches the reference answer, otherwise is just
    partially correct", so a CORRECT answer from a context without a relevant passage is
    PARTIALLY_CORRECT (ranked below CORRECT, above ABSTAINED). ``answer-only``: the grader's
    grade as it is (Fig. 6)."""
    if grading not in GRADINGS:
        raise ValueError(f"grading must be one of {', '.join(GRADINGS)}, not {grading!r}")
    if grading == "context-aware" and grade == CORRECT and relevant_in_context < 1:
        return PARTIALLY_CORRECT
    return grade


def correlations(rows: Sequence[Mapping], metrics: Sequence[str], *, group: str = "item_id",
                 grade: str = "grade_value", relevant: str = "relevant",
                 ) -> tuple[dict[str, dict], dict]:
    """Spearman per question between each metric's scores of the question's contexts and their
    ideal grades, averaged over **the same questions for every metric**: a question where any
    metric's rho is undefined (that metric, or the grades, constant over its contexts) is left
    out for all of them, so no metric is averaged over an easier or harder subset.

    Returns ``(per metric, questions)``. Per metric: ``spearman`` (the mean over the common
    questions), ``questions`` (how many), and, for comparison, ``spearman_where_defined`` and
    ``questions_where_defined`` (the mean over the questions where this metric's rho is
    defined, the old protocol). ``questions``: ``total``, ``used``, ``left_out`` and
    ``reasons``, each left-out question counted once under the first that applies:
    ``grades_constant`` (every context got the same ideal grade: no metric has a rho),
    ``no_relevant_passage`` (no context holds a relevant passage: the IR metrics are all 0,
    the paper's 13% of questions without a relevant passage in the top 25),
    ``metric_constant`` (another metric constant over the contexts); and
    ``undefined_per_metric``: per metric, the questions where its rho is undefined."""
    by_q: dict[str, list[Mapping]] = {}
    for r in rows:
        by_q.setdefault(str(r[group]), []).append(r)
    rhos = {q: {m: spearman([r.get(m) for r in rs], [r[grade] for r in rs]) for m in metrics}
            for q, rs in by_q.items()}
    common = [q for q in by_q if all(rhos[q][m] is not None for m in metrics)]
    reasons = {"grades_constant": 0, "no_relevant_passage": 0, "metric_constant": 0}
    for q, rs in by_q.items():
        if q in common:
            continue
        if len({r[grade] for r in rs}) < 2:
            reasons["grades_constant"] += 1
        elif not any(r.get(relevant) for r in rs):
            reasons["no_relevant_passage"] += 1
        else:
            reasons["metric_constant"] += 1
    out = {}
    for m in metrics:
        own = [rhos[q][m] for q in by_q if rhos[q][m] is not None]
        on_common = [rhos[q][m] for q in common]
        out[m] = {"spearman": float(np.mean(on_common)) if on_common else None,
                  "questions": len(on_common),
                  "spearman_where_defined": float(np.mean(own)) if own else None,
                  "questions_where_defined": len(own)}
    questions = {"total": len(by_q), "used": len(common), "left_out": len(by_q) - len(common),
                 "reasons": reasons,
                 "undefined_per_metric": {m: sum(rhos[q][m] is None for q in by_q)
                                          for m in metrics}}
    return out, questions

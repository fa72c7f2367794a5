"""The oracle of CRUX's answerability-based metrics: the paper's formulas (Sec. 3.2-3.3)
written topic by topic, as the paper states them, to check the engine's arrays against
(cruxflow computes them one way, :mod:`cruxflow.metrics.compute`).

Everything works on rating vectors: one 0-5 rating per sub-question for a passage (or for a
generated text). A question is *answered* by a text when its rating is >= eta (Eq. 2). Passages
without a rating (outside the judged relevant set P*) answer nothing, as in the paper, which
reuses the pre-judgments of relevant passages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from cruxflow.data.model import Dataset, passage_order
from cruxflow.metrics.judgments import RELEVANCE_GRADES, TopicJudgments
from cruxflow.metrics.options import DEFAULTS

Ratings = Sequence[int]


def _matrix(rows: Sequence[Ratings], n_questions: int) -> np.ndarray:
    if not rows:
        return np.zeros((0, n_questions), dtype=int)
    m = np.asarray(rows, dtype=int)
    if m.ndim != 2 or m.shape[1] != n_questions:
        raise ValueError(f"rating rows must all have {n_questions} entries, got shape {m.shape}")
    return m


def answerable_questions(matrix: Mapping[str, Ratings], n_questions: int,
                         eta: int = DEFAULTS.eta) -> list[int]:
    """Indices of the sub-questions that some relevant passage answers (rating >= eta).

    The others are dropped as out of scope or hallucinated (Sec. 3.2, "filtering").
    """
    m = _matrix(list(matrix.values()), n_questions)
    if m.shape[0] == 0:
        return []
    return [int(i) for i in np.flatnonzero(m.max(axis=0) >= eta)]


def select_required(matrix: Mapping[str, Ratings], questions: Sequence[int],
                    eta: int = DEFAULTS.eta) -> list[str]:
    """The required subset P** by greedy selection (Sec. 3.2).

    Repeatedly take the passage that answers the most still-unanswered questions (among
    ``questions``), until no passage answers anything new. Ties go to the passage first in
    the topic's natural order (:func:`passage_order`: the running number of
    ``<topic>:<doc>#<n>``), as the CRUX authors' greedy takes the first maximum over the
    topic's passages in that order (DylanJoo/crux ``augmentation/create_diversity_qrels.py``,
    ``binarize_amount_rerank_greedy``): the result does not depend on the order in which a
    file lists the ratings. Returns passage ids in selection order; every passage not
    returned is redundant (P* minus P**).
    """
    ids = sorted(matrix, key=passage_order)
    if not ids or not questions:
        return []
    m = _matrix([matrix[p] for p in ids], len(next(iter(matrix.values()))))
    answers = m[:, list(questions)] >= eta
    open_q = np.ones(answers.shape[1], dtype=bool)
    chosen: list[str] = []
    while open_q.any():
        gains = (answers & open_q).sum(axis=1)
        best = int(np.argmax(gains))  # argmax returns the first maximum: the natural order
        if gains[best] == 0:
            break
        chosen.append(ids[best])
        open_q &= ~answers[best]
    return chosen


def coverage(context: Sequence[Ratings], questions: Sequence[int],
             eta: int = DEFAULTS.eta) -> float:
    """Cov(Z) (Eq. 3): the share of the answerable questions that some text in Z answers.

    Ratings are max-aggregated over the passages of the context. Pass a single rating vector as
    ``[ratings]`` to score a generated text, Cov(y). ``nan`` when there is no answerable question.
    """
    if not questions:
        return math.nan
    if not context:
        return 0.0
    best = np.asarray(context, dtype=int)[:, list(questions)].max(axis=0)
    return float((best >= eta).sum() / len(questions))


def _novelty_gains(context: Sequence[Ratings], questions: Sequence[int], eta: int,
                   alpha: float) -> np.ndarray:
    """ng(r) of Eq. 5 for each rank r: sum_i I(i, r) * (1 - alpha) ** c(i, r - 1)."""
    if not context:
        return np.zeros(0)
    hits = (np.asarray(context, dtype=int)[:, list(questions)] >= eta).astype(float)
    seen_before = np.cumsum(hits, axis=0) - hits       # c(i, r-1)
    return (hits * (1.0 - alpha) ** seen_before).sum(axis=1)


def _dcg(gains: np.ndarray) -> float:
    # The paper writes log(r + 1); the base cancels in the ratio of Eq. 4, so we use log2 as
    # Clarke et al. (2008) do.
    ranks = np.arange(1, len(gains) + 1)
    return float((gains / np.log2(ranks + 1)).sum())


def ideal_order(oracle: Sequence[Ratings], questions: Sequence[int], eta: int = DEFAULTS.eta,
                alpha: float = DEFAULTS.alpha) -> list[int]:
    """Order of the oracle context Z* that the ideal of Eq. 4 uses.

    Greedy by novelty gain: at each rank, the passage with the largest ng given the ranks above
    (ties to the earlier passage of ``oracle``, which :func:`select_required` gives in its
    selection order, itself independent of the order of any file), the usual approximation
    of the ideal alpha-nDCG ranking.
    """
    if not oracle:
        return []
    hits = np.asarray(oracle, dtype=int)[:, list(questions)] >= eta
    remaining = list(range(len(oracle)))
    counts = np.zeros(hits.shape[1])
    order = []
    while remaining:
        gains = [(hits[i] * (1.0 - alpha) ** counts).sum() for i in remaining]
        j = remaining.pop(int(np.argmax(gains)))
        order.append(j)
        counts += hits[j]
    return order


def alpha_ndcg(context: Sequence[Ratings], oracle: Sequence[Ratings], questions: Sequence[int],
               eta: int = DEFAULTS.eta, alpha: float = DEFAULTS.alpha) -> float:
    """Ranked coverage, alpha-nDCG (Eq. 4-5), subtopics = the answerable sub-questions.

    The numerator sums ng(r)/log(r+1) over the |Z| ranks of the context; the denominator does
    the same over the |Z*| ranks of the oracle context in :func:`ideal_order`. As written in
    the paper, the ideal has |Z*| ranks whatever |Z| is, so a context longer than Z* can score
    above 1 by collecting repeated (discounted) gains. ``nan`` without answerable questions.
    """
    if not questions:
        return math.nan
    order = ideal_order(oracle, questions, eta, alpha)
    ideal = _dcg(_novelty_gains([oracle[i] for i in order], questions, eta, alpha))
    if ideal == 0:
        return math.nan
    return _dcg(_novelty_gains(context, questions, eta, alpha)) / ideal


def density(cov: float, tokens: int, cov_oracle: float, tokens_oracle: int,
            weight: float = DEFAULTS.density_weight) -> float:
    """Den (Eq. 6): coverage per token relative to the oracle context, to the power w.

    ``((cov / tokens) / (cov_oracle / tokens_oracle)) ** weight``; 0 when nothing is covered,
    ``nan`` when the oracle covers nothing or a text has no tokens.
    """
    if math.isnan(cov) or math.isnan(cov_oracle) or cov_oracle == 0 or tokens_oracle <= 0:
        return math.nan
    if cov == 0:
        return 0.0
    if tokens <= 0:
        return math.nan
    return float(((cov / tokens) / (cov_oracle / tokens_oracle)) ** weight)


# --- the judgments of a dataset, topic by topic ---------------------------------------------

def derive(dataset: Dataset, eta: int = DEFAULTS.eta,
           alpha: float = DEFAULTS.alpha) -> dict[str, TopicJudgments]:
    by_topic = dataset.ratings_by_topic()
    out = {}
    for tid, topic in dataset.topics.items():
        matrix = by_topic.get(tid, {})
        n = len(topic.questions)
        kept = answerable_questions(matrix, n, eta)
        required = select_required(matrix, kept, eta)
        order = ideal_order([matrix[p] for p in required], kept, eta, alpha)
        out[tid] = TopicJudgments(tid, n, kept, list(matrix), [required[i] for i in order],
                                  eta)
    return out


def redundant_passages(j: TopicJudgments, matrix: dict[str, list[int]]) -> list[str]:
    """The CRUX authors' redundant passages: those of P* outside P** whose rating is below the
    element-wise maximum of P**'s ratings on every sub-question of the topic.

    As in their code, whole rating vectors are compared (every question, answerable or not), so
    a question that no passage of P** rates above 0 leaves no passage redundant, except through
    a rating of -1 (an unparsed judgment, which answers nothing and is below any rating).
    """
    if not j.required:
        return []
    best = np.max(np.asarray([matrix[p] for p in j.required]), axis=0)
    required = set(j.required)
    return [p for p in j.relevant
            if p not in required and bool((np.asarray(matrix[p]) < best).all())]


def relevance_qrels(judgments: dict[str, TopicJudgments],
                    matrix: dict[str, dict[str, list[int]]] | None = None,
                    grades: str = DEFAULTS.relevance_grades) -> dict[str, dict[str, int]]:
    """Graded qrels of P* per topic under ``grades`` (:data:`RELEVANCE_GRADES`); "3-2-1" needs
    ``matrix`` (``Dataset.ratings_by_topic()``) to find the redundant passages."""
    g = RELEVANCE_GRADES[grades]
    if g.redundant != g.relevant and matrix is None:
        raise ValueError(f"relevance grades {grades!r} need the rating matrix")
    out = {}
    for tid, j in judgments.items():
        req = set(j.required)
        low = set(redundant_passages(j, matrix[tid])) if g.redundant != g.relevant else set()
        out[tid] = {p: g.required if p in req else g.redundant if p in low else g.relevant
                    for p in j.relevant}
    return out



"""KPR's formulas: Eq. 1-2 per question, KPP and KPF (Sec. 6.4), the per-question table and its
means overall and per group."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from cruxflow.beyond.kpr.data import Judgment, KPRItem
from cruxflow.metrics.stats import mean_of_defined


def key_point_recall(entailed: Sequence[bool]) -> float | None:
    """One question's term of Eq. 2: ``sum_{x in x^q} I(x, y) / |x^q|``, with ``I`` of Eq. 1
    given as booleans. ``None`` for a question without key points (0/0)."""
    if not entailed:
        return None
    return sum(bool(e) for e in entailed) / len(entailed)


def key_point_precision(supported: Sequence[bool]) -> float:
    """Key point precision of one response (Sec. 6.4): the fraction of the key points in the
    response that are present in the retrieved information. A response without any key point
    (e.g. empty) has precision 0 (it contributes nothing)."""
    if not supported:
        return 0.0
    return sum(bool(s) for s in supported) / len(supported)


def key_point_f1(precision: float, recall: float) -> float:
    """Key point F1 of one question (Sec. 6.4, KPF): ``2 P R / (P + R)``, 0 when both are 0.

    Averaged over questions like KPR. (The paper's Table 4 is consistent with a mean of
    per-question F1, not the F1 of the means: for GPT-4o the F1 of KPP 0.323 and KPR 0.579
    would be 0.415, the table gives KPF 0.379.)"""
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def mean_score(values: Iterable[float | None]) -> float | None:
    """The mean over questions of Eq. 2 (``1/|Q| sum_q``), skipping undefined (``None``/NaN)
    per-question values; ``None`` when none is defined."""
    return mean_of_defined(values)


def kpr_scores(items: Sequence[KPRItem], recall: Sequence[Judgment],
               precision: Sequence[Judgment] | None = None,
               group_by: Sequence[str] = ()) -> pd.DataFrame:
    """Per question: ``id``, ``n_key_points``, ``n_entailed``, ``KPR`` (Eq. 2's term; NaN for
    a question without key points), and with ``precision`` judgments ``n_response_points``,
    ``n_supported``, ``KPP``, ``KPF`` (NaN where KPR is), then the ``group_by`` columns."""
    by_item: dict[str, list[bool]] = {}
    for j in recall:
        by_item.setdefault(j.item_id, []).append(j.entailed)
    prec: dict[str, list[bool]] = {}
    for j in precision or []:
        prec.setdefault(j.item_id, []).append(j.entailed)
    rows = []
    for it in items:
        n = len(it.key_points or [])
        entailed = by_item.get(it.id, [])
        if len(entailed) != n:
            raise ValueError(f"item {it.id}: {len(entailed)} judgments for {n} key points")
        r = key_point_recall(entailed)
        row = {"id": it.id, "n_key_points": n, "n_entailed": sum(entailed),
               "KPR": math.nan if r is None else r}
        if precision is not None:
            supported = prec.get(it.id, [])
            p = key_point_precision(supported)
            row.update(n_response_points=len(supported), n_supported=sum(supported),
                       KPP=math.nan if r is None else p,
                       KPF=math.nan if r is None else key_point_f1(p, r))
        for col in group_by:
            row[col] = it.extra.get(col)
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate_scores(per_question: pd.DataFrame, group_by: Sequence[str] = (),
                     ) -> tuple[dict, pd.DataFrame]:
    """The means over questions with key points (Eq. 2's ``1/|Q| sum_q``), overall and for
    each value of each ``group_by`` column separately (as the paper's per-domain Fig. 4 and
    per-category Table 1). Returns ``(overall, grouped)``; ``grouped`` has columns
    ``group_by``, ``group``, ``n_questions``, the metrics, ``n_without_key_points``."""
    metrics = [m for m in ("KPR", "KPP", "KPF") if m in per_question.columns]
    scored = per_question[per_question["KPR"].notna()] if len(per_question) else per_question
    overall: dict = {m: mean_score(scored[m]) for m in metrics}
    overall["n_questions"] = int(len(per_question))
    overall["n_scored"] = int(len(scored))
    overall["n_without_key_points"] = int(len(per_question) - len(scored))
    rows = []
    for col in group_by:
        for value, group in per_question.groupby(per_question[col].astype(str), sort=True):
            ok = group[group["KPR"].notna()]
            rows.append({"group_by": col, "group": value, "n_questions": int(len(ok)),
                         **{m: mean_score(ok[m]) for m in metrics},
                         "n_without_key_points": int(len(group) - len(ok))})
    grouped = pd.DataFrame(rows, columns=["group_by", "group", "n_questions", *metrics,
                                          "n_without_key_points"])
    return overall, grouped



"""KPR's formulas: Eq. 1-2 per question, KPP and KPF (Sec. 6.4), the per-question table and its
means overall and per group."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

# pandas is imported where a frame is made: every command's parser imports this module
if TYPE_CHECKING:
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


# What an unparseable verdict, or a response the extractor found no point in, does to the
# scores: left out and counted (default), or the paper's Eq. 1 read literally (only an
# entailed point counts: anything else, a failure included, is 0).
FAILURES = ("exclude", "as-not-entailed")


def _unparseable(j: Judgment) -> bool:
    return j.raw is not None and j.label is None


def kpr_scores(items: Sequence[KPRItem], recall: Sequence[Judgment],
               precision: Sequence[Judgment] | None = None,
               group_by: Sequence[str] = (), failures: str = "exclude") -> pd.DataFrame:
    """Per question: ``id``, ``n_key_points``, ``n_entailed``, ``n_unparseable``, ``KPR``
    (Eq. 2's term), and with ``precision`` judgments ``n_response_points``, ``n_supported``,
    ``n_unparseable_precision``, ``KPP``, ``KPF``, then the ``group_by`` columns.

    ``failures="exclude"`` (default): an unparseable verdict is in neither numerator nor
    denominator of its question's KPR (or KPP); a question whose verdicts all failed has no
    KPR, and a non-empty response in which no key point was extracted has no KPP (NaN: left
    out of the means and counted by the caller). ``"as-not-entailed"``: the paper's Eq. 1
    literally, a failed verdict is not entailed (0) and a response without points has KPP 0.
    A question without key points has no KPR either way (0/0); an empty response entails
    nothing and claims nothing: KPR 0, KPP 0."""
    if failures not in FAILURES:
        raise ValueError(f"failures must be one of {', '.join(FAILURES)}, not {failures!r}")
    exclude = failures == "exclude"
    by_item: dict[str, list[Judgment]] = {}
    for j in recall:
        by_item.setdefault(j.item_id, []).append(j)
    prec: dict[str, list[Judgment]] = {}
    for j in precision or []:
        prec.setdefault(j.item_id, []).append(j)
    rows = []
    for it in items:
        n = len(it.key_points or [])
        js = by_item.get(it.id, [])
        if len(js) != n:
            raise ValueError(f"item {it.id}: {len(js)} judgments for {n} key points")
        kept = [j for j in js if not (exclude and _unparseable(j))]
        r = key_point_recall([j.entailed for j in kept]) if n else None
        row = {"id": it.id, "n_key_points": n, "n_entailed": sum(j.entailed for j in js),
               "n_unparseable": sum(map(_unparseable, js)),
               "KPR": math.nan if r is None else r}
        if precision is not None:
            pjs = prec.get(it.id, [])
            pkept = [j for j in pjs if not (exclude and _unparseable(j))]
            empty = not (it.response or "").strip()
            if r is None or (exclude and not empty and not pkept):
                p = None   # no KPR, or (excluded) no point extracted or every verdict failed
            else:
                p = key_point_precision([j.entailed for j in pkept])
            row.update(n_response_points=len(pjs), n_supported=sum(j.entailed for j in pjs),
                       n_unparseable_precision=sum(map(_unparseable, pjs)),
                       KPP=math.nan if p is None else p,
                       KPF=math.nan if p is None else key_point_f1(p, r))
        for col in group_by:
            row[col] = it.extra.get(col)
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


def aggregate_scores(per_question: pd.DataFrame, group_by: Sequence[str] = (),
                     ) -> tuple[dict, pd.DataFrame]:
    """The means over the questions with a defined value (Eq. 2's ``1/|Q| sum_q``; each
    metric over its own defined values: KPP and KPF may lack a value where KPR has one),
    overall and for each value of each ``group_by`` column separately (as the paper's
    per-domain Fig. 4 and per-category Table 1). Returns ``(overall, grouped)``; ``grouped``
    has columns ``group_by``, ``group``, ``n_questions`` (with a KPR), the metrics,
    ``n_without_key_points``."""
    import pandas as pd

    metrics = [m for m in ("KPR", "KPP", "KPF") if m in per_question.columns]
    if not len(per_question):
        return {**dict.fromkeys(metrics), "n_questions": 0, "n_scored": 0,
                "n_without_key_points": 0}, pd.DataFrame(
            columns=["group_by", "group", "n_questions", *metrics, "n_without_key_points"])
    scored = per_question[per_question["KPR"].notna()]
    overall: dict = {m: mean_score(scored[m]) for m in metrics}
    overall["n_questions"] = int(len(per_question))
    overall["n_scored"] = int(len(scored))
    if "KPP" in metrics:
        overall["n_scored_precision"] = int(scored["KPP"].notna().sum())
    overall["n_without_key_points"] = int((per_question["n_key_points"] == 0).sum())
    rows = []
    for col in group_by:
        for value, group in per_question.groupby(per_question[col].astype(str), sort=True):
            ok = group[group["KPR"].notna()]
            rows.append({"group_by": col, "group": value, "n_questions": int(len(ok)),
                         **{m: mean_score(ok[m]) for m in metrics},
                         "n_without_key_points": int((group["n_key_points"] == 0).sum())})
    grouped = pd.DataFrame(rows, columns=["group_by", "group", "n_questions", *metrics,
                                          "n_without_key_points"])
    return overall, grouped

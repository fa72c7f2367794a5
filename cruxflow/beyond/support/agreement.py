"""Agreement between two label sets for the same answers (human against LLM, two LLMs;
Thakur et al., SIGIR 2025, Sec. 4-5): the confusion matrix, exact agreement and Cohen's kappa
of the labels, and Kendall's tau between the run rankings they induce. The statistics come
from :mod:`cruxflow.metrics.stats`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cruxflow.beyond.support.data import FS, NAMES, NOT_JUDGED, NS, PS, Item
from cruxflow.beyond.support.metric import average_runs, check_labels, score_answers
from cruxflow.beyond.support.options import DEFAULTS
from cruxflow.metrics import stats

ORDER = [FS, PS, NS]   # rows and columns of the confusion matrix, as in the paper's Figure 2


def label_agreement(a: Sequence[int], b: Sequence[int]) -> dict:
    """Agreement of two label sets over the same judged pairs (labels 2/1/0; Sec. 4.2, 5).

    - ``confusion``: 3x3 counts, rows ``a`` and columns ``b`` in the order FS, PS, NS
      (``sklearn.metrics.confusion_matrix``), and ``fractions`` (counts / n, the paper's
      percentages);
    - ``exact_agreement``: the diagonal's share, p_o = sum_k C[k][k] / n;
    - ``cohen_kappa``: (p_o - p_e) / (1 - p_e) with p_e = sum_k (row_k / n)(col_k / n),
      ``sklearn.metrics.cohen_kappa_score`` (unweighted); ``None`` when undefined (p_e = 1).
    """
    from sklearn.metrics import confusion_matrix

    a, b = check_labels(a), check_labels(b)
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    if any(v == NOT_JUDGED for v in a + b):
        raise ValueError("compare judged labels only (2, 1, 0), not -1")
    n = len(a)
    out = {"n": n, "labels": [NAMES[k] for k in ORDER], "confusion": None, "fractions": None,
           "exact_agreement": None, "cohen_kappa": None}
    if not n:
        return out
    cm = confusion_matrix(a, b, labels=ORDER)
    out["confusion"] = cm.tolist()
    out["fractions"] = (cm / n).tolist()
    out["exact_agreement"] = float(cm.trace() / n)
    out["cohen_kappa"] = stats.cohen_kappa(a, b, labels=ORDER)
    return out


def rank_correlation(scores_a: Mapping[str, float | None],
                     scores_b: Mapping[str, float | None]) -> dict:
    """Kendall's tau (tau-b, ``scipy.stats.kendalltau``) between the run rankings two label
    sets induce (Sec. 4.1, Figure 1), over the runs scored under both. Scores are rounded to
    10 decimals first, so that equal sums reached in another order tie. ``tau`` is ``None``
    with fewer than two runs or when a ranking is constant."""
    runs = sorted(r for r in scores_a if r in scores_b and scores_a[r] is not None
                  and scores_b[r] is not None)
    out = {"runs": len(runs), "tau": None, "p_value": None}
    if len(runs) < 2:
        return out
    res = stats.rank_correlation([round(scores_a[r], 10) for r in runs],
                                 [round(scores_b[r], 10) for r in runs], "kendall")
    out["tau"], out["p_value"] = res.value, res.p_value
    return out


def compare_label_sets(items_a: Sequence[Item], items_b: Sequence[Item],
                       topics: Sequence[str] | None = None,
                       average: str = DEFAULTS.average) -> dict:
    """Agreement between two label sets of the same items (same answers, same citation
    mode): :func:`label_agreement` over the cited pairs judged (label 2/1/0) in both (sentences
    without citation are No Support by rule in both and left out), and :func:`rank_correlation`
    of the per-run weighted precision and recall each set gives."""
    b_by_key = {it.key: it for it in items_b}
    both, only_a, only_b = [], 0, 0
    for it in items_a:
        other = b_by_key.get(it.key)
        if not it.cited or other is None:
            continue
        ja, jb = it.label != NOT_JUDGED, other.label != NOT_JUDGED
        if ja and jb:
            both.append((it.label, other.label))
        only_a += ja and not jb
        only_b += jb and not ja
    result = label_agreement([x for x, _ in both], [y for _, y in both])
    result["judged_only_in_input"] = only_a
    result["judged_only_in_compare"] = only_b
    runs_a = average_runs(score_answers(items_a), topics, average)
    runs_b = average_runs(score_answers(items_b), topics, average)
    b_runs = {r["run_id"]: r for r in runs_b}
    result["kendall_tau"] = {
        metric: rank_correlation({r["run_id"]: r[metric] for r in runs_a},
                                 {r["run_id"]: r[metric] for r in runs_b})
        for metric in ("weighted_precision", "weighted_recall")}
    result["runs"] = [{"run_id": r["run_id"],
                       "weighted_precision_input": r["weighted_precision"],
                       "weighted_precision_compare": b_runs[r["run_id"]]["weighted_precision"],
                       "weighted_recall_input": r["weighted_recall"],
                       "weighted_recall_compare": b_runs[r["run_id"]]["weighted_recall"]}
                      for r in runs_a if r["run_id"] in b_runs]
    return result

"""Agreement between two label sets for the same answers (human against LLM, two LLMs;
Thakur et al., SIGIR 2025, Sec. 4-5): the confusion matrix, exact agreement and Cohen's kappa
of the labels, and Kendall's tau between the rankings they induce at run level, topic by topic
and over all paired (topic, run) rows, as the reference code compares them. The statistics
come from :mod:`cruxflow.metrics.stats`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cruxflow.beyond.support.data import FS, NAMES, NOT_JUDGED, NS, PS, Item
from cruxflow.beyond.support.metric import average_runs, check_labels, score_answers
from cruxflow.beyond.support.options import DEFAULTS
from cruxflow.data.limits import check_count
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
    """Kendall's tau (tau-b, ``scipy.stats.kendalltau``) between the rankings two label sets
    induce (Sec. 4.1, Figure 1), over the keys (runs, or rows) scored under both. Scores are
    rounded to 10 decimals first, so that equal sums reached in another order tie. ``tau`` is
    ``None`` with fewer than two keys or when a ranking is constant."""
    keys = [k for k in scores_a if k in scores_b and scores_a[k] is not None
            and scores_b[k] is not None]
    out = {"runs": len(keys), "tau": None, "p_value": None}
    if len(keys) < 2:
        return out
    res = stats.rank_correlation([round(scores_a[k], 10) for k in keys],
                                 [round(scores_b[k], 10) for k in keys], "kendall")
    out["tau"], out["p_value"] = res.value, res.p_value
    return out


METRICS = ("weighted_precision", "weighted_recall")


def _row_value(row: dict | None, metric: str, average: str) -> float | None:
    """A (topic, run) value as the run means see it: with over-all-topics a missing row or an
    undefined value (nothing judged) is 0, as in the track's tables and the reference code
    (which scores an answer with nothing judged 0.0); with over-run-topics it is left out."""
    value = None if row is None else row[metric]
    if value is None and average == "over-all-topics":
        return 0.0
    return value


def _run_level_interval(rows_a: dict, rows_b: dict, universe: Sequence[str],
                        runs: Sequence[str], metric: str, average: str, n_resamples: int,
                        seed: int) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of the run-level tau, resampling topics
    (:func:`cruxflow.metrics.stats.system_correlation` on the runs' per-topic values)."""
    import pandas as pd

    if n_resamples < 1 or len(universe) < 2 or len(runs) < 3:
        return None, None
    frame = pd.DataFrame([{"topic": t, "system": r,
                           "a": stats.nan_if_none(_row_value(rows_a.get((t, r)), metric,
                                                             average)),
                           "b": stats.nan_if_none(_row_value(rows_b.get((t, r)), metric,
                                                             average))}
                          for t in universe for r in runs])
    corr = stats.system_correlation(frame, "a", "b", "kendall", n_resamples=n_resamples,
                                    seed=seed)
    return corr.low, corr.high


def rank_agreement(per_topic_a: Sequence[dict], per_topic_b: Sequence[dict],
                   universe: Sequence[str], average: str = DEFAULTS.average, *,
                   n_resamples: int = DEFAULTS.bootstrap, seed: int = 0) -> dict:
    """Kendall's tau between two label sets' scores at three levels (the reference code's
    comparison, castorini/RAGDoll docs/reproduction_trec-rag_2024_support.md, step 8), per
    metric:

    - ``run_level``: the run means over the topics ``universe`` (:func:`average_runs`), each
      set on its own rows, with a percentile bootstrap interval over topics (``low``,
      ``high``; ``n_resamples`` resamples, seeded);
    - ``topic_average``: per topic, tau between the values of the runs with a row in both
      sets; the mean over the topics where it is defined (``topics``), with the number
      undefined (fewer than two paired runs or a constant side) and a bootstrap interval of
      that mean;
    - ``all_paired_rows``: tau over every (topic, run) row present in both sets.

    A row's undefined value (nothing judged) is 0 under ``over-all-topics`` and left out under
    ``over-run-topics`` (:func:`_row_value`). Also ``topic_taus``: every topic's tau."""
    check_count("bootstrap", n_resamples, "n_resamples")
    inside = set(universe)
    rows_a = {(r["topic_id"], r["run_id"]): r for r in per_topic_a if r["topic_id"] in inside}
    rows_b = {(r["topic_id"], r["run_id"]): r for r in per_topic_b if r["topic_id"] in inside}
    paired = [k for k in rows_a if k in rows_b]
    runs_a = {r["run_id"]: r for r in average_runs(per_topic_a, universe, average)}
    runs_b = {r["run_id"]: r for r in average_runs(per_topic_b, universe, average)}
    runs = sorted(r for r in runs_a if r in runs_b)
    out: dict = {"rows": {"input": len(rows_a), "compare": len(rows_b), "paired": len(paired)},
                 "kendall_tau": {}, "topic_taus": []}
    for metric in METRICS:
        run_level = rank_correlation({r: runs_a[r][metric] for r in runs},
                                     {r: runs_b[r][metric] for r in runs})
        run_level["low"], run_level["high"] = _run_level_interval(
            rows_a, rows_b, universe, runs, metric, average, n_resamples, seed)
        taus = []
        for topic in universe:
            keys = [k for k in paired if k[0] == topic]
            res = rank_correlation({k: _row_value(rows_a[k], metric, average) for k in keys},
                                   {k: _row_value(rows_b[k], metric, average) for k in keys})
            taus.append(res["tau"])
            out["topic_taus"].append({"metric": metric, "topic_id": topic,
                                      "paired_runs": len(keys), "tau": res["tau"]})
        low, high = stats.mean_interval(taus, n_resamples, seed=seed)
        rows = rank_correlation({k: _row_value(rows_a[k], metric, average) for k in paired},
                                {k: _row_value(rows_b[k], metric, average) for k in paired})
        out["kendall_tau"][metric] = {
            "run_level": run_level,
            "topic_average": {"tau": stats.mean_of_defined(taus),
                              "topics": sum(t is not None for t in taus),
                              "topics_undefined": sum(t is None for t in taus),
                              "low": low, "high": high},
            "all_paired_rows": {"tau": rows["tau"], "p_value": rows["p_value"],
                                "rows": rows["runs"]}}
    out["runs"] = [{"run_id": r,
                    "weighted_precision_input": runs_a[r]["weighted_precision"],
                    "weighted_precision_compare": runs_b[r]["weighted_precision"],
                    "weighted_recall_input": runs_a[r]["weighted_recall"],
                    "weighted_recall_compare": runs_b[r]["weighted_recall"]} for r in runs]
    return out


def compare_label_sets(items_a: Sequence[Item], items_b: Sequence[Item],
                       topics: Sequence[str] | None = None,
                       average: str = DEFAULTS.average, *,
                       n_resamples: int = DEFAULTS.bootstrap, seed: int = 0) -> dict:
    """Agreement between two label sets for the same answers: :func:`label_agreement` over the
    cited pairs judged (label 2/1/0) in both, matched by (topic, run, sentence, citation
    position) (sentences without citation are No Support by rule in both and left out), and
    :func:`rank_agreement` of the weighted precision and recall each set gives, over the
    topics ``topics`` (default: every topic of either set)."""
    check_count("bootstrap", n_resamples, "n_resamples")
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
    universe = list(dict.fromkeys(topics if topics is not None else
                                  [it.topic_id for it in (*items_a, *items_b)]))
    result["topics"] = len(universe)
    result.update(rank_agreement(score_answers(items_a), score_answers(items_b), universe,
                                 average, n_resamples=n_resamples, seed=seed))
    return result

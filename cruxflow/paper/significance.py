"""Paired significance tests between the systems of the paper's tables: every pair on one
metric over their shared topics, a paired randomization test and a Wilcoxon signed-rank test
(:mod:`cruxflow.metrics.stats`), Benjamini-Hochberg adjusted within each (dataset, eta, k)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from cruxflow.metrics.stats import benjamini_hochberg, nan_if_none, paired_randomization, wilcoxon
from cruxflow.paper.labels import DASH, METRIC_LABELS, display_name, order_systems
from cruxflow.paper.tables import format_number, md_escape

PAIRED_COLUMNS = ["system_a", "system_b", "label_a", "label_b", "metric", "n_topics", "mean_a",
                  "mean_b", "diff", "p_perm", "p_perm_bh", "p_wilcoxon", "p_wilcoxon_bh"]
_GROUPS = ("dataset", "eta", "k")


def _bh(ps: pd.Series) -> pd.Series:
    return pd.Series([nan_if_none(p) for p in benjamini_hochberg(ps.tolist())], index=ps.index,
                     dtype=float)


def paired_tests(per_query: pd.DataFrame, metric: str = "Cov_y", *,
                 systems: Sequence[str] | None = None, n_resamples: int = 9999, seed: int = 0,
                 alternative: str = "two-sided",
                 names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every pair of systems compared on ``metric`` over the topics where both have a value.

    ``diff`` = mean over shared topics of (a - b); ``mean_a``/``mean_b`` are over the same shared
    topics (raw, not x 100). ``p_perm`` is a paired randomization (sign-flip) test of the mean
    difference (scipy.stats.permutation_test, permutation_type="samples"; exact when 2^n <=
    n_resamples, else ``n_resamples`` draws from a generator seeded with ``seed``);
    ``p_wilcoxon`` the Wilcoxon signed-rank test (1.0 when all differences are 0). The ``_bh``
    columns are Benjamini-Hochberg adjusted (scipy.stats.false_discovery_control) within each
    (dataset, eta, k) group, the family being all pairs of that group. Systems default to all
    that have the metric, in Table 1's order.
    """
    groups = [g for g in _GROUPS if g in per_query]
    pieces = []
    for key, frame in (per_query.groupby(groups, sort=False) if groups else [((), per_query)]):
        key = key if isinstance(key, tuple) else (key,)
        wide = frame.pivot_table(index="topic", columns="system", values=metric, aggfunc="mean")
        names_here = [s for s in (systems or order_systems(wide.columns))
                      if s in wide and wide[s].notna().any()]
        records = []
        for a, b in itertools.combinations(names_here, 2):
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(float), both[b].to_numpy(float)
            rec = {"system_a": a, "system_b": b, "label_a": display_name(a, names),
                   "label_b": display_name(b, names), "metric": metric, "n_topics": len(both),
                   "mean_a": x.mean() if len(x) else np.nan,
                   "mean_b": y.mean() if len(y) else np.nan,
                   "diff": (x - y).mean() if len(x) else np.nan, "p_perm": np.nan,
                   "p_wilcoxon": nan_if_none(wilcoxon(x - y, alternative))}
            rec["p_perm"] = nan_if_none(paired_randomization(
                x, y, n_resamples=n_resamples, seed=seed, alternative=alternative))
            records.append(rec)
        out = pd.DataFrame.from_records(records, columns=[c for c in PAIRED_COLUMNS
                                                          if not c.endswith("_bh")])
        out["p_perm_bh"] = _bh(out["p_perm"])
        out["p_wilcoxon_bh"] = _bh(out["p_wilcoxon"])
        for g, v in zip(groups, key, strict=True):
            out.insert(groups.index(g), g, v)
        pieces.append(out)
    columns = groups + PAIRED_COLUMNS
    out = pd.concat(pieces, ignore_index=True)[columns] if pieces else pd.DataFrame(
        columns=columns)
    out.attrs["alternative"] = alternative
    return out


def _p(p: float) -> str:
    if not math.isfinite(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def paired_tests_markdown(frame: pd.DataFrame, alpha: float = 0.05) -> str:
    """The paired tests as Markdown: means and difference x 100, p-values; a ``*`` marks pairs
    whose BH-adjusted randomization p is below ``alpha``."""
    groups = [g for g in _GROUPS if g in frame]
    header = [*(g for g in groups), "System A", "System B", "Topics", "Mean A", "Mean B",
              "A - B", "p (perm.)", "p BH", "p (Wilcoxon)", "p BH (Wilcoxon)",
              f"p BH < {alpha}"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < len(groups) + 2 else "---:"
                            for i in range(len(header))) + "|"]
    for r in frame.to_dict("records"):
        sig = "*" if math.isfinite(r["p_perm_bh"]) and r["p_perm_bh"] < alpha else ""
        cells = [*(str(r[g]) for g in groups), md_escape(r["label_a"]),
                 md_escape(r["label_b"]), str(r["n_topics"]),
                 *(format_number(r[c] * 100, 1) for c in ("mean_a", "mean_b", "diff")),
                 _p(r["p_perm"]), _p(r["p_perm_bh"]), _p(r["p_wilcoxon"]),
                 _p(r["p_wilcoxon_bh"]), sig]
        lines.append("| " + " | ".join(cells) + " |")
    metric = METRIC_LABELS.get(frame["metric"].iloc[0], "") if len(frame) else ""
    side = frame.attrs.get("alternative", "two-sided")
    note = (f"- {metric}: means over shared topics x 100; {side} paired randomization test "
            f"of the mean difference; BH-adjusted within each group; * = adjusted p < {alpha}.")
    adjusted = frame["p_perm_bh"].dropna() if len(frame) else pd.Series(dtype=float)
    if len(frame) and not (adjusted < alpha).any():
        # Nothing separates: say so above the rows, so that no one reads them as a ranking.
        least = "-" if adjusted.empty else _p(adjusted.min())
        topics = int(frame["n_topics"].max())
        warning = (f"No pair of systems differs significantly: {len(frame)} pairs over at most "
                   f"{topics} topic{'s' if topics != 1 else ''}, smallest adjusted p {least}. "
                   "The differences below are noise, not a ranking.")
        return warning + "\n\n" + "\n".join(lines) + "\n\n" + note + "\n"
    return "\n".join(lines) + "\n\n" + note + "\n"

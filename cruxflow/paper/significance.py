"""Paired significance tests between the systems of the paper's tables: every pair on one
metric over their shared topics, by the paired-test policy of :mod:`cruxflow.metrics.stats`
(:data:`~cruxflow.metrics.stats.POLICY` unless the config names another test or correction),
adjusted within each (dataset, eta, k) group and metric."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from cruxflow.metrics.stats import POLICY, Policy, pairwise_tests
from cruxflow.paper.labels import DASH, METRIC_LABELS, display_name, order_systems
from cruxflow.paper.tables.common import format_number, md_escape

PAIRED_COLUMNS = ["system_a", "system_b", "label_a", "label_b", "metric", "n_topics", "mean_a",
                  "mean_b", "diff", "test", "p", "correction", "p_adjusted"]
_GROUPS = ("dataset", "eta", "k")


def paired_tests(per_query: pd.DataFrame, metrics: str | Sequence[str] = "Cov_y", *,
                 systems: Sequence[str] | None = None, policy: Policy = POLICY,
                 names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every pair of systems compared on each of ``metrics`` over the topics where both have
    a value, within each (dataset, eta, k) group.

    ``diff`` = mean over shared topics of (a - b); ``mean_a``/``mean_b`` are over the same shared
    topics (raw, not x 100). ``p`` is ``policy``'s paired test
    (:func:`cruxflow.metrics.stats.pairwise_tests`: by default the paired randomization test
    of the mean difference), ``p_adjusted`` its p-value adjusted by the policy's correction
    within the group and metric, the family being all pairs of that group; ``test`` and
    ``correction`` name them. Every test of the call shares one set of random signs. Systems
    default to all that have the metric, in Table 1's order.
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    groups = [g for g in _GROUPS if g in per_query]
    families = []
    for key, frame in (per_query.groupby(groups, sort=False) if groups else [((), per_query)]):
        key = key if isinstance(key, tuple) else (key,)
        for metric in metrics:
            wide = frame.pivot_table(index="topic", columns="system", values=metric,
                                     aggfunc="mean")
            here = [s for s in (systems or order_systems(wide.columns))
                    if s in wide and wide[s].notna().any()]
            families.append(({**dict(zip(groups, key, strict=True)), "metric": metric},
                             {s: wide[s].dropna().to_dict() for s in here}))
    rows = pairwise_tests(families, policy)
    for r in rows:
        a, b = r.pop("a"), r.pop("b")
        r.update(system_a=a, system_b=b, label_a=display_name(a, names),
                 label_b=display_name(b, names), n_topics=r.pop("topics"))
    columns = groups + PAIRED_COLUMNS
    out = pd.DataFrame.from_records(rows, columns=columns)
    for c in ("mean_a", "mean_b", "diff", "p", "p_adjusted"):
        out[c] = out[c].astype(float)        # None (undefined) -> NaN
    out.attrs["policy"] = policy
    return out


def _p(p: float) -> str:
    if not math.isfinite(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def paired_tests_markdown(frame: pd.DataFrame, alpha: float = 0.05) -> str:
    """The paired tests as Markdown: means and difference x 100, p-values raw and adjusted;
    a ``*`` marks pairs whose adjusted p is below ``alpha``; the note names the test and the
    correction."""
    policy: Policy = frame.attrs.get("policy", POLICY)
    groups = [g for g in _GROUPS if g in frame]
    header = [*(g for g in groups), "Metric", "System A", "System B", "Topics", "Mean A",
              "Mean B", "A - B", "p", policy.adjusted_header, f"p adj. < {alpha}"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < len(groups) + 3 else "---:"
                            for i in range(len(header))) + "|"]
    for r in frame.to_dict("records"):
        sig = "*" if math.isfinite(r["p_adjusted"]) and r["p_adjusted"] < alpha else ""
        cells = [*(str(r[g]) for g in groups), METRIC_LABELS.get(r["metric"], r["metric"]),
                 md_escape(r["label_a"]), md_escape(r["label_b"]), str(r["n_topics"]),
                 *(format_number(r[c] * 100, 1) for c in ("mean_a", "mean_b", "diff")),
                 _p(r["p"]), _p(r["p_adjusted"]), sig]
        lines.append("| " + " | ".join(cells) + " |")
    note = (f"- Means over shared topics x 100; {policy.describe('group and metric')}; "
            f"* = adjusted p < {alpha}.")
    adjusted = frame["p_adjusted"].dropna() if len(frame) else pd.Series(dtype=float)
    if len(frame) and not (adjusted < alpha).any():
        # Nothing separates: say so above the rows, so that no one reads them as a ranking.
        least = "-" if adjusted.empty else _p(adjusted.min())
        topics = int(frame["n_topics"].max())
        warning = (f"No pair of systems differs significantly: {len(frame)} pairs over at most "
                   f"{topics} topic{'s' if topics != 1 else ''}, smallest adjusted p {least}. "
                   "The differences below are noise, not a ranking.")
        return warning + "\n\n" + "\n".join(lines) + "\n\n" + note + "\n"
    return "\n".join(lines) + "\n\n" + note + "\n"

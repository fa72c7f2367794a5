"""Table 2 of the paper (Sec. 4): Cov(y) and Cov(Z) "mean (sd)" over the pipelines' system
means, and their Kendall tau, for each answerability threshold eta; its writers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cruxflow.paper.labels import DASH
from cruxflow.paper.tables.common import (
    datasets_of,
    format_number,
    latex_escape,
    latex_table,
    least_topics,
    md_escape,
    only_pipelines,
    pipeline_tau,
    select,
    too_few_topics_note,
)

# The paper's Table 2, row eta = 3: Cov(y) 50.1 (+- 3.5) and Cov(Z) 40.4 (+- 3) are the mean and
# sample sd of Table 1's 21 DUC pipelines' Cov(Z) (50.14, 3.50) and Cov(y) (40.37, 3.04).
TABLE2_PAPER_NOTE = ("Each column holds the metric it names. In the paper's Table 2 the eta = 3 "
                     "row's Cov(y) and Cov(Z) are swapped: its 50.1 (3.5) and 40.4 (3.0) are the "
                     "mean (sd) of Table 1's DUC pipelines' Cov(Z) and Cov(y).")
TABLE2_COLUMNS = ["dataset", "eta", "k", "n_systems", "n_topics", "Cov_y_mean", "Cov_y_sd",
                  "Cov_mean", "Cov_sd", "tau", "tau_low", "tau_high"]


def table2(per_query: pd.DataFrame, datasets: str | Sequence[str] | None = None, *,
           etas: Sequence[int] | None = None, k: int | str = "oracle",
           n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
           min_topics: int | None = None) -> pd.DataFrame:
    """Table 2: per (dataset, eta), mean and sd of the pipelines' system means of Cov(y) and
    Cov(Z) (x 100), and Kendall tau between them with its bootstrap CI.

    The sd is the sample standard deviation (ddof=1) across pipelines; the paper does not say
    which. ``etas`` defaults to every eta in the frame, ascending.
    """
    records = []
    for ds in datasets_of(per_query, datasets):
        in_ds = per_query[per_query["dataset"] == ds]
        for eta in etas if etas is not None else sorted(in_ds["eta"].astype(int).unique()):
            sel = only_pipelines(select(per_query, dataset=ds, eta=eta, k=k))
            means = sel.groupby("system")[["Cov_y", "Cov"]].mean() * 100
            means = means[np.isfinite(means).all(axis=1)]
            tau = pipeline_tau(sel, "Cov", "Cov_y", n_resamples=n_resamples, confidence=confidence,
                               seed=seed, min_topics=min_topics)
            records.append({
                "dataset": ds, "eta": int(eta), "k": str(k), "n_systems": len(means),
                "n_topics": sel["topic"].nunique(),
                "Cov_y_mean": means["Cov_y"].mean(), "Cov_y_sd": means["Cov_y"].std(ddof=1),
                "Cov_mean": means["Cov"].mean(), "Cov_sd": means["Cov"].std(ddof=1),
                "tau": tau["value"], "tau_low": tau["low"], "tau_high": tau["high"]})
    frame = pd.DataFrame.from_records(records, columns=TABLE2_COLUMNS)
    frame.attrs["confidence"] = confidence
    frame.attrs["min_topics"] = least_topics(min_topics)
    return frame


def _mean_sd(mean: float, sd: float, pm: str) -> str:
    if not math.isfinite(mean):
        return DASH
    return f"{mean:.1f} ({pm} {sd:.1f})" if math.isfinite(sd) else f"{mean:.1f}"


def _table2_cells(frame: pd.DataFrame, pm: str, eta_fmt: str) -> tuple[list[str], list[list]]:
    multi = frame["dataset"].nunique() > 1
    header = (["Dataset"] if multi else []) + ["", "Cov(y)", "Cov(Z)", "Kendall tau"]
    rows = []
    for r in frame.itertuples():
        rows.append(([r.dataset] if multi else []) + [
            eta_fmt.format(r.eta), _mean_sd(r.Cov_y_mean, r.Cov_y_sd, pm),
            _mean_sd(r.Cov_mean, r.Cov_sd, pm), format_number(r.tau)])
    return header, rows


def _table2_notes(frame: pd.DataFrame, *, tau: str = "tau", eta: str = "eta",
                  escape=str) -> list[str]:
    pct = escape(f"{frame.attrs.get('confidence', 0.95):.0%}")
    least = frame.attrs.get("min_topics", least_topics())
    few = list(dict.fromkeys((r.dataset, r.n_topics) for r in frame.itertuples()
                             if r.n_topics < least))
    return [too_few_topics_note(ds, n, escape) for ds, n in few] + [
        f"{escape(r.dataset)}, {eta} = {r.eta}: {r.n_systems} pipelines, {r.n_topics} "
        f"topics; {tau} {pct} bootstrap CI [{format_number(r.tau_low)}, "
        f"{format_number(r.tau_high)}]."
        for r in frame.itertuples() if r.n_topics >= least] + [
        "Mean (sd) over the pipelines' system means x 100; sd with ddof=1.", TABLE2_PAPER_NOTE]


def table2_markdown(frame: pd.DataFrame) -> str:
    """Table 2 as Markdown: ``mean (± sd)`` cells, tau with three decimals, CIs in notes; no
    tau column when no row has a tau (the notes say why)."""
    header, rows = _table2_cells(frame, "±", "eta = {}")
    if all(row[-1] == DASH for row in rows):
        header, rows = header[:-1], [row[:-1] for row in rows]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < len(header) - 3 + (header[-1] != "Kendall tau")
                            else "---:"
                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in _table2_notes(frame)) + "\n"


def table2_latex(frame: pd.DataFrame, caption: str | None = None,
                 label: str | None = "tab:table2") -> str:
    """Table 2 in LaTeX (booktabs)."""
    header, rows = _table2_cells(frame, r"$\pm$", r"$\eta = {}$")
    header = [{"Cov(y)": "$Cov(y)$", "Cov(Z)": "$Cov(Z)$", "Kendall tau": r"Kendall $\tau$"}
              .get(h, h) for h in header]
    multi = len(header) == 5
    body = [" & ".join(header) + r" \\", r"\midrule"]
    body += [" & ".join([latex_escape(row[0]), *row[1:]] if multi else row) + r" \\"
             for row in rows]
    notes = _table2_notes(frame, tau=r"$\tau$", eta=r"$\eta$", escape=latex_escape)
    colspec = ("l" if multi else "") + "lrrr"
    return latex_table(body, colspec, caption, label, notes)

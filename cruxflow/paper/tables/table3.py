"""Table 3 of the paper (Sec. 4): per dataset and context size k, Kendall tau over the pipelines
of each context metric against its final-result metric; its writers."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cruxflow.paper.labels import LATEX_METRIC_LABELS, METRIC_LABELS, TABLE3_PAIRS
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


def _k_key(k: str):
    return (0, 0) if k == "oracle" else (1, int(k)) if str(k).isdigit() else (2, str(k))


def table3(per_query: pd.DataFrame, datasets: str | Sequence[str] | None = None, *,
           eta: int = 3, ks: Sequence[int | str] | None = None, n_resamples: int = 1000,
           confidence: float = 0.95, seed: int = 0, min_topics: int | None = None
           ) -> pd.DataFrame:
    """Table 3: per (dataset, k), Kendall tau over the pipelines of each context metric against
    its final-result metric (``TABLE3_PAIRS``): column ``<metric>`` holds tau, ``<metric>_low``
    and ``<metric>_high`` its bootstrap CI, ``<metric>_n`` the pipelines used. ``ks`` defaults
    to every k in the frame in the order oracle (|Z*|), then ascending sizes."""
    records = []
    for ds in datasets_of(per_query, datasets):
        in_ds = per_query[(per_query["dataset"] == ds)
                          & (per_query["eta"].astype(int) == int(eta))]
        sizes = ([str(k) for k in ks] if ks is not None
                 else sorted(in_ds["k"].astype(str).unique(), key=_k_key))
        for k in sizes:
            sel = only_pipelines(select(per_query, dataset=ds, eta=eta, k=k))
            rec = {"dataset": ds, "eta": int(eta), "k": k, "n_topics": sel["topic"].nunique()}
            for m, versus in TABLE3_PAIRS.items():
                tau = pipeline_tau(sel, m, versus, n_resamples=n_resamples, confidence=confidence,
                                   seed=seed, min_topics=min_topics)
                rec |= {m: tau["value"], f"{m}_low": tau["low"], f"{m}_high": tau["high"],
                        f"{m}_n": tau["n_systems"]}
            records.append(rec)
    frame = pd.DataFrame.from_records(records)
    frame.attrs["confidence"] = confidence
    frame.attrs["min_topics"] = least_topics(min_topics)
    return frame


def _k_label(k: str, oracle: str) -> str:
    return oracle if k == "oracle" else str(k)


def _table3_rows(frame: pd.DataFrame, oracle: str) -> list[list[str]]:
    rows, previous = [], None
    for r in frame.to_dict("records"):
        first = r["dataset"] != previous
        previous = r["dataset"]
        rows.append([r["dataset"] if first else "", _k_label(r["k"], oracle),
                     *(format_number(r[m]) for m in TABLE3_PAIRS)])
    return rows


def table3_markdown(frame: pd.DataFrame) -> str:
    """Table 3 as Markdown, three decimals (the CIs are in the CSV)."""
    least = frame.attrs.get("min_topics", least_topics())
    few = {r["dataset"]: r["n_topics"] for r in frame.to_dict("records")
           if r["n_topics"] < least}
    if len(few) == frame["dataset"].nunique():   # nothing to show: say why, no empty table
        return "\n".join(f"- {too_few_topics_note(ds, n)}" for ds, n in few.items()) + "\n"
    frame = frame[~frame["dataset"].isin(few)]
    header = ["Dataset", "k", *(METRIC_LABELS[m] for m in TABLE3_PAIRS)]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * len(TABLE3_PAIRS)]
    lines += ["| " + " | ".join(md_escape(c) if i < 2 else c for i, c in enumerate(row)) + " |"
              for row in _table3_rows(frame, "|Z*|")]
    note = ("- Kendall tau over the pipelines; Cov(Z), both alpha-nDCGs, Recall, MAP, nDCG "
            "against Cov(y), Den(Z) against Den(y). Bootstrap CIs in the CSV.")
    note += "".join(f"\n- {too_few_topics_note(ds, n)}" for ds, n in few.items())
    return "\n".join(lines) + "\n\n" + note + "\n"


def table3_latex(frame: pd.DataFrame, caption: str | None = None,
                 label: str | None = "tab:table3") -> str:
    """Table 3 in LaTeX (booktabs), a rule between datasets."""
    header = ["", "$k$", *(LATEX_METRIC_LABELS[m] for m in TABLE3_PAIRS)]
    body = [" & ".join(header) + r" \\"]
    for row in _table3_rows(frame, "$|Z^*|$"):
        if row[0]:
            body.append(r"\midrule")
        body.append(" & ".join([latex_escape(row[0]), *row[1:]]) + r" \\")
    return latex_table(body, "ll" + "r" * len(TABLE3_PAIRS), caption, label, [])

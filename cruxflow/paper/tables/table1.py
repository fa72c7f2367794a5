"""Table 1 of the paper (Sec. 4): Cov(Z), alpha-nDCG (published computation), alpha-nDCG
(Eq. 4), Cov(y), Den(Z), Den(y) of every system at one eta and k = |Z*|, the reference rows
first, and a last row with Kendall tau between context and final-result metrics over the
pipelines (:func:`table1`); its writers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from cruxflow.paper.labels import (
    DASH,
    LATEX_METRIC_LABELS,
    LATEX_SYSTEM_LABELS,
    METRIC_LABELS,
    SYSTEM_LABELS,
    TABLE1_METRICS,
    TABLE1_PAIRS,
    TAU_LABEL,
    TAU_ROW,
    display_name,
    measure_name,
    order_systems,
    system_kind,
    table_block,
)
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


def _display_round(value: float, digits: int) -> float:
    # Best/worst are judged on the printed numbers, so that ties a reader sees are all marked.
    return float(f"{value:.{digits}f}") if math.isfinite(value) else np.nan


TABLE1_COLUMNS = ["dataset", "eta", "k", "row", "system", "label", "kind", "metric", "versus",
                  "value", "low", "high", "n_systems", "n_topics", "marker", "measure"]


def table1(per_query: pd.DataFrame, datasets: str | Sequence[str] | None = None, *,
           eta: int = 3, k: int | str = "oracle", names: Mapping[str, str] | None = None,
           n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0,
           min_topics: int | None = None) -> pd.DataFrame:
    """Table 1 of the paper for one or several datasets, as a long frame.

    One row per (dataset, system, metric) with ``value`` = mean over topics x 100 (NaN where the
    metric is undefined), ``measure`` = the metric's full name (``Cov@oracle``: what
    ``cruxflow.evaluate`` computes from the system's run; empty for Cov(y), Den(y), which
    measure the report), ``n_topics`` = topics with a value, and ``marker`` = ``"best"`` /
    ``"worst"`` for the highest / lowest pipeline of the column at the printed precision (one
    decimal; ties all marked, nothing marked if all pipelines are equal). The last rows (system
    ``kendall_tau``, kind ``"correlation"``) hold Kendall tau over the pipelines of ``metric``
    against ``versus`` (Cov(Z) and both alpha-nDCGs vs Cov(y); Den(Z) vs Den(y)) -- not scaled --
    with
    the percentile bootstrap CI over topics in ``low``/``high``. ``row`` is the print order.
    """
    records = []
    for ds in datasets_of(per_query, datasets):
        sel = select(per_query, dataset=ds, eta=eta, k=k)
        if sel.empty:
            raise ValueError(f"no rows for dataset {ds!r}, eta={eta}, k={k}")
        systems = order_systems(sel["system"])
        grouped = sel.groupby("system")
        metrics = [m for m in TABLE1_METRICS if m in sel]
        means = grouped[metrics].mean().reindex(systems) * 100
        counts = grouped[metrics].count().reindex(systems)
        kinds = {s: system_kind(s) for s in systems}
        markers: dict[tuple[str, str], str] = {}
        pipes = [s for s in systems if kinds[s] == "pipeline"]
        for m in metrics:
            shown = pd.Series({s: _display_round(means.at[s, m], 1) for s in pipes}).dropna()
            if len(shown) >= 2 and shown.max() > shown.min():
                markers |= {(s, m): "best" for s in shown.index[shown == shown.max()]}
                markers |= {(s, m): "worst" for s in shown.index[shown == shown.min()]}
        for row, s in enumerate(systems):
            for m in TABLE1_METRICS:
                value = float(means.at[s, m]) if m in means else np.nan
                records.append({
                    "dataset": ds, "eta": eta, "k": str(k), "row": row, "system": s,
                    "label": display_name(s, names), "kind": kinds[s], "metric": m,
                    "versus": "", "value": value, "low": np.nan, "high": np.nan,
                    "n_systems": 1, "n_topics": int(counts.at[s, m]) if m in counts else 0,
                    "marker": markers.get((s, m), ""), "measure": measure_name(m, k, eta)})
        pipeline_rows = only_pipelines(sel)
        for m in TABLE1_METRICS:
            versus = TABLE1_PAIRS.get(m, "")
            tau = (pipeline_tau(pipeline_rows, m, versus, n_resamples=n_resamples,
                                confidence=confidence, seed=seed, min_topics=min_topics) if versus
                   else {"value": np.nan, "low": np.nan, "high": np.nan, "n_systems": 0,
                         "n_topics": 0})
            records.append({"dataset": ds, "eta": eta, "k": str(k), "row": len(systems),
                            "system": TAU_ROW, "label": TAU_LABEL, "kind": "correlation",
                            "metric": m, "versus": versus, **tau, "marker": "",
                            "measure": ""})
    frame = pd.DataFrame.from_records(records, columns=TABLE1_COLUMNS)
    frame.attrs["confidence"] = confidence
    frame.attrs["min_topics"] = least_topics(min_topics)
    frame.attrs["n_resamples"] = n_resamples
    return frame


def table1_wide(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 1's numbers with a two-level column header (dataset, metric), rows = labels."""
    rows = _table1_rows(frame)
    order = [(ds, m) for ds in pd.unique(frame["dataset"]) for m in TABLE1_METRICS]
    wide = frame.pivot_table(index="system", columns=["dataset", "metric"], values="value",
                             aggfunc="first", dropna=False)
    wide = wide.reindex(index=[s for s, _, _ in rows], columns=pd.MultiIndex.from_tuples(order))
    wide.index = pd.Index([label for _, label, _ in rows], name="system")
    return wide


def _table1_rows(frame: pd.DataFrame):
    """Print order of Table 1: (system, label, kind) by row, each system once."""
    firsts = frame.sort_values(["row"], kind="stable").drop_duplicates("system")
    # A system may sit at different rows in different datasets; order by the global key.
    systems = order_systems(s for s in firsts["system"] if s != TAU_ROW) + [TAU_ROW]
    labels = dict(zip(firsts["system"], firsts["label"], strict=True))
    return [(s, labels[s], system_kind(s) if s != TAU_ROW else "correlation") for s in systems]


def _cell(frame_idx: dict, ds: str, system: str, metric: str, *, bold, under) -> str:
    rec = frame_idx.get((ds, system, metric))
    if rec is None or not math.isfinite(rec["value"]):
        return DASH
    text = f"{rec['value']:.3f}" if rec["kind"] == "correlation" else f"{rec['value']:.1f}"
    if rec["marker"] == "best":
        return bold(text)
    if rec["marker"] == "worst":
        return under(text)
    return text


def _index(frame: pd.DataFrame) -> dict:
    return {(r["dataset"], r["system"], r["metric"]): r for r in frame.to_dict("records")}


def _ci_notes(frame: pd.DataFrame, metric_label: Mapping[str, str], *, tau: str = "tau",
              escape=str) -> list[str]:
    level = frame.attrs.get("confidence", 0.95)
    pct = escape(f"{level:.0%}")
    taus = frame[(frame["system"] == TAU_ROW) & frame["value"].notna()]
    notes = []
    for ds in pd.unique(taus["dataset"]):
        rows = taus[taus["dataset"] == ds]
        parts = [f"{metric_label[r.metric]} vs {metric_label[r.versus]} "
                 f"[{format_number(r.low)}, {format_number(r.high)}]" for r in rows.itertuples()]
        n = int(rows["n_systems"].max())
        t = int(rows["n_topics"].max())
        head = f"{escape(ds)}: Kendall {tau} over {n} pipelines"
        if rows["low"].notna().any():
            head += f"; {pct} bootstrap CI over {t} topics: " + "; ".join(parts)
        notes.append(head + ".")
    return notes


def _withheld(frame: pd.DataFrame) -> dict[str, int]:
    """Datasets whose taus were withheld for too few topics, with their topic counts."""
    least = frame.attrs.get("min_topics", least_topics())
    taus = frame[frame["system"] == TAU_ROW]
    out = {}
    for ds in pd.unique(taus["dataset"]):
        rows = taus[taus["dataset"] == ds]
        topics = int(frame[(frame["dataset"] == ds) & (frame["system"] != TAU_ROW)]
                     ["n_topics"].max())
        if rows["value"].isna().all() and topics < least:
            out[ds] = topics
    return out


def table1_markdown(frame: pd.DataFrame) -> str:
    """Table 1 as a Markdown table: best pipeline ``**bold**``, worst ``<u>underlined</u>``;
    CIs of the tau row in notes under the table. Several datasets: headers ``Cov(Z) [DUC]``.
    A column with no value in any row is left out, and so is a tau row with no value (a note
    says why when there were too few topics)."""
    datasets = list(pd.unique(frame["dataset"]))
    multi = len(datasets) > 1
    columns = [(ds, m) for ds in datasets for m in TABLE1_METRICS]
    idx = _index(frame)
    body = []
    for system, label, _ in _table1_rows(frame):
        cells = [_cell(idx, ds, system, m, bold=lambda t: f"**{t}**",
                       under=lambda t: f"<u>{t}</u>") for ds, m in columns]
        if system == TAU_ROW and all(c == DASH for c in cells):
            continue
        body.append((md_escape(label), cells))
    shown = [i for i in range(len(columns)) if any(cells[i] != DASH for _, cells in body)]
    header = ["Retrieval context"] + [
        f"{METRIC_LABELS[m]} [{ds}]" if multi else METRIC_LABELS[m]
        for ds, m in (columns[i] for i in shown)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (
        len(header) - 1)) + "|"]
    lines += ["| " + " | ".join([label, *(cells[i] for i in shown)]) + " |"
              for label, cells in body]
    withheld = _withheld(frame)
    notes = [too_few_topics_note(ds, n) for ds, n in withheld.items()]
    notes += [n for n in _ci_notes(frame, METRIC_LABELS)
              if not any(n.startswith(f"{ds}:") for ds in withheld)]
    text = "\n".join(lines) + "\n"
    if notes:
        text += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return text


def _latex_label(system: str, label: str) -> str:
    if system in LATEX_SYSTEM_LABELS and label == SYSTEM_LABELS.get(system):
        return LATEX_SYSTEM_LABELS[system]
    if system == TAU_ROW:
        return r"Rank Corr. (Kendall $\tau$)"
    return latex_escape(label)


def table1_latex(frame: pd.DataFrame, caption: str | None = None,
                 label: str | None = "tab:table1") -> str:
    """Table 1 in LaTeX (booktabs): a ``\\multicolumn`` dataset header over the five metrics,
    ``\\textbf`` best and ``\\underline`` worst pipeline, rules between blocks of rows, tau CIs in
    a footnote-size note. ``caption`` is inserted verbatim (it may hold LaTeX)."""
    datasets = list(pd.unique(frame["dataset"]))
    n = len(TABLE1_METRICS)
    colspec = "l" + "".join(" " + "r" * n for _ in datasets)
    top = "Retrieval context & " + " & ".join(
        rf"\multicolumn{{{n}}}{{c}}{{{latex_escape(ds)}}}" for ds in datasets) + r" \\"
    rules = " ".join(rf"\cmidrule(lr){{{2 + i * n}-{1 + (i + 1) * n}}}"
                     for i in range(len(datasets)))
    metric_row = " & " + " & ".join(LATEX_METRIC_LABELS[m] for _ in datasets
                                    for m in TABLE1_METRICS) + r" \\"
    body = [top, rules, metric_row]
    idx = _index(frame)
    previous = None
    for system, lab, _ in _table1_rows(frame):
        block = "tau" if system == TAU_ROW else table_block(system)
        body.append(r"\midrule" if previous is None or block != previous else "")
        previous = block
        cells = [_cell(idx, ds, system, m, bold=lambda t: rf"\textbf{{{t}}}",
                       under=lambda t: rf"\underline{{{t}}}")
                 for ds in datasets for m in TABLE1_METRICS]
        body.append(" & ".join([_latex_label(system, lab), *cells]) + r" \\")
    notes = _ci_notes(frame, LATEX_METRIC_LABELS, tau=r"$\tau$", escape=latex_escape)
    return latex_table([b for b in body if b], colspec, caption, label, notes)

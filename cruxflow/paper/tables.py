"""The paper's result tables (Sec. 4) built from one per-query frame.

* :func:`table1` -- Table 1: Cov(Z), alpha-nDCG (published computation), alpha-nDCG (Eq. 4),
  Cov(y), Den(Z), Den(y) of every system (means over topics x 100) at one eta and k = |Z*|, the
  reference rows (#1)-(#3) first, and a last row with Kendall tau between context and
  final-result metrics over the pipelines.
* :func:`table2` -- Table 2: Cov(y) and Cov(Z) "mean (sd)" over the pipelines' system means, and
  their tau, for each answerability threshold eta.
* :func:`table3` -- Table 3: tau against Cov(y) of Cov(Z), both alpha-nDCGs, Recall, MAP, nDCG,
  and of Den(Z) against Den(y), for each dataset and context size k (|Z*|, 10, 20).

The paired significance tests between systems are in :mod:`cruxflow.paper.significance`.

Input: a per-query frame with columns ``dataset``, ``eta``, ``system``, ``k`` (``"oracle"``,
``"10"``, ...), ``topic``, the context metrics of :mod:`cruxflow.metrics.scorer` (``Cov``,
``alpha_nDCG_published``, ``alpha_nDCG_crux``, ``Den``, ``R``, ``AP``, ``nDCG``) and the
final-result metrics ``Cov_y``, ``Den_y``. A metric that does not exist for a system (Cov(Z) of
direct prompting) is NaN.

Systems fall in three kinds (:func:`system_kind`): the paper's references ``direct`` (#1),
``human`` (#2, the human summary y*) and ``oracle`` (#3, the context Z*); our random baselines
``random`` and ``random-relevant``; and pipelines, i.e. every other name (first stages, first
stage + re-ranker, user runs). Taus, best/worst markers and Table 2's mean and sd use the
pipelines only, as in the paper. Every tau and its bootstrap CI come from
:func:`cruxflow.metrics.stats.system_correlation`; a pipeline whose mean of either metric
is undefined (NaN) is left out of that tau.

Builders return frames; the writers (:func:`to_csv`, ``table*_markdown``, ``table*_latex``) turn
a frame into text. Table 1's frame is long: one row per (dataset, system, metric), see
:func:`table1`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from cruxflow.data.limits import check_bootstrap, check_count
from cruxflow.metrics.stats import nan_if_none, system_correlation
from cruxflow.paper.labels import (  # noqa: F401 - part of this module's API
    BASELINES,
    DASH,
    FIRST_STAGE_LABELS,
    FIRST_STAGE_SHORT,
    FIRST_STAGES,
    LATEX_METRIC_LABELS,
    LATEX_SYSTEM_LABELS,
    METRIC_LABELS,
    REFERENCES,
    RERANKERS,
    SYSTEM_LABELS,
    TABLE1_METRICS,
    TABLE1_PAIRS,
    TABLE3_PAIRS,
    TAU_LABEL,
    TAU_ROW,
    display_name,
    measure_name,
    order_systems,
    system_kind,
    table_block,
)

# ---------------------------------------------------------------------------------- selection

def _datasets(per_query: pd.DataFrame, datasets: str | Sequence[str] | None) -> list[str]:
    if datasets is None:
        return list(pd.unique(per_query["dataset"]))
    return [datasets] if isinstance(datasets, str) else list(datasets)


def select(per_query: pd.DataFrame, *, dataset: str | None = None, eta: int | None = None,
           k: int | str | None = None) -> pd.DataFrame:
    """Rows of one dataset, eta and context size (a ``None`` argument keeps all values).

    Direct prompting and the human summary have no context; if no row of theirs carries the
    requested ``k``, their rows at any k are used (those of the first k found).
    """
    mask = pd.Series(True, index=per_query.index)
    if dataset is not None:
        mask &= per_query["dataset"] == dataset
    if eta is not None:
        mask &= per_query["eta"].astype(int) == int(eta)
    sel = per_query[mask]
    if k is None:
        return sel.copy()
    ks = sel["k"].astype(str)
    out = [sel[ks == str(k)]]
    for system in ("direct", "human"):
        rows = sel[sel["system"] == system]
        if len(rows) and not (rows["k"].astype(str) == str(k)).any():
            out.append(rows[rows["k"].astype(str) == str(rows["k"].iloc[0])])
    return pd.concat(out).copy()


# Fewer topics than this and no Kendall tau is printed, the tables say why instead: with a
# handful of topics the pipelines' means tie or order by chance, and a tau of 1.000 over them
# (or its bootstrap interval, drawn from 2-3 topics) reads as a finding. The paper's taus are
# over 50 (DUC) and 100 (Multi-News) topics. ``None`` in the builders' ``min_topics``: this.
MIN_TAU_TOPICS = 10


def too_few_topics_note(dataset: str, n_topics: int, escape=str) -> str:
    return (f"{escape(dataset)}: Kendall tau not shown: {n_topics} topic"
            f"{'s' if n_topics != 1 else ''}, fewer than the {MIN_TAU_TOPICS} a ranking "
            "correlation over pipelines needs (the paper: 50 and 100); with so few topics the "
            "means below do not rank the systems either.")


def _pipelines(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["system"].map(system_kind) == "pipeline"]


def _tau(frame: pd.DataFrame, x: str, y: str, *, n_resamples: int, confidence: float,
         seed: int, min_topics: int | None = None) -> dict:
    """Kendall tau of pipelines' means of x and y, with its bootstrap CI (NaN if < 2 systems
    or fewer than ``min_topics`` topics, default :data:`MIN_TAU_TOPICS`)."""
    empty = {"value": np.nan, "low": np.nan, "high": np.nan, "n_systems": 0, "n_topics": 0}
    if x not in frame or y not in frame:
        return empty
    means = frame.groupby("system")[[x, y]].mean()
    keep = means.index[np.isfinite(means[x]) & np.isfinite(means[y])]
    rows = frame[frame["system"].isin(keep)]
    least = MIN_TAU_TOPICS if min_topics is None else min_topics
    if len(keep) < 2 or rows["topic"].nunique() < least:
        return {**empty, "n_systems": len(keep), "n_topics": rows["topic"].nunique()}
    check_count("bootstrap", n_resamples, "n_resamples")
    check_bootstrap(n_resamples, rows["topic"].nunique(), "n_resamples")
    c = system_correlation(rows, x, y, method="kendall", n_resamples=n_resamples,
                           confidence=confidence, seed=seed)
    return {"value": nan_if_none(c.value), "low": nan_if_none(c.low),
            "high": nan_if_none(c.high), "n_systems": c.n_systems, "n_topics": c.n_topics}


def _display_round(value: float, digits: int) -> float:
    # Best/worst are judged on the printed numbers, so that ties a reader sees are all marked.
    return float(f"{value:.{digits}f}") if math.isfinite(value) else np.nan


# ---------------------------------------------------------------------------------- Table 1

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
    for ds in _datasets(per_query, datasets):
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
        pipeline_rows = _pipelines(sel)
        for m in TABLE1_METRICS:
            versus = TABLE1_PAIRS.get(m, "")
            tau = (_tau(pipeline_rows, m, versus, n_resamples=n_resamples,
                        confidence=confidence, seed=seed, min_topics=min_topics) if versus
                   else {"value": np.nan, "low": np.nan, "high": np.nan, "n_systems": 0,
                         "n_topics": 0})
            records.append({"dataset": ds, "eta": eta, "k": str(k), "row": len(systems),
                            "system": TAU_ROW, "label": TAU_LABEL, "kind": "correlation",
                            "metric": m, "versus": versus, **tau, "marker": "",
                            "measure": ""})
    frame = pd.DataFrame.from_records(records, columns=TABLE1_COLUMNS)
    frame.attrs["confidence"] = confidence
    frame.attrs["min_topics"] = MIN_TAU_TOPICS if min_topics is None else min_topics
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


def format_number(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if x is not None and math.isfinite(x) else DASH


def _withheld(frame: pd.DataFrame) -> dict[str, int]:
    """Datasets whose taus were withheld for too few topics, with their topic counts."""
    least = frame.attrs.get("min_topics", MIN_TAU_TOPICS)
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


def md_escape(text: str) -> str:
    return str(text).replace("|", r"\|").replace("*", r"\*")


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(c, c) for c in str(text))


def _latex_label(system: str, label: str) -> str:
    if system in LATEX_SYSTEM_LABELS and label == SYSTEM_LABELS.get(system):
        return LATEX_SYSTEM_LABELS[system]
    if system == TAU_ROW:
        return r"Rank Corr. (Kendall $\tau$)"
    return latex_escape(label)


def _latex_table(body: list[str], colspec: str, caption: str | None, label: str | None,
                 notes: list[str]) -> str:
    out = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{colspec}}}",
           r"\toprule", *body, r"\bottomrule", r"\end{tabular}"]
    if notes:
        out.append(r"\par\smallskip{\footnotesize " + r" \\ ".join(notes) + "}")
    if caption:
        out.append(rf"\caption{{{caption}}}")
    if label:
        out.append(rf"\label{{{label}}}")
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


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
    return _latex_table([b for b in body if b], colspec, caption, label, notes)


def to_csv(frame: pd.DataFrame) -> str:
    """Any of the frames here as CSV text (full precision; NaN as an empty field)."""
    return frame.to_csv(index=False)


# ---------------------------------------------------------------------------------- Table 2

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
    for ds in _datasets(per_query, datasets):
        in_ds = per_query[per_query["dataset"] == ds]
        for eta in etas if etas is not None else sorted(in_ds["eta"].astype(int).unique()):
            sel = _pipelines(select(per_query, dataset=ds, eta=eta, k=k))
            means = sel.groupby("system")[["Cov_y", "Cov"]].mean() * 100
            means = means[np.isfinite(means).all(axis=1)]
            tau = _tau(sel, "Cov", "Cov_y", n_resamples=n_resamples, confidence=confidence,
                       seed=seed, min_topics=min_topics)
            records.append({
                "dataset": ds, "eta": int(eta), "k": str(k), "n_systems": len(means),
                "n_topics": sel["topic"].nunique(),
                "Cov_y_mean": means["Cov_y"].mean(), "Cov_y_sd": means["Cov_y"].std(ddof=1),
                "Cov_mean": means["Cov"].mean(), "Cov_sd": means["Cov"].std(ddof=1),
                "tau": tau["value"], "tau_low": tau["low"], "tau_high": tau["high"]})
    frame = pd.DataFrame.from_records(records, columns=TABLE2_COLUMNS)
    frame.attrs["confidence"] = confidence
    frame.attrs["min_topics"] = MIN_TAU_TOPICS if min_topics is None else min_topics
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
    least = frame.attrs.get("min_topics", MIN_TAU_TOPICS)
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
    return _latex_table(body, colspec, caption, label, notes)


# ---------------------------------------------------------------------------------- Table 3

from cruxflow.paper.table3 import table3, table3_latex, table3_markdown  # noqa: E402,F401

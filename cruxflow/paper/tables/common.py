"""What the paper's tables share: the rows of one dataset, eta and k (:func:`select`), the
pipelines among the systems and Kendall tau over them with its bootstrap CI
(:func:`pipeline_tau`, withheld below :data:`MIN_TAU_TOPICS` topics), and the writers' numbers,
escapes, LaTeX table and CSV."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cruxflow.data.limits import check_bootstrap, check_count
from cruxflow.metrics.stats import nan_if_none, system_correlation
from cruxflow.paper.labels import DASH, system_kind


def datasets_of(per_query: pd.DataFrame, datasets: str | Sequence[str] | None) -> list[str]:
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


def least_topics(min_topics: int | None = None) -> int:
    """The fewest topics a tau is shown for: ``min_topics``, else :data:`MIN_TAU_TOPICS`."""
    return MIN_TAU_TOPICS if min_topics is None else min_topics


def too_few_topics_note(dataset: str, n_topics: int, escape=str) -> str:
    return (f"{escape(dataset)}: Kendall tau not shown: {n_topics} topic"
            f"{'s' if n_topics != 1 else ''}, fewer than the {MIN_TAU_TOPICS} a ranking "
            "correlation over pipelines needs (the paper: 50 and 100); with so few topics the "
            "means below do not rank the systems either.")


def only_pipelines(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["system"].map(system_kind) == "pipeline"]


def pipeline_tau(frame: pd.DataFrame, x: str, y: str, *, n_resamples: int, confidence: float,
                 seed: int, min_topics: int | None = None) -> dict:
    """Kendall tau of pipelines' means of x and y, with its bootstrap CI (NaN if < 2 systems
    or fewer than ``min_topics`` topics, default :data:`MIN_TAU_TOPICS`)."""
    empty = {"value": np.nan, "low": np.nan, "high": np.nan, "n_systems": 0, "n_topics": 0}
    if x not in frame or y not in frame:
        return empty
    means = frame.groupby("system")[[x, y]].mean()
    keep = means.index[np.isfinite(means[x]) & np.isfinite(means[y])]
    rows = frame[frame["system"].isin(keep)]
    least = least_topics(min_topics)
    if len(keep) < 2 or rows["topic"].nunique() < least:
        return {**empty, "n_systems": len(keep), "n_topics": rows["topic"].nunique()}
    check_count("bootstrap", n_resamples, "n_resamples")
    check_bootstrap(n_resamples, rows["topic"].nunique(), "n_resamples")
    c = system_correlation(rows, x, y, method="kendall", n_resamples=n_resamples,
                           confidence=confidence, seed=seed)
    return {"value": nan_if_none(c.value), "low": nan_if_none(c.low),
            "high": nan_if_none(c.high), "n_systems": c.n_systems, "n_topics": c.n_topics}


def format_number(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if x is not None and math.isfinite(x) else DASH


def md_escape(text: str) -> str:
    return str(text).replace("|", r"\|").replace("*", r"\*")


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                   "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                   "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(c, c) for c in str(text))


def latex_table(body: list[str], colspec: str, caption: str | None, label: str | None,
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


def to_csv(frame: pd.DataFrame) -> str:
    """Any of the frames here as CSV text (full precision; NaN as an empty field)."""
    return frame.to_csv(index=False)

"""Agreement between the LLM judge and human annotators (paper Sec. 4.3, Figure 4; App. A.2).

Two annotation tasks, each read from a JSONL file (formats in ``docs/human-labels.md``):

* T1, report coverage: annotators label every sub-question of a RAG report (one report per
  topic and retrieval context, the "system") answerable or not. From these labels we compute
  each annotator's coverage of the report over the same answerable sub-questions the LLM's
  Cov(y) uses (the kept Q of Eq. 3), the Spearman correlation between the LLM's and each
  annotator's coverage (the paper reports rho >= 0.8), Fleiss' kappa between the annotators
  (0.52 in the paper) and the Figure 4 plot.
* T2, rubric-based passage ratings: annotators rate (passage, sub-question) pairs 0-5 as the
  LLM judge does (Fig. 8); binarized at eta, the LLM's ratings are scored against the human
  ones with per-class precision, recall and F1 (the paper: precision above 0.6 for both
  classes, recall 0.4 for answerable).

Every computation is a pure function on pandas frames and dicts; :func:`agreement_report`
bundles them into tables a workflow script writes as TSV and JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from cruxflow._extras import extra
from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, nan_to_none, write_json, write_tsv
from cruxflow.data.model import RATING_MAX, RATING_MIN
from cruxflow.data.outputs import atomic_write
from cruxflow.metrics.stats import fleiss_kappa, nan_if_none, rank_correlation

ANSWERABLE, UNANSWERABLE = "answerable", "unanswerable"
CLASSES = [ANSWERABLE, UNANSWERABLE]
# Row labels for aggregates in the per-annotator tables; the parentheses keep them apart from
# annotator names, which :func:`_check_annotators` enforces.
MEAN = "(mean)"
ALL = "(all)"
POOLED = "(all)"

T1_FIELDS = {"topic_id": "id", "system": "str", "annotator": "str", "question": "index",
             "answerable": "bool"}
T2_FIELDS = {"topic_id": "id", "passage_id": "id", "question": "index", "annotator": "str",
             "rating": "rating"}
T1_KEY = ("topic_id", "system", "annotator", "question")
T2_KEY = ("topic_id", "passage_id", "question", "annotator")

_NO_SPACE = re.compile(r"^\S+$")
_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
              dict: "object", type(None): "null"}


# --- reading ------------------------------------------------------------------------------------

def _value(obj: dict, name: str, kind: str, where: dict):
    """One validated field of a record; ``kind`` is one of id, str, index, rating, bool."""
    if name not in obj or obj[name] is None:
        raise DataError("missing", field=name, **where)
    v = obj[name]
    got = f"got {_JSON_TYPE.get(type(v), type(v).__name__)} {json.dumps(v)[:40]}"
    if kind == "bool":
        if not isinstance(v, bool):
            raise DataError(f"expected true or false, {got}", field=name, **where)
        return v
    if kind in ("id", "str"):
        if not isinstance(v, str):
            raise DataError(f"expected a string, {got}", field=name, **where)
        if not v.strip():
            raise DataError("is empty", field=name, **where)
        if kind == "id" and not _NO_SPACE.match(v):
            raise DataError(f"identifier {v!r} contains whitespace", field=name, **where)
        return v
    # Integral floats (3.0) pass, as in cruxflow.data.model.parse_ratings: spreadsheet exports
    # write them; true/false do not, although JSON parsers treat them as numbers.
    if isinstance(v, bool) or not isinstance(v, int | float) \
            or (isinstance(v, float) and not v.is_integer()):
        raise DataError(f"expected an integer, {got}", field=name, **where)
    v = int(v)
    if kind == "index" and v < 0:
        raise DataError(f"question index {v} is negative (indices are 0-based)", field=name,
                        **where)
    if kind == "rating" and not RATING_MIN <= v <= RATING_MAX:
        raise DataError(f"rating {v} is outside {RATING_MIN}..{RATING_MAX}", field=name, **where)
    return v


def _read(path, spec: dict[str, str], key: tuple[str, ...], dup_field: str) -> pd.DataFrame:
    rows, first_seen = [], {}
    for lineno, obj in iter_jsonl(path):
        where = {"path": path, "record": f"line {lineno}"}
        row = {name: _value(obj, name, kind, where) for name, kind in spec.items()}
        k = tuple(row[c] for c in key)
        if k in first_seen:
            desc = ", ".join(f"{c}={row[c]!r}" for c in key)
            raise DataError(f"duplicate label ({desc}); first at line {first_seen[k]}",
                            field=dup_field, **where)
        first_seen[k] = lineno
        row["line"] = lineno
        rows.append(row)
    if not rows:
        raise DataError("no labels in file", path=path)
    frame = pd.DataFrame(rows, columns=[*spec, "line"])
    frame.attrs["path"] = str(path)
    return frame


def read_report_labels(path) -> pd.DataFrame:
    """Read T1 labels: one row per (topic, system, annotator, question) with ``answerable``.

    Columns are the file's fields plus ``line``; ``attrs["path"]`` keeps the file for errors.
    """
    return _read(path, T1_FIELDS, T1_KEY, "question")


def read_passage_ratings(path) -> pd.DataFrame:
    """Read T2 ratings: one row per (topic, passage, question, annotator) with a 0-5 ``rating``."""
    return _read(path, T2_FIELDS, T2_KEY, "question")


def _where(frame: pd.DataFrame, row=None) -> dict:
    """Where a label came from: its ``file`` (frames read from several files) and line."""
    out = {"path": frame.attrs.get("path")}
    if row is not None and "file" in frame.columns:
        out["path"] = row["file"]
    if row is not None and "line" in frame.columns:
        out["record"] = f"line {int(row['line'])}"
    return out


def _check_annotators(frame: pd.DataFrame) -> None:
    bad = sorted({a for a in frame["annotator"].unique() if a in (MEAN, ALL)})
    if bad:
        raise DataError(f"annotator name {bad[0]!r} is reserved for aggregate rows",
                        field="annotator", **_where(frame))


# --- T1: coverage of reports --------------------------------------------------------------------

def human_coverage(labels: pd.DataFrame, kept: Mapping[str, Sequence[int]]) -> pd.DataFrame:
    """Each annotator's Cov(y) of each report: the share of the topic's kept questions labelled
    answerable (Eq. 3 with human answerability instead of ratings >= eta).

    Labels of questions outside ``kept[topic]`` are ignored, as the paper computes human coverage
    over the same answerable sub-questions as the LLM. Returns columns ``topic``, ``system``,
    ``annotator``, ``Cov``, ``n_answerable``, ``n_kept`` (``Cov`` is nan where a topic has no
    kept question, as the registry's Cov gives).
    """
    _check_annotators(labels)
    rows = []
    for (tid, system, annotator), group in labels.groupby(
            ["topic_id", "system", "annotator"], sort=True):
        if tid not in kept:
            raise DataError(f"topic {tid!r} has no judgments (not in the kept questions)",
                            field="topic_id", **_where(labels, group.iloc[0]))
        questions = list(kept[tid])
        answer = dict(zip(group["question"], group["answerable"], strict=True))
        missing = [q for q in questions if q not in answer]
        if missing:
            raise DataError(
                f"topic {tid!r} system {system!r} annotator {annotator!r}: no label for kept "
                f"question(s) {missing}", field="question", path=labels.attrs.get("path"))
        n_yes = sum(bool(answer[q]) for q in questions)
        rows.append({"topic": tid, "system": system, "annotator": annotator,
                     "Cov": n_yes / len(questions) if questions else math.nan,
                     "n_answerable": n_yes, "n_kept": len(questions)})
    return pd.DataFrame(rows, columns=["topic", "system", "annotator", "Cov", "n_answerable",
                                       "n_kept"])


def _spearman(x, y) -> tuple[float, float]:
    """rho and its p-value as frame cells (NaN where undefined)."""
    res = rank_correlation(list(x), list(y), "spearman")
    return nan_if_none(res.value), nan_if_none(res.p_value)


def _check_llm_cov(llm_cov: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("topic", "system", "Cov_y") if c not in llm_cov.columns]
    if missing:
        raise ValueError(f"llm_cov lacks column(s) {missing}; expected topic, system, Cov_y")
    dup = llm_cov.duplicated(["topic", "system"])
    if dup.any():
        t, s = llm_cov.loc[dup, ["topic", "system"]].iloc[0]
        raise ValueError(f"llm_cov has (topic {t!r}, system {s!r}) more than once")
    return llm_cov[["topic", "system", "Cov_y"]]


def annotator_mean(human_cov: pd.DataFrame) -> pd.DataFrame:
    """Mean coverage per (topic, system) over the annotators who labelled that report."""
    return (human_cov.groupby(["topic", "system"], as_index=False)["Cov"].mean()
            .assign(annotator=MEAN)[["topic", "system", "annotator", "Cov"]])


def llm_vs_human(human_cov: pd.DataFrame, llm_cov: pd.DataFrame,
                 per_system: bool = False) -> pd.DataFrame:
    """Spearman rho between the LLM's Cov(y) and each annotator's coverage, and the mean's.

    Pairs are the (topic, system) reports both sides have (nan coverages dropped); pooled over
    all systems (``system`` = ``(all)``, the paper's 30 reports) or, with ``per_system``, within
    each system (the subplots of Figure 4). Columns: ``system``, ``annotator`` (``(mean)`` for
    the annotators' average), ``rho``, ``p_value``, ``n``; rho is nan for fewer than 2 pairs or
    a constant side.
    """
    llm = _check_llm_cov(llm_cov)
    both = pd.concat([human_cov[["topic", "system", "annotator", "Cov"]],
                      annotator_mean(human_cov)], ignore_index=True)
    merged = both.merge(llm, on=["topic", "system"], how="inner").dropna(subset=["Cov", "Cov_y"])
    keys = ["system", "annotator"] if per_system else ["annotator"]
    annotators = [*sorted(human_cov["annotator"].unique()), MEAN]
    rows = []
    for key, group in merged.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        rho, p = _spearman(group["Cov_y"].to_numpy(), group["Cov"].to_numpy())
        system, annotator = key if per_system else (POOLED, key[0])
        rows.append({"system": system, "annotator": annotator, "rho": rho, "p_value": p,
                     "n": len(group)})
    out = pd.DataFrame(rows, columns=["system", "annotator", "rho", "p_value", "n"])
    order = {a: i for i, a in enumerate(annotators)}
    return (out.assign(_o=out["annotator"].map(order))
            .sort_values(["system", "_o"], kind="stable").drop(columns="_o")
            .reset_index(drop=True))


def annotator_spearman(human_cov: pd.DataFrame) -> pd.DataFrame:
    """Spearman rho between every two annotators' coverage over the reports both labelled:
    columns ``annotator_a``, ``annotator_b``, ``rho``, ``p_value``, ``n``."""
    wide = human_cov.pivot(index=["topic", "system"], columns="annotator", values="Cov")
    names = sorted(wide.columns)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = wide[[a, b]].dropna()
            rho, p = _spearman(both[a].to_numpy(), both[b].to_numpy())
            rows.append({"annotator_a": a, "annotator_b": b, "rho": rho, "p_value": p,
                         "n": len(both)})
    return pd.DataFrame(rows, columns=["annotator_a", "annotator_b", "rho", "p_value", "n"])


@dataclass
class FleissResult:
    kappa: float
    n_items: int          # (topic, system, question) items with raters_per_item labels
    n_dropped: int        # items with another number of labels
    annotators: list[str] = field(default_factory=list)
    raters_per_item: int = 0

    def to_json(self) -> dict:
        return {"kappa": None if math.isnan(self.kappa) else self.kappa,
                "n_items": self.n_items, "n_dropped": self.n_dropped,
                "n_annotators": len(self.annotators), "annotators": self.annotators,
                "raters_per_item": self.raters_per_item}


def fleiss(labels: pd.DataFrame, kept: Mapping[str, Sequence[int]] | None = None) -> FleissResult:
    """Fleiss' kappa of the binary T1 labels over items (topic, system, question).

    Fleiss' kappa needs the same number of ratings per item, not the same raters. Items that
    every annotator labelled are used, as in the paper; when there is none (each item went to
    ``--overlap`` K of the annotators, ``cruxflow annotate``), the items with the most common
    number K >= 2 of labels are. The rest are counted in ``n_dropped``. With ``kept``, only the
    kept questions of each topic are items (the ones coverage uses); by default every labelled
    one.
    """
    _check_annotators(labels)
    frame = labels
    if kept is not None:
        keep = {(t, q) for t, qs in kept.items() for q in qs}
        frame = labels[[(t, q) in keep for t, q in zip(labels["topic_id"], labels["question"],
                                                       strict=True)]]
    annotators = sorted(frame["annotator"].unique())
    if len(annotators) < 2:
        raise DataError(f"Fleiss' kappa needs at least 2 annotators, got {len(annotators)} "
                        f"({', '.join(annotators) or 'none'})")
    wide = frame.pivot(index=["topic_id", "system", "question"], columns="annotator",
                       values="answerable")
    counts = wide.notna().sum(axis=1)
    shared = counts[counts >= 2]
    if (counts == len(annotators)).any():
        m = len(annotators)
    elif not shared.empty:
        freq = shared.value_counts()
        m = int(max(freq[freq == freq.max()].index))   # the most common count; ties: the larger
    else:
        raise DataError("no (topic, system, question) item was labelled by two annotators")
    rows = wide[counts == m]
    # each item's m labels, whoever gave them (the raters of an item need not be the same)
    matrix = np.array([row[row.notna()].to_numpy(dtype=int) for _, row in rows.iterrows()])
    # every label in one category: P_e = 1 and kappa is 0/0 (NaN here)
    kappa = nan_if_none(fleiss_kappa(matrix, n_categories=2))
    return FleissResult(kappa, len(rows), len(wide) - len(rows), annotators, m)


# --- T2: the judge's ratings against human ratings ----------------------------------------------

@dataclass
class JudgeAgreement:
    """The LLM judge scored against human T2 ratings (humans are the ground truth)."""

    table: pd.DataFrame       # annotator ((all) = pooled), class, precision, recall, f1, support
    confusion: pd.DataFrame   # pooled; rows: human class, columns: LLM class
    exact_agreement: float    # share of examples with the same 0-5 rating
    n_examples: int
    eta: int
    examples: pd.DataFrame    # one row per example: the human and the LLM rating


def judge_precision_recall(human_ratings: pd.DataFrame,
                           llm_ratings: Mapping[tuple[str, str], Sequence[int]],
                           eta: int = 3) -> JudgeAgreement:
    """Precision, recall and F1 per class of the LLM's binarized ratings (>= eta: answerable).

    Each human rating is one example: a (passage, question) pair rated by two annotators counts
    twice, once against each. ``llm_ratings`` maps (topic_id, passage_id) to one rating per
    question (``Dataset.ratings``); a pair or question it lacks is an error. A precision with no
    prediction of its class is nan.
    """
    _check_annotators(human_ratings)
    llm = []
    for _, row in human_ratings.iterrows():
        pair = (row["topic_id"], row["passage_id"])
        if pair not in llm_ratings:
            raise DataError(f"the LLM judge has no rating for topic {pair[0]!r} passage "
                            f"{pair[1]!r}", field="passage_id", **_where(human_ratings, row))
        ratings = llm_ratings[pair]
        if row["question"] >= len(ratings):
            raise DataError(f"question {row['question']} but the LLM rated {len(ratings)} "
                            f"questions of passage {pair[1]!r}", field="question",
                            **_where(human_ratings, row))
        llm.append(int(ratings[row["question"]]))
    examples = human_ratings[list(T2_KEY) + ["rating"]].rename(columns={"rating": "human"})
    examples = examples.assign(llm=llm).reset_index(drop=True)
    y_true = np.where(examples["human"] >= eta, ANSWERABLE, UNANSWERABLE)
    y_pred = np.where(examples["llm"] >= eta, ANSWERABLE, UNANSWERABLE)

    rows = []
    groups = [(ALL, np.ones(len(examples), dtype=bool))]
    groups += [(a, (examples["annotator"] == a).to_numpy())
               for a in sorted(examples["annotator"].unique())]
    for annotator, mask in groups:
        p, r, f, s = precision_recall_fscore_support(
            y_true[mask], y_pred[mask], labels=CLASSES, zero_division=np.nan)
        for i, cls in enumerate(CLASSES):
            rows.append({"annotator": annotator, "class": cls, "precision": float(p[i]),
                         "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])})
    cm = confusion_matrix(y_true, y_pred, labels=CLASSES)
    confusion = pd.DataFrame(cm, index=pd.Index([f"human {c}" for c in CLASSES], name="human"),
                             columns=[f"LLM {c}" for c in CLASSES])
    exact = float((examples["human"] == examples["llm"]).mean())
    return JudgeAgreement(pd.DataFrame(rows), confusion, exact, len(examples), eta, examples)


# --- Figure 4 -----------------------------------------------------------------------------------

_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def plot_agreement(human_cov: pd.DataFrame, llm_cov: pd.DataFrame, path,
                   systems: Sequence[str] | None = None):
    """Figure 4: one subplot per system; x the topics, LLM Cov(y) as a line, each annotator's
    coverage as markers, the annotators' mean as bars; rho per annotator in the legend.

    Drawn on a bare ``Figure`` (no pyplot state, works headless) and written atomically as PNG;
    returns the figure.
    """
    with extra(__name__, "plots"):
        from matplotlib.figure import Figure

    llm = _check_llm_cov(llm_cov)
    if systems is None:
        seen = list(dict.fromkeys(llm["system"]))
        systems = [s for s in seen if s in set(human_cov["system"])]
        systems += sorted(set(human_cov["system"]) - set(systems))
    systems = list(systems)
    if not systems:
        raise ValueError("no system to plot")
    topics = sorted(set(human_cov.loc[human_cov["system"].isin(systems), "topic"])
                    | set(llm.loc[llm["system"].isin(systems), "topic"]))
    annotators = sorted(human_cov["annotator"].unique())
    rhos = llm_vs_human(human_cov, llm_cov, per_system=True).set_index(["system", "annotator"])
    pooled = llm_vs_human(human_cov, llm_cov).set_index("annotator")
    mean = annotator_mean(human_cov)
    x = np.arange(len(topics))
    colors = [f"C{i + 1}" for i in range(len(annotators))]

    fig = Figure(figsize=(max(7.0, 0.55 * len(topics) + 4.5), 0.5 + 2.6 * len(systems)),
                 layout="constrained")
    axes = fig.subplots(len(systems), 1, sharex=True, squeeze=False)[:, 0]

    def values(frame, system, col):
        sel = frame[frame["system"] == system].set_index("topic")[col]
        return sel.reindex(topics).to_numpy(dtype=float)

    for ax, system in zip(axes, systems, strict=True):
        def rho_text(a, system=system):
            r = rhos["rho"].get((system, a), math.nan)
            return "ρ = n/a" if math.isnan(r) else f"ρ = {r:.2f}"

        ax.bar(x, values(mean, system, "Cov"), width=0.6, color="0.85", edgecolor="0.6",
               label=f"annotators' mean ({rho_text(MEAN)})", zorder=1)
        ax.plot(x, values(llm, system, "Cov_y"), color="C0", linewidth=2, marker=".",
                label="LLM judge", zorder=3)
        for i, a in enumerate(annotators):
            ha = human_cov[human_cov["annotator"] == a]
            # spread the annotators a little so equal values stay visible
            offset = (i - (len(annotators) - 1) / 2) * 0.12
            ax.scatter(x + offset, values(ha, system, "Cov"), marker=_MARKERS[i % len(_MARKERS)],
                       s=36, color=colors[i], edgecolor="black", linewidth=0.5,
                       label=f"{a} ({rho_text(a)})", zorder=4, clip_on=False)
        ax.set_title(system, loc="left", fontsize=10, fontweight="bold")
        ax.set_ylim(0, 1)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
        ax.grid(axis="y", color="0.9", zorder=0)
        ax.set_axisbelow(True)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
                  title="ρ vs. LLM (Spearman)", title_fontsize=8, alignment="left")
    axes[-1].set_xticks(x, topics, rotation=35, ha="right", fontsize=8)
    axes[-1].set_xlabel("topic")
    fig.supylabel("coverage (share of answerable sub-questions)", fontsize=10)
    pooled_txt = ", ".join(f"{a} {pooled['rho'].get(a, math.nan):.2f}"
                           for a in [*annotators, MEAN])
    n_reports = int(pooled["n"].get(MEAN, 0))
    fig.suptitle(f"Coverage of RAG reports: LLM judge vs. annotators\n"
                 f"Spearman ρ over all {n_reports} reports: {pooled_txt}", fontsize=10)
    with atomic_write(path, "wb") as out:
        fig.savefig(out, format="png", dpi=150)
    return fig


# --- the report ---------------------------------------------------------------------------------

@dataclass
class AgreementReport:
    """What a workflow script writes: named tables (TSV) and a JSON summary."""

    tables: dict[str, pd.DataFrame]
    summary: dict

    def write(self, directory) -> list[Path]:
        d = Path(directory)
        written = []
        for name, frame in self.tables.items():
            p = d / f"{name}.tsv"
            write_tsv(p, frame, index=not isinstance(frame.index, pd.RangeIndex),
                      float_format="%.4f")
            written.append(p)
        write_json(d / "summary.json", self.summary)
        return [*written, d / "summary.json"]


def agreement_report(labels: pd.DataFrame | None = None,
                     kept: Mapping[str, Sequence[int]] | None = None,
                     llm_cov: pd.DataFrame | None = None,
                     human_ratings: pd.DataFrame | None = None,
                     llm_ratings: Mapping[tuple[str, str], Sequence[int]] | None = None,
                     eta: int = 3) -> AgreementReport:
    """Bundle T1 (``labels`` with ``kept``, and ``llm_cov`` when the judge's Cov(y) is known)
    and/or T2 (``human_ratings`` with ``llm_ratings``) results: human coverage per report and
    annotator, Spearman rho between annotators and (with ``llm_cov``) against the judge,
    pooled and per system, Fleiss' kappa and the judge's precision/recall per class with its
    confusion matrix."""
    tables: dict[str, pd.DataFrame] = {}
    summary: dict = {"eta": eta}
    if labels is not None:
        if kept is None:
            raise ValueError("T1 labels need kept (the questions coverage counts, per topic)")
        cov = human_coverage(labels, kept)
        tables["human_coverage"] = cov
        pairs = annotator_spearman(cov)
        tables["annotator_spearman"] = pairs
        summary["t1"] = {
            "reports": int(cov[["topic", "system"]].drop_duplicates().shape[0]),
            "annotator_spearman": [{k: nan_to_none(v) for k, v in row.items()}
                                   for row in pairs.to_dict("records")],
        }
        if llm_cov is not None:
            rho = llm_vs_human(cov, llm_cov)
            tables["spearman"] = pd.concat([rho, llm_vs_human(cov, llm_cov, per_system=True)],
                                           ignore_index=True)
            summary["t1"]["spearman"] = {
                a: {"rho": nan_to_none(r), "p_value": nan_to_none(p), "n": int(n)}
                for a, r, p, n in rho[["annotator", "rho", "p_value", "n"]]
                .itertuples(index=False)}
        if labels["annotator"].nunique() >= 2:
            summary["t1"]["fleiss"] = fleiss(labels).to_json()
            summary["t1"]["fleiss_kept"] = fleiss(labels, kept).to_json()
    if human_ratings is not None:
        if llm_ratings is None:
            raise ValueError("T2 ratings need llm_ratings (the answerability matrix)")
        judge = judge_precision_recall(human_ratings, llm_ratings, eta)
        tables["judge_precision_recall"] = judge.table
        tables["judge_confusion"] = judge.confusion
        pooled = judge.table[judge.table["annotator"] == ALL]
        summary["t2"] = {
            "examples": judge.n_examples,
            "exact_agreement": judge.exact_agreement,
            "per_class": {c: {k: nan_to_none(v) for k, v in row.items()
                              if k not in ("annotator", "class")}
                          for c, row in pooled.set_index("class", drop=False)
                          .to_dict("index").items()},
            "confusion": {"labels": CLASSES, "rows_human_columns_llm":
                          judge.confusion.to_numpy().tolist()},
        }
    return AgreementReport(tables, summary)

"""Figure 5 of the paper and a companion scatter plot.

Figure 5 (Sec. 4.3) correlates evaluation metrics over *randomly sampled* retrieval contexts:
16 contexts per first stage (48 in all), each of 10 passages drawn from the first stage's top 50.
:func:`sample_contexts` draws them, the workflow scores each sample as a system (named with
:func:`sample_name`, e.g. ``bm25.s03``), :func:`tau_matrix` turns the per-query scores into the
metric-by-metric Kendall tau matrix and :func:`plot_tau_heatmap` draws it.
:func:`plot_intermediate_vs_final` plots Table 1's system means, Cov(Z) against Cov(y), per
dataset (the relation Table 1's last row summarises by tau).

matplotlib is imported inside the plotting functions (Agg backend), so sampling and the tau
matrix need only numpy, pandas and scipy.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cruxflow._extras import extra
from cruxflow.data.names import DIRECT, HUMAN, ORACLE, RANDOM, RANDOM_RELEVANT, REFERENCE_RUNS
from cruxflow.metrics.stats import nan_if_none, rank_correlation
from cruxflow.paper.labels import METRIC_LABELS, TAU_ROW

FIGURE5_METRICS = ("Cov", "R", "AP", "nDCG", "alpha_nDCG_published", "alpha_nDCG_crux", "Cov_y")


def sample_name(system: str, index: int) -> str:
    """The system name of one sampled context set: ``sample_name("bm25", 3) == "bm25.s03"``."""
    return f"{system}.s{index:02d}"


def _rng(seed: int, topic: str, index: int) -> np.random.Generator:
    # One stream per (seed, topic, sample): adding topics or samples never moves other draws.
    # crc32 is stable across processes, unlike hash() of a str.
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(topic.encode()),
                                                         index]))


def sample_contexts(run: Mapping[str, Sequence[str]], n_samples: int = 16, size: int = 10,
                    depth: int = 50, seed: int = 0) -> list[dict[str, list[str]]]:
    """Figure 5's protocol: per topic, ``n_samples`` contexts of ``size`` passages drawn
    uniformly without replacement from the run's top-``depth``, kept in their rank order.

    ``run`` maps a topic id to its doc ids in rank order. Returns one ``{topic: context}`` dict
    per sample. Each (topic, sample) has its own generator derived from ``seed``, the topic id
    (crc32) and the sample index, so the draws are reproducible and independent of which other
    topics (or how many samples) are drawn. A topic with fewer than ``size`` candidates in its
    top-``depth`` gets all of them (the same context in every sample); an empty one, ``[]``.
    """
    if n_samples < 0 or size < 1 or depth < 1 or seed < 0:
        raise ValueError("need n_samples >= 0, size >= 1, depth >= 1 and seed >= 0")
    samples: list[dict[str, list[str]]] = [{} for _ in range(n_samples)]
    for topic, docs in run.items():
        pool = list(docs)[:depth]
        for i in range(n_samples):
            if len(pool) <= size:
                samples[i][topic] = list(pool)
                continue
            picked = np.sort(_rng(seed, str(topic), i).choice(len(pool), size, replace=False))
            samples[i][topic] = [pool[j] for j in picked]
    return samples


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def tau_matrix(frame: pd.DataFrame,
               metrics: Sequence[str] = FIGURE5_METRICS) -> pd.DataFrame:
    """Kendall tau (scipy, tau-b) between every two metrics over the sampled context sets.

    ``frame`` is per query, one ``system`` per sampled context set (all of one dataset, eta and
    k). Each system's means over topics are the points correlated. Rows and columns carry the
    display labels (``Cov(Z)``, ..., ``Cov(y)``); ``attrs`` holds ``n_contexts`` and
    ``n_topics``.
    """
    for col in ("dataset", "eta", "k"):
        if col in frame and frame[col].nunique() > 1:
            raise ValueError(f"tau_matrix needs one {col}, got {sorted(frame[col].unique())}")
    missing = [m for m in metrics if m not in frame]
    if missing:
        raise ValueError(f"missing metric columns: {missing}")
    means = frame.groupby("system")[list(metrics)].mean().dropna()
    labels = [metric_label(m) for m in metrics]
    values = np.ones((len(metrics), len(metrics)))
    for i, a in enumerate(metrics):
        for j in range(i + 1, len(metrics)):
            tau = rank_correlation(means[a].tolist(), means[metrics[j]].tolist()).value
            values[i, j] = values[j, i] = nan_if_none(tau)
    matrix = pd.DataFrame(values, index=labels, columns=labels)
    matrix.attrs["n_contexts"] = len(means)
    matrix.attrs["n_topics"] = int(frame["topic"].nunique()) if "topic" in frame else 0
    return matrix


def _pyplot():
    with extra(__name__, "plots"):
        import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _tick(label: str) -> str:
    # The two alpha-nDCGs carry their computation in parentheses: on a line of its own, so the
    # long name fits beside the matrix.
    return label.replace("alpha-", "α-").replace(" (", "\n(")


def plot_tau_heatmap(matrix: pd.DataFrame, path: str | Path, title: str | None = None,
                     n_contexts: int | None = None) -> Path:
    """Annotated heatmap of a tau matrix (as Figure 5), saved as PNG; returns the path.

    Diverging colormap fixed to [-1, 1] so colours compare across figures; the title names the
    number of sampled contexts (``n_contexts`` or the matrix's ``attrs``).
    """
    plt = _pyplot()
    n = n_contexts if n_contexts is not None else matrix.attrs.get("n_contexts")
    title = title or "Kendall τ between metrics"
    if n is not None:
        title += f" ({n} sampled contexts)"
    size = 1.0 + 0.9 * len(matrix.columns)
    fig, ax = plt.subplots(figsize=(size + 1.4, size))
    image = ax.imshow(matrix.to_numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
    for (i, j), value in np.ndenumerate(matrix.to_numpy()):
        if np.isfinite(value):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=10,
                    color="white" if abs(value) > 0.6 else "black")
    ax.set_xticks(range(len(matrix.columns)), [_tick(c) for c in matrix.columns],
                  rotation=35, ha="right")
    ax.set_yticks(range(len(matrix.index)), [_tick(c) for c in matrix.index])
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=11)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("Kendall τ")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def _wide_means(table: pd.DataFrame, dataset: str) -> pd.DataFrame:
    rows = table[(table["dataset"] == dataset) & (table["system"] != TAU_ROW)]
    wide = rows.pivot_table(index="system", columns="metric", values="value", aggfunc="first",
                            dropna=False)
    info = rows.drop_duplicates("system").set_index("system")[["label", "kind", "row"]]
    return wide.join(info).sort_values("row")


_OFFSETS = [(dx * r, dy * r) for r in (5, 11, 18, 27, 38, 52, 68)
            for dx, dy in ((1, 0.3), (-1, 0.3), (1, -0.9), (-1, -0.9), (0, 1.3), (0, -1.6),
                           (1, 1.1), (-1, 1.1))]


def _place_labels(ax, xs, ys, labels, fontsize: float = 7) -> None:
    """Label points without overlaps where possible: for each label, the first of a ring of
    offsets (growing) whose box stays inside the axes and clear of points and placed labels;
    labels moved far from their point get a thin leader line. Call after the layout is final.
    """
    with extra(__name__, "plots"):
        from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72
    frame = ax.get_window_extent(renderer)
    points = ax.transData.transform(np.column_stack([xs, ys]))
    taken = [Bbox.from_bounds(px - 4, py - 4, 8, 8) for px, py in points]
    for (px, py), (x, y), label in zip(points, zip(xs, ys, strict=True), labels, strict=True):
        text = ax.annotate(label, (x, y), fontsize=fontsize, color="0.15",
                           textcoords="offset points", xytext=(0, 0))
        width, height = (v + 2 for v in text.get_window_extent(renderer).size)
        choice = None
        for dx, dy in _OFFSETS:
            left = px + dx * scale - (width if dx < 0 else width / 2 if dx == 0 else 0)
            bottom = py + dy * scale - (height / 2 if dy == 0 else height if dy < 0 else 0)
            box = Bbox.from_bounds(left, bottom, width, height)
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                      and box.y1 <= frame.y1)
            if inside and not any(box.overlaps(t) for t in taken):
                choice = (dx, dy, box)
                break
        if choice is None:  # crowded: the nearest right-hand spot, overlaps accepted
            dx, dy = _OFFSETS[0]
            box = Bbox.from_bounds(px + dx * scale, py + dy * scale, width, height)
        else:
            dx, dy, box = choice
        text.set_position((dx, dy))
        text.set_ha("right" if dx < 0 else "center" if dx == 0 else "left")
        text.set_va("top" if dy < 0 else "bottom")
        if np.hypot(dx, dy) > 12:
            ax.annotate("", (x, y), xytext=(dx, dy), textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5,
                                    "shrinkA": 0, "shrinkB": 3})
        taken.append(box)


def _off(limits, vx: float | None, vy: float) -> str:
    """A legend suffix for a reference drawn outside zoomed axes."""
    if limits is None:
        return ""
    inside = [lo <= v <= hi for v, (lo, hi) in zip((vx, vy), limits, strict=True)
              if v is not None]
    return "" if all(inside) else ", off the axes"


def plot_intermediate_vs_final(table_frame: pd.DataFrame, path: str | Path, *,
                               x: str = "Cov", y: str = "Cov_y",
                               datasets: Sequence[str] | None = None,
                               zoom: bool = False) -> Path:
    """Scatter of Table 1's system means, context metric ``x`` against final metric ``y``
    (x 100), one panel per dataset, saved as PNG; returns the path.

    ``table_frame`` is :func:`cruxflow.paper.tables.table1`'s frame. Pipelines are labelled points;
    the oracle context (#3) and random baselines are distinct markers; references that only
    have ``y`` (#1 direct prompting, #2 the human summary) are horizontal lines. The panel
    title gives tau over the pipelines (with its CI) from the table's last row. ``zoom=True``
    frames the pipelines and random baselines only (references off the axes keep their value
    in the legend), for when the references squeeze the pipelines into a corner.
    """
    plt = _pyplot()
    datasets = list(datasets or pd.unique(table_frame["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.6 * len(datasets), 6.2),
                             squeeze=False, dpi=150)
    placed = []
    for ax, ds in zip(axes[0], datasets, strict=True):
        means = _wide_means(table_frame, ds)
        for col in (x, y):
            if col not in means:
                means[col] = np.nan
        has_x, has_y = means[x].notna(), means[y].notna()
        pipes = means[(means["kind"] == "pipeline") & has_x & has_y]
        points = pipes[[x, y]].round(1).drop_duplicates()
        if len(points) < 2:
            # One point (or none) compares nothing: say so in the panel instead of a dot with
            # every pipeline's label on it.
            where = (f" at one point ({_tick(metric_label(x))} {points[x].iloc[0]:.1f}, "
                     f"{metric_label(y)} {points[y].iloc[0]:.1f})" if len(points) else "")
            ax.text(0.5, 0.5, f"{ds}: not drawn\n{len(pipes)} pipeline"
                    f"{'s' if len(pipes) != 1 else ''}{where}:\nnothing to compare",
                    ha="center", va="center", fontsize=12, transform=ax.transAxes)
            ax.set_axis_off()
            continue
        ax.scatter(pipes[x], pipes[y], s=26, color="tab:blue", zorder=3, label="pipelines")
        framed = [pipes[[x, y]]] + [means.loc[[b], [x, y]] for b in REFERENCE_RUNS
                                    if b in means.index and has_x[b] and has_y[b]]
        limits = None
        if zoom and len(pipes):
            box = pd.concat(framed)
            pads = [max((box[c].max() - box[c].min()) * 0.08, 0.5) for c in (x, y)]
            limits = [(box[c].min() - pad, box[c].max() + pad) for c, pad in zip((x, y), pads,
                                                                              strict=True)]
            ax.set_xlim(*limits[0])
            ax.set_ylim(*limits[1])

        styles = {ORACLE: ("*", "tab:red", 150), RANDOM: ("v", "0.45", 45),
                  RANDOM_RELEVANT: ("^", "0.45", 45)}
        for system, (marker, color, size) in styles.items():
            if system in means.index and has_x[system] and has_y[system]:
                r = means.loc[system]
                ax.scatter([r[x]], [r[y]], marker=marker, s=size, color=color, zorder=4,
                           label=f"{r['label']} ({r[x]:.1f}, {r[y]:.1f}{_off(limits, r[x], r[y])})")
        lines = {HUMAN: ("tab:green", "--"), DIRECT: ("tab:orange", ":")}
        for system, (color, style) in lines.items():
            if system in means.index and not has_x[system] and has_y[system]:
                r = means.loc[system]
                ax.axhline(r[y], color=color, linestyle=style, linewidth=1.5,
                           label=f"{r['label']} ({r[y]:.1f}{_off(limits, None, r[y])})")
        tau = table_frame[(table_frame["dataset"] == ds) & (table_frame["system"] == TAU_ROW)
                          & (table_frame["metric"] == x) & (table_frame["versus"] == y)]
        head = f"{ds}"
        if len(tau) and np.isfinite(tau["value"].iloc[0]):
            t = tau.iloc[0]
            head += f": Kendall τ = {t['value']:.3f}"
            if np.isfinite(t["low"]):
                head += f" [{t['low']:.2f}, {t['high']:.2f}]"
            head += f" over {int(t['n_systems'])} pipelines"
        ax.set_title(head, fontsize=11)
        ax.set_xlabel(f"{_tick(metric_label(x))} of the context (coverage x 100)"
                      if x == "Cov" else f"{_tick(metric_label(x))} (x 100)")
        ax.set_ylabel(f"{metric_label(y)} of the result (coverage x 100)"
                      if y == "Cov_y" else f"{metric_label(y)} (x 100)")
        ax.grid(True, color="0.9", zorder=0)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2,
                  frameon=False)
        placed.append((ax, pipes))
    fig.tight_layout()
    fig.canvas.draw()
    for ax, pipes in placed:
        _place_labels(ax, pipes[x].to_numpy(), pipes[y].to_numpy(), list(pipes["label"]))
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path

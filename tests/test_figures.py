"""Figure 5: sampled contexts, the metric tau matrix, and the two plots (PNG files)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_tables import frame

from cruxflow.paper import figures as F
from cruxflow.paper import tables as T


def run_of(n_docs: int, prefix: str) -> list[str]:
    return [f"{prefix}-d{i:03d}" for i in range(n_docs)]


RUN = {"t1": run_of(100, "t1"), "t2": run_of(100, "t2"), "t3": run_of(60, "t3")}


def test_sample_contexts_protocol():
    samples = F.sample_contexts(RUN, n_samples=16, size=10, depth=50, seed=13)
    assert len(samples) == 16
    for sample in samples:
        assert set(sample) == set(RUN)
        for topic, ctx in sample.items():
            ranks = [RUN[topic].index(d) for d in ctx]
            assert len(ctx) == 10 and len(set(ctx)) == 10
            assert max(ranks) < 50  # top-depth only
            assert ranks == sorted(ranks)  # original rank order kept
    # the draws differ between samples and reach beyond the top 10
    assert len({tuple(s["t1"]) for s in samples}) == 16
    assert max(RUN["t1"].index(d) for s in samples for d in s["t1"]) >= 40


def test_sample_contexts_deterministic_and_independent():
    a = F.sample_contexts(RUN, seed=13)
    assert a == F.sample_contexts(RUN, seed=13)
    assert a != F.sample_contexts(RUN, seed=14)
    # adding a topic, reordering topics or drawing more samples leaves the others' draws alone
    more = {"t0": run_of(80, "t0"), **dict(reversed(list(RUN.items())))}
    b = F.sample_contexts(more, n_samples=20, seed=13)
    for i in range(16):
        assert {t: b[i][t] for t in RUN} == a[i]
    # the same topic id gets the same draws whatever its neighbours
    alone = F.sample_contexts({"t2": RUN["t2"]}, seed=13)
    assert [s["t2"] for s in alone] == [s["t2"] for s in a]


def test_sample_contexts_short_runs():
    run = {"short": ["a", "b", "c", "d"], "empty": [], "mid": run_of(30, "m")}
    samples = F.sample_contexts(run, n_samples=3, size=10, depth=50, seed=0)
    assert all(s["short"] == ["a", "b", "c", "d"] for s in samples)
    assert all(s["empty"] == [] for s in samples)
    for s in samples:  # 30 candidates < depth: drawn from all 30
        assert len(s["mid"]) == 10 and set(s["mid"]) <= set(run["mid"])
    with pytest.raises(ValueError):
        F.sample_contexts(run, size=0)
    assert F.sample_name("bm25", 3) == "bm25.s03"


def tau_frame(n_topics=5):
    """Per-query scores of 3 x 6 sampled context sets with known metric relations."""
    rng = np.random.default_rng(3)
    recs = []
    for first in ("bm25", "dense", "splade"):
        for i in range(6):
            quality = rng.uniform(0.2, 0.8)
            for t in range(n_topics):
                cov = quality + rng.normal(0, 0.05)
                recs.append({"dataset": "D", "eta": 3, "k": "10",
                             "system": F.sample_name(first, i), "topic": f"t{t}", "Cov": cov,
                             "R": cov + rng.normal(0, 0.2), "AP": cov ** 2,
                             "nDCG": -cov, "alpha_nDCG_crux": cov + rng.normal(0, 0.1),
                             "alpha_nDCG_published": 2 * cov,
                             "Cov_y": 0.7 * cov + rng.normal(0, 0.05)})
    return pd.DataFrame.from_records(recs)


def test_tau_matrix():
    data = tau_frame()
    m = F.tau_matrix(data)
    labels = ["Cov(Z)", "Recall", "MAP", "nDCG", "alpha-nDCG (published computation)",
              "alpha-nDCG (Eq. 4)", "Cov(y)"]
    assert list(m.index) == labels and list(m.columns) == labels
    np.testing.assert_allclose(np.diag(m), 1.0)
    np.testing.assert_allclose(m.to_numpy(), m.to_numpy().T)
    assert m.attrs["n_contexts"] == 18 and m.attrs["n_topics"] == 5
    # MAP's per-query values are Cov^2, but the mean of squares is not the square of the
    # mean, so system-level tau need not be 1; nDCG = -Cov exactly: tau -1.
    assert m.loc["Cov(Z)", "nDCG"] == pytest.approx(-1.0)
    assert m.loc["Cov(Z)", "alpha-nDCG (published computation)"] == pytest.approx(1.0)
    means = data.groupby("system")[["R", "Cov_y"]].mean()
    assert m.loc["Recall", "Cov(y)"] == pytest.approx(
        stats.kendalltau(means.R, means.Cov_y).statistic)
    with pytest.raises(ValueError, match="one k"):
        F.tau_matrix(pd.concat([data, data.assign(k="20")]))


@pytest.fixture(scope="module")
def plt_available():
    pytest.importorskip("matplotlib")


def is_png(path):
    return path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_tau_heatmap(tmp_path, plt_available):
    path = F.plot_tau_heatmap(F.tau_matrix(tau_frame()), tmp_path / "fig5.png")
    assert is_png(path) and path.stat().st_size > 10_000


def test_plot_intermediate_vs_final(tmp_path, plt_available):
    table = T.table1(pd.concat([frame("D"), frame("E", scale=0.5)]), n_resamples=10)
    path = F.plot_intermediate_vs_final(table, tmp_path / "scatter.png")
    assert is_png(path) and path.stat().st_size > 10_000
    zoomed = F.plot_intermediate_vs_final(table, tmp_path / "zoom.png", datasets=["E"],
                                          zoom=True)
    assert is_png(zoomed)


def test_a_scatter_of_one_point_is_not_drawn(tmp_path, plt_available, monkeypatch):
    # every pipeline at the same (Cov(Z), Cov(y)): the panel says so instead of one dot with
    # all the labels on it
    from matplotlib.figure import Figure

    same = {s: (30, 20, 20, 50, 40, 30, 30, 20, 25)
            for s in ("bm25", "dense", "splade", "bm25+mmr")}
    table = T.table1(frame("D", pipelines=same), n_resamples=10, min_topics=3)
    saved = []
    real_savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **k: (saved.append(fig), real_savefig(fig, *a, **k)))
    assert is_png(F.plot_intermediate_vs_final(table, tmp_path / "scatter.png"))
    (ax,) = saved[0].axes
    assert [t.get_text() for t in ax.texts] == [
        "D: not drawn\n4 pipelines at one point (Cov(Z) 30.0, Cov(y) 20.0):\nnothing to compare"]
    assert not ax.collections and not ax.axison

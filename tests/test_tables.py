"""Tables 1-3 and the paired tests on a small per-query frame whose means are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cruxflow.metrics.policy import Policy
from cruxflow.paper import labels as L
from cruxflow.paper import significance as S
from cruxflow.paper import tables as T

TOPICS = ("t1", "t2", "t3")
SPREAD = (-0.01, 0.0, 0.01)  # per-topic offsets around each mean: the mean is the middle value
CONTEXT = ("Cov", "alpha_nDCG_crux", "Den", "R", "AP", "nDCG", "alpha_nDCG_published")
FINAL = ("Cov_y", "Den_y")

# Pipeline means (x 100) at eta 3, k oracle. Cov(Z) and Cov(y) rank the systems alike (tau 1);
# alpha-nDCG against Cov(y) has 3 concordant and 3 discordant pairs (tau 0); Den(Z) against
# Den(y) has one discordant pair, bm25 / bm25+mmr (tau 4/6); the published alpha-nDCG (ndeval)
# against Cov(y) has 2 concordant pairs (dense/bm25+mmr, splade/bm25+mmr) and 4 discordant ones
# (tau -2/6).
PIPELINES = {
    #            Cov alpha Cov_y Den Den_y R AP nDCG published
    "bm25":     (20, 30, 10, 40, 20, 40, 20, 30, 45),
    "dense":    (40, 10, 30, 60, 50, 20, 40, 10, 15),
    "splade":   (30, 20, 20, 50, 40, 30, 30, 20, 25),
    "bm25+mmr": (50, 40, 40, 30, 30, 10, 50, 40, 35),
}
# References and baselines with extreme values: included anywhere, they would change the taus
# and take the best/worst marks.
OTHERS = {
    "oracle":          (100, 90, 90, 100, 95, 100, 100, 100, 80),
    "random":          (0, 0, 95, 0, 99, 0, 0, 0, 0),
    "random-relevant": (99, 99, 0, 99, 0, 99, 99, 99, 99),
}
COLUMNS = ("Cov", "alpha_nDCG_crux", "Cov_y", "Den", "Den_y", "R", "AP", "nDCG",
           "alpha_nDCG_published")


@pytest.fixture(autouse=True)
def three_topics_are_enough(monkeypatch):
    """The frames here have 3 topics, to keep the hand computations short: taus are printed
    from 3 topics on (the tables' own threshold, 10, is tested by itself below)."""
    monkeypatch.setattr("cruxflow.paper.tables.common.MIN_TAU_TOPICS", 3)


def rows(dataset, eta, k, system, values):
    out = []
    for topic, d in zip(TOPICS, SPREAD, strict=True):
        rec = {"dataset": dataset, "eta": eta, "system": system, "k": k, "topic": topic}
        rec |= {c: (np.nan if v is None else v / 100 + d) for c, v in zip(COLUMNS, values,
                                                                           strict=True)}
        out.append(rec)
    return out


def frame(dataset="D", eta=3, k="oracle", scale=1.0, pipelines=None):
    recs = []
    for system, values in (pipelines or PIPELINES).items():
        recs += rows(dataset, eta, k, system, [v * scale for v in values])
    for system, values in OTHERS.items():
        recs += rows(dataset, eta, k, system, values)
    recs += rows(dataset, eta, k, "direct", (None, None, 5, None, None, None, None, None, None))
    recs += rows(dataset, eta, k, "human", (None, None, 95, None, 110, None, None, None, None))
    return pd.DataFrame.from_records(recs)


@pytest.fixture(scope="module")
def per_query():
    return frame()


@pytest.fixture(scope="module")
def t1(per_query):
    return T.table1(per_query, "D", n_resamples=30, min_topics=3)


def value(t1, system, metric, dataset="D"):
    row = t1[(t1.dataset == dataset) & (t1.system == system) & (t1.metric == metric)]
    assert len(row) == 1
    return row.iloc[0]


def test_display_names():
    assert L.display_name("bm25") == "BM25 (LR)"
    assert L.display_name("dense+miniLM") == "DR + miniLM"
    assert L.display_name("splade+rankzephyr") == "LSR + RankZephyr"
    assert L.display_name("bm25+rankfirst") == "LR + RankFirst"
    assert L.display_name("dense+setwise") == "DR + SetwiseFlanT5"
    assert L.display_name("bm25+monot5") == "LR + monoT5"
    assert L.display_name("bm25+MMR") == "LR + MMR"
    assert L.display_name("direct") == "(#1) Direct prompting"
    assert L.display_name("human") == "(#2) Oracle result y*"
    assert L.display_name("oracle") == "(#3) Oracle retrieval Z*"
    assert L.display_name("random-relevant") == "Random relevant"
    assert L.display_name("my_run") == "my_run"
    assert L.display_name("bm25+foo") == "LR + foo"
    assert L.display_name("dense", {"dense": "Contriever (DR)"}) == "Contriever (DR)"


def test_order_and_kinds():
    order = L.order_systems(["zz", "splade+mmr", "bm25+monot5", "dense", "bm25+mmr", "human",
                             "random", "oracle", "bm25", "direct", "random-relevant",
                             "bm25+foo", "splade+monot5"])
    assert order == ["direct", "human", "oracle", "random", "random-relevant", "bm25", "dense",
                     "bm25+mmr", "splade+mmr", "bm25+monot5", "splade+monot5", "bm25+foo", "zz"]
    assert [L.system_kind(s) for s in ("human", "random", "bm25+mmr", "zz")] == [
        "reference", "baseline", "pipeline", "pipeline"]


def test_table1_means_by_hand(t1):
    assert value(t1, "bm25", "Cov").value == pytest.approx(20.0)
    assert value(t1, "dense", "Den_y").value == pytest.approx(50.0)
    assert value(t1, "bm25+mmr", "alpha_nDCG_crux").value == pytest.approx(40.0)
    assert value(t1, "human", "Den_y").value == pytest.approx(110.0)
    assert value(t1, "direct", "Cov_y").value == pytest.approx(5.0)
    assert math.isnan(value(t1, "direct", "Cov").value)
    assert value(t1, "direct", "Cov").n_topics == 0 and value(t1, "bm25", "Cov").n_topics == 3
    systems = list(t1.drop_duplicates("system").sort_values("row").system)
    assert systems == ["direct", "human", "oracle", "random", "random-relevant", "bm25", "dense",
                       "splade", "bm25+mmr", L.TAU_ROW]


def test_table1_tau_row_over_pipelines_only(t1):
    means = {m: [PIPELINES[s][COLUMNS.index(m)] for s in PIPELINES] for m in COLUMNS}
    assert value(t1, L.TAU_ROW, "Cov").value == pytest.approx(1.0)
    assert value(t1, L.TAU_ROW, "alpha_nDCG_crux").value == pytest.approx(0.0)
    assert value(t1, L.TAU_ROW, "alpha_nDCG_published").value == pytest.approx(-2 / 6)
    assert value(t1, L.TAU_ROW, "alpha_nDCG_published").versus == "Cov_y"
    assert value(t1, L.TAU_ROW, "Den").value == pytest.approx(4 / 6)
    for m, versus in L.TABLE1_PAIRS.items():
        row = value(t1, L.TAU_ROW, m)
        assert row.versus == versus and row.n_systems == 4
        # the tau of the table's own (printed) system means
        table_means = [value(t1, s, m).value for s in PIPELINES]
        table_final = [value(t1, s, versus).value for s in PIPELINES]
        assert row.value == pytest.approx(stats.kendalltau(table_means, table_final).statistic)
        assert row.value == pytest.approx(stats.kendalltau(means[m], means[versus]).statistic)
        assert row.low <= row.value + 1e-9 and row.high >= row.value - 1e-9
    assert math.isnan(value(t1, L.TAU_ROW, "Cov_y").value)


def test_table1_best_worst_pipelines_only(t1):
    marks = t1[t1.marker != ""]
    got = {(r.metric, r.marker): r.system for r in marks.itertuples()}
    assert got == {("Cov", "best"): "bm25+mmr", ("Cov", "worst"): "bm25",
                   ("alpha_nDCG_crux", "best"): "bm25+mmr", ("alpha_nDCG_crux", "worst"): "dense",
                   ("alpha_nDCG_published", "best"): "bm25",
                   ("alpha_nDCG_published", "worst"): "dense",
                   ("Cov_y", "best"): "bm25+mmr", ("Cov_y", "worst"): "bm25",
                   ("Den", "best"): "dense", ("Den", "worst"): "bm25+mmr",
                   ("Den_y", "best"): "dense", ("Den_y", "worst"): "bm25"}


def lines_by_label(text):
    return {line.split("|")[1].strip(): line for line in text.splitlines()
            if line.startswith("| ")}


def test_table1_markdown(t1):
    md = T.table1_markdown(t1)
    lines = lines_by_label(md)
    cells = [c.strip() for c in lines["LR + MMR"].split("|")[2:-1]]
    assert cells == ["**50.0**", "35.0", "**40.0**", "**40.0**", "<u>30.0</u>", "30.0"]
    cells = [c.strip() for c in lines["Dense (DR)"].split("|")[2:-1]]
    assert cells == ["40.0", "<u>15.0</u>", "<u>10.0</u>", "30.0", "**60.0**", "**50.0**"]
    assert [c.strip() for c in lines[r"(#1) Direct prompting"].split("|")[2:-1]] == [
        "-", "-", "-", "5.0", "-", "-"]
    header = [c.strip() for c in md.splitlines()[0].split("|")[2:-1]]
    assert header == ["Cov(Z)", "alpha-nDCG (published computation)", "alpha-nDCG (Eq. 4)",
                      "Cov(y)", "Den(Z)", "Den(y)"]
    for label in ("Random", "Random relevant", r"(#3) Oracle retrieval Z\*"):
        assert "**" not in lines[label].replace(r"\*", "") and "<u>" not in lines[label]
    tau = [c.strip() for c in lines["Rank Corr. (Kendall tau)"].split("|")[2:-1]]
    assert tau == ["1.000", "-0.333", "0.000", "-", "0.667", "-"]
    assert "95% bootstrap CI over 3 topics" in md and "Kendall tau over 4 pipelines" in md


def test_table1_latex(t1):
    tex = T.table1_latex(t1, caption="Context and result.")
    assert tex.count(r"\toprule") == 1 and r"\bottomrule" in tex
    assert r"\multicolumn{6}{c}{D}" in tex and r"\caption{Context and result.}" in tex
    mmr = next(line for line in tex.splitlines() if line.startswith("LR + MMR"))
    assert mmr == (r"LR + MMR & \textbf{50.0} & 35.0 & \textbf{40.0} & \textbf{40.0} & "
                   r"\underline{30.0} & 30.0 \\")
    dense = next(line for line in tex.splitlines() if line.startswith("Dense (DR)"))
    assert r"\underline{10.0}" in dense and r"\textbf{60.0}" in dense
    assert r"(\#1) Direct prompting & - & - & - & 5.0 & - & - \\" in tex
    assert r"Rank Corr. (Kendall $\tau$) & 1.000 & -0.333 & 0.000 & - & 0.667 & - \\" in tex
    assert r"$\alpha$-nDCG (published computation) & $\alpha$-nDCG (Eq.~4)" in tex


def test_table1_several_datasets():
    both = pd.concat([frame("DUC"), frame("Multi_News", scale=0.5)], ignore_index=True)
    t1 = T.table1(both, n_resamples=0)
    assert value(t1, "bm25", "Cov", "Multi_News").value == pytest.approx(10.0)
    wide = T.table1_wide(t1)
    assert list(wide.columns.get_level_values(0).unique()) == ["DUC", "Multi_News"]
    assert wide.loc["LR + MMR", ("Multi_News", "Cov")] == pytest.approx(25.0)
    tex = T.table1_latex(t1)
    assert r"\multicolumn{6}{c}{DUC} & \multicolumn{6}{c}{Multi\_News}" in tex
    assert r"\cmidrule(lr){2-7} \cmidrule(lr){8-13}" in tex
    md = T.table1_markdown(t1)
    assert "Cov(Z) [Multi_News]" in md
    assert math.isnan(value(t1, L.TAU_ROW, "Cov", "DUC").low)  # no resamples, no CI
    csv = T.to_csv(t1)
    assert csv.splitlines()[0].split(",") == T.TABLE1_COLUMNS


def test_table2_mean_sd_and_tau():
    data = pd.concat([frame(eta=3), frame(eta=5, scale=0.8)], ignore_index=True)
    t2 = T.table2(data, n_resamples=20)
    assert list(t2.eta) == [3, 5]
    for eta, scale in ((3, 1.0), (5, 0.8)):
        row = t2[t2.eta == eta].iloc[0]
        cov_y = np.array([v[2] for v in PIPELINES.values()]) * scale
        cov = np.array([v[0] for v in PIPELINES.values()]) * scale
        assert row.Cov_y_mean == pytest.approx(np.mean(cov_y))
        assert row.Cov_y_sd == pytest.approx(np.std(cov_y, ddof=1))
        assert row.Cov_mean == pytest.approx(np.mean(cov))
        assert row.Cov_sd == pytest.approx(np.std(cov, ddof=1))
        assert row.tau == pytest.approx(1.0) and row.n_systems == 4
    assert t2.iloc[0].Cov_y_sd == pytest.approx(math.sqrt(500 / 3))  # 25 +- 15, 5: by hand
    md = T.table2_markdown(t2)
    assert "| eta = 3 | 25.0 (± 12.9) | 35.0 (± 12.9) | 1.000 |" in md
    assert "ddof=1" in md
    # the paper's Table 2 swaps Cov(y) and Cov(Z) in its eta = 3 row: said beside the table
    assert "are swapped" in md and "Table 1's DUC pipelines' Cov(Z) and Cov(y)" in md
    tex = T.table2_latex(t2, caption="Thresholds.")
    assert r"$\eta = 5$ & 20.0 ($\pm$ 10.3) & 28.0 ($\pm$ 10.3) & 1.000 \\" in tex
    assert "are swapped" in tex


# Paper Table 1, DUC: Cov(Z) and Cov(y) of its 21 pipelines (LR, DR, LSR; then + MMR, miniLM,
# monoT5, RankZephyr, RankFirst, SetwiseFlanT5, each over LR, DR, LSR).
PAPER_DUC_COV = [44.4, 52.1, 49.0, 45.6, 42.7, 44.2, 49.0, 49.3, 49.4, 50.7, 53.2, 52.8, 51.5,
                 51.1, 50.4, 52.0, 53.8, 53.6, 49.6, 56.6, 51.9]
PAPER_DUC_COV_Y = [35.8, 41.7, 41.0, 36.4, 33.8, 36.5, 38.4, 39.9, 39.2, 37.9, 40.7, 41.1, 40.6,
                   40.6, 41.2, 43.9, 44.6, 44.3, 42.5, 44.4, 43.3]


def test_table2_from_the_papers_table1_shows_its_eta3_row_swapped():
    # The paper's Table 2 prints Cov(y) 50.1 (3.5), Cov(Z) 40.4 (3): from Table 1's DUC
    # pipelines our Table 2 gives Cov(y) 40.4 (3.0) and Cov(Z) 50.1 (3.5) -- the same numbers
    # under the other labels (docs/paper-parity.md, point 8).
    recs = [{"dataset": "DUC", "eta": 3, "k": "oracle", "system": f"p{i}", "topic": "t",
             "Cov": cz / 100, "Cov_y": cy / 100}
            for i, (cz, cy) in enumerate(zip(PAPER_DUC_COV, PAPER_DUC_COV_Y, strict=True))]
    row = T.table2(pd.DataFrame.from_records(recs), n_resamples=0).iloc[0]
    assert row.n_systems == 21
    assert (round(row.Cov_mean, 1), round(row.Cov_sd, 1)) == (50.1, 3.5)
    assert (round(row.Cov_y_mean, 1), round(row.Cov_y_sd, 1)) == (40.4, 3.0)


def test_table3_rows_and_taus():
    swapped = {s: (v[2], v[1], v[0], *v[3:]) for s, v in PIPELINES.items()}  # Cov <-> Cov_y
    data = pd.concat([frame(k="20", pipelines=swapped), frame(k="oracle"), frame(k="10")],
                     ignore_index=True)
    t3 = T.table3(data, n_resamples=20)
    assert list(t3.k) == ["oracle", "10", "20"]
    means = pd.DataFrame(PIPELINES, index=COLUMNS).T
    oracle = t3[t3.k == "oracle"].iloc[0]
    for m, versus in L.TABLE3_PAIRS.items():
        expected = stats.kendalltau(means[m], means[versus]).statistic
        assert oracle[m] == pytest.approx(expected)
        assert oracle[f"{m}_n"] == 4
    assert oracle.R == pytest.approx(-1.0) and oracle.AP == pytest.approx(1.0)
    assert oracle.nDCG == pytest.approx(0.0) and oracle.Den == pytest.approx(4 / 6)
    row20 = t3[t3.k == "20"].iloc[0]
    assert row20.Cov == pytest.approx(1.0)  # swapping both columns keeps the pairs aligned
    # alpha-nDCG against the (now) Cov(Z) values as the final coverage: 20,40,30,50 -> 1 pair
    assert row20.alpha_nDCG_crux == pytest.approx(stats.kendalltau(means.alpha_nDCG_crux,
                                                              means.Cov).statistic)
    md = T.table3_markdown(t3)
    assert r"| D | \|Z\*\| | 1.000 | -0.333 | 0.000 | -1.000 | 1.000 | 0.000 | 0.667 |" in md
    assert "|  | 10 |" in md
    tex = T.table3_latex(t3)
    assert r"D & $|Z^*|$ & 1.000 & -0.333 & 0.000 & -1.000 & 1.000 & 0.000 & 0.667 \\" in tex
    assert "Cov_low" in T.to_csv(t3).splitlines()[0]


def paired_frame(n_topics):
    topics = [f"q{i:02d}" for i in range(n_topics)]
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.6, n_topics)
    recs = []
    for system, vals in (("a", base + 0.1), ("b", base), ("c", base.copy()),
                         ("d", base + rng.normal(0, 0.05, n_topics))):
        recs += [{"dataset": "D", "eta": 3, "k": "oracle", "system": system, "topic": t,
                  "Cov_y": v} for t, v in zip(topics, vals, strict=True)]
    recs.append({"dataset": "D", "eta": 3, "k": "oracle", "system": "e", "topic": "q00",
                 "Cov_y": np.nan})
    return pd.DataFrame.from_records(recs)


def test_paired_tests():
    out = S.paired_tests(paired_frame(12), "Cov_y", policy=Policy(seed=1))
    assert len(out) == 6  # a, b, c, d: "e" has no value at all
    ab = out[(out.system_a == "a") & (out.system_b == "b")].iloc[0]
    assert ab.n_topics == 12 and ab["diff"] == pytest.approx(0.1)
    assert ab.mean_a - ab.mean_b == pytest.approx(0.1)
    # the policy's test: 2^12 sign flips <= 9,999 resamples: exact; only all-plus and
    # all-minus are as extreme
    assert (ab.test, ab.correction) == ("randomization", "holm")
    assert ab.p == pytest.approx(2 / 2**12)
    bc = out[(out.system_a == "b") & (out.system_b == "c")].iloc[0]
    assert bc.p == 1.0 and bc["diff"] == 0
    from statsmodels.stats.multitest import multipletests

    np.testing.assert_allclose(out.p_adjusted, multipletests(out.p, method="holm")[1])
    assert list(out.columns[:3]) == ["dataset", "eta", "k"]
    again = S.paired_tests(paired_frame(12), "Cov_y", policy=Policy(seed=1))
    pd.testing.assert_frame_equal(out, again)
    # the tests of earlier versions are options: Wilcoxon with Benjamini-Hochberg
    old = S.paired_tests(paired_frame(12), "Cov_y", policy=Policy(test="wilcoxon",
                                                                  correction="bh"))
    wide = paired_frame(12).pivot_table(index="topic", columns="system", values="Cov_y")
    for r in old.itertuples():
        d = wide[r.system_a] - wide[r.system_b]
        assert r.p == (1.0 if (d == 0).all() else stats.wilcoxon(d).pvalue)
    np.testing.assert_allclose(old.p_adjusted, stats.false_discovery_control(old.p))
    assert set(old.test) == {"wilcoxon"} and set(old.correction) == {"bh"}


def test_paired_tests_sampled_and_markdown():
    out = S.paired_tests(paired_frame(30), "Cov_y", systems=["b", "a"],
                         policy=Policy(resamples=999))
    assert len(out) == 1 and out.iloc[0].system_a == "b"
    assert out.iloc[0]["diff"] == pytest.approx(-0.1)
    # no random sign pattern is as extreme: (0 + 1) / (999 + 1) per side, doubled
    assert out.iloc[0].p == pytest.approx(2 / 1000)
    md = S.paired_tests_markdown(out)
    assert "| D | 3 | oracle | Cov(y) | b | a | 30 |" in md
    assert "| -10.0 | 0.002 | 0.002 | * |" in md
    assert md.splitlines()[0].split("|")[-3].strip() == "p (Holm)"
    # the note names the test and the correction
    assert ("two-sided paired randomization test (sign flips) of the mean difference (999 "
            "resamples, exact when 2^topics <= 999; seed 0); p-values Holm-adjusted over the "
            "pairs of each group and metric") in md
    # two metrics in one call: one family each, and the same p-values as alone
    both = S.paired_tests(paired_frame(30).assign(Cov=lambda f: f.Cov_y * 2),
                          ["Cov_y", "Cov"], systems=["b", "a"], policy=Policy(resamples=999))
    assert list(both.metric) == ["Cov_y", "Cov"] and list(both.p) == [out.p[0]] * 2


def test_too_few_topics_withhold_the_taus_and_say_so(monkeypatch):
    # 3 topics under a threshold of 4: no tau anywhere, a note instead of an empty tau row,
    # Table 3 replaced by the note
    monkeypatch.setattr("cruxflow.paper.tables.common.MIN_TAU_TOPICS", 4)
    per_query = frame()
    t1 = T.table1(per_query, n_resamples=10)
    taus = t1[t1["system"] == L.TAU_ROW]
    assert taus["value"].isna().all() and set(taus["n_topics"]) <= {0, 3}
    md = T.table1_markdown(t1)
    assert "Rank Corr." not in md
    assert "D: Kendall tau not shown: 3 topics, fewer than the 4" in md
    # every metric column of the table has a value somewhere: none is dropped
    assert md.splitlines()[0].count("|") == len(L.TABLE1_METRICS) + 2
    t3 = T.table3(per_query, n_resamples=10)
    assert T.table3_markdown(t3).startswith("- D: Kendall tau not shown: 3 topics")
    t2 = T.table2(per_query, n_resamples=10)
    md2 = T.table2_markdown(t2)
    assert "D: Kendall tau not shown" in md2 and "tau" not in md2.splitlines()[0]


def test_a_column_without_any_value_is_left_out():
    per_query = frame().drop(columns=["Den_y"])
    md = T.table1_markdown(T.table1(per_query, n_resamples=10))
    assert "Den(y)" not in md and "Den(Z)" in md


def test_significance_says_when_nothing_separates_the_systems():
    # two systems, two topics, equal means: p = 1 after adjustment, a warning above the rows
    recs = [{"dataset": "D", "eta": 3, "k": "oracle", "system": s, "topic": t, "Cov_y": v}
            for s, vals in (("bm25", (0.2, 0.4)), ("dense", (0.4, 0.2)))
            for t, v in zip(("a", "b"), vals, strict=True)]
    md = S.paired_tests_markdown(S.paired_tests(pd.DataFrame(recs)))
    first = md.splitlines()[0]
    assert first.startswith("No pair of systems differs significantly: 1 pairs over at most "
                            "2 topics, smallest adjusted p 1.000")
    header = [c.strip() for c in md.splitlines()[2].strip("|").split("|")]
    assert all(header) and header[-1] == "p adj. < 0.05"

"""LLM judge vs. human annotators (paper Sec. 4.3, App. A.2) against hand-computed values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from cruxflow.data.errors import DataError
from cruxflow.paper.agreement import (
    MEAN,
    agreement_report,
    fleiss,
    human_coverage,
    judge_precision_recall,
    llm_vs_human,
    plot_agreement,
    read_passage_ratings,
    read_report_labels,
)


def write_lines(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def t1(topic="t0", system="bm25", annotator="A", question=0, answerable=True):
    return {"topic_id": topic, "system": system, "annotator": annotator, "question": question,
            "answerable": answerable}


def t2(topic="t0", passage="t0:0#0", question=0, annotator="A", rating=3):
    return {"topic_id": topic, "passage_id": passage, "question": question,
            "annotator": annotator, "rating": rating}


# --- reading and validation -------------------------------------------------------------------

def test_read_report_labels_keeps_fields_and_lines(tmp_path):
    rows = [t1(question=0), "", t1(question=1, answerable=False)]
    path = write_lines(tmp_path / "t1.jsonl", rows)
    labels = read_report_labels(path)
    assert list(labels.columns) == ["topic_id", "system", "annotator", "question", "answerable",
                                    "line"]
    assert labels["line"].tolist() == [1, 3]
    assert labels["answerable"].tolist() == [True, False]
    assert labels.attrs["path"] == str(path)


def test_read_passage_ratings_accepts_integral_floats(tmp_path):
    path = write_lines(tmp_path / "t2.jsonl", [t2(rating=4.0), {**t2(question=1), "note": "x"}])
    ratings = read_passage_ratings(path)
    assert ratings["rating"].tolist() == [4, 3]


T1_BAD = [
    ("{not json", "line 2", None, "invalid JSON"),
    ({k: v for k, v in t1().items() if k != "annotator"}, "line 2", "annotator", "missing"),
    ({**t1(), "question": "1"}, "line 2", "question", "expected an integer"),
    ({**t1(), "question": 1.5}, "line 2", "question", "expected an integer"),
    ({**t1(), "question": -1}, "line 2", "question", "negative"),
    ({**t1(), "answerable": 1}, "line 2", "answerable", "expected true or false"),
    ({**t1(), "topic_id": 7}, "line 2", "topic_id", "expected a string"),
    ({**t1(), "topic_id": "t 0"}, "line 2", "topic_id", "whitespace"),
    ({**t1(), "system": " "}, "line 2", "system", "empty"),
    (t1(question=3), "line 2", "question", "duplicate label"),
]


@pytest.mark.parametrize(("bad", "line", "field", "reason"), T1_BAD)
def test_report_labels_errors_name_file_line_and_field(tmp_path, bad, line, field, reason):
    path = write_lines(tmp_path / "t1.jsonl", [t1(question=3), bad])
    with pytest.raises(DataError) as exc:
        read_report_labels(path)
    msg = str(exc.value)
    assert str(path) in msg and line in msg and reason in msg
    if field is not None:
        assert exc.value.field == field and f"field {field!r}" in msg


T2_BAD = [
    ({**t2(), "rating": 6}, "rating", "outside 0..5"),
    ({**t2(), "rating": -1}, "rating", "outside 0..5"),
    ({**t2(), "rating": 2.5}, "rating", "expected an integer"),
    ({**t2(), "rating": True}, "rating", "expected an integer"),
    ({**t2(), "rating": None}, "rating", "missing"),
    ({k: v for k, v in t2().items() if k != "passage_id"}, "passage_id", "missing"),
    (t2(question=1), "question", "duplicate label"),
]


@pytest.mark.parametrize(("bad", "field", "reason"), T2_BAD)
def test_passage_ratings_errors_name_file_line_and_field(tmp_path, bad, field, reason):
    path = write_lines(tmp_path / "t2.jsonl", [t2(question=1), t2(question=2), bad])
    with pytest.raises(DataError) as exc:
        read_passage_ratings(path)
    msg = str(exc.value)
    assert str(path) in msg and "line 3" in msg and f"field {field!r}" in msg and reason in msg


def test_duplicate_error_points_at_first_occurrence(tmp_path):
    path = write_lines(tmp_path / "t2.jsonl", [t2(), t2(annotator="B"), t2()])
    with pytest.raises(DataError, match="first at line 1"):
        read_passage_ratings(path)


def test_empty_file_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no labels"):
        read_report_labels(write_lines(tmp_path / "t1.jsonl", [""]))


# --- T1: human coverage -------------------------------------------------------------------------

def labels_frame(rows):
    return pd.DataFrame(rows, columns=["topic_id", "system", "annotator", "question", "answerable"])


def test_human_coverage_over_kept_questions_is_two_thirds(tmp_path):
    # kept = {0, 2, 3}; q1 is answerable for A but not kept, so it is ignored: A answers
    # q0 and q3 of the three kept questions -> 2/3; B answers q2 only -> 1/3.
    rows = [t1(question=q, answerable=a) for q, a in [(0, True), (1, True), (2, False), (3, True)]]
    rows += [t1(annotator="B", question=q, answerable=q == 2) for q in range(4)]
    labels = read_report_labels(write_lines(tmp_path / "t1.jsonl", rows))
    cov = human_coverage(labels, {"t0": [0, 2, 3]})
    got = cov.set_index("annotator")
    assert got.loc["A", "Cov"] == pytest.approx(2 / 3)
    assert got.loc["B", "Cov"] == pytest.approx(1 / 3)
    assert got.loc["A", "n_answerable"] == 2 and got.loc["A", "n_kept"] == 3
    assert set(cov.columns) >= {"topic", "system", "annotator", "Cov"}


def test_human_coverage_missing_kept_question_names_it(tmp_path):
    rows = [t1(question=0), t1(question=1), t1(system="oracle", question=0)]
    labels = read_report_labels(write_lines(tmp_path / "t1.jsonl", rows))
    with pytest.raises(DataError) as exc:
        human_coverage(labels, {"t0": [0, 2]})
    msg = str(exc.value)
    assert "'t0'" in msg and "'bm25'" in msg and "'A'" in msg and "[2]" in msg
    assert str(tmp_path) in msg


def test_human_coverage_unknown_topic_and_empty_kept():
    labels = labels_frame([("t0", "bm25", "A", 0, True), ("t1", "bm25", "A", 0, True)])
    with pytest.raises(DataError, match="'t1' has no judgments"):
        human_coverage(labels, {"t0": [0]})
    cov = human_coverage(labels, {"t0": [0], "t1": []})
    assert cov.set_index("topic").loc["t0", "Cov"] == 1.0
    assert math.isnan(cov.set_index("topic").loc["t1", "Cov"])


def test_reserved_annotator_name_is_rejected():
    with pytest.raises(DataError, match="reserved"):
        human_coverage(labels_frame([("t0", "bm25", MEAN, 0, True)]), {"t0": [0]})


# --- T1: Spearman -------------------------------------------------------------------------------

def coverage_frames():
    topics = [f"t{i}" for i in range(5)]
    llm = [0.2, 0.4, 0.5, 0.9, 0.7, 1.0, 0.8, 0.6, 0.9, 1.0]
    a = [0.3, 0.4, 0.6, 0.8, 0.7, 1.0, 0.9, 0.5, 0.9, 0.9]
    b = [0.1, 0.5, 0.4, 1.0, 0.6, 0.8, 0.8, 0.7, 1.0, 1.0]
    keys = [(t, s) for s in ("bm25", "oracle") for t in topics]
    llm_cov = pd.DataFrame([{"topic": t, "system": s, "Cov_y": v}
                            for (t, s), v in zip(keys, llm, strict=True)])
    human = pd.DataFrame([{"topic": t, "system": s, "annotator": name, "Cov": v}
                          for name, vals in (("A", a), ("B", b))
                          for (t, s), v in zip(keys, vals, strict=True)])
    return human, llm_cov, np.array(llm), np.array(a), np.array(b)


def test_llm_vs_human_equals_scipy_spearman():
    human, llm_cov, llm, a, b = coverage_frames()
    got = llm_vs_human(human, llm_cov).set_index("annotator")
    for name, vals in (("A", a), ("B", b), (MEAN, (a + b) / 2)):
        ref = stats.spearmanr(llm, vals)
        assert got.loc[name, "rho"] == pytest.approx(ref.statistic)
        assert got.loc[name, "p_value"] == pytest.approx(ref.pvalue)
        assert got.loc[name, "n"] == 10
    assert list(got.index) == ["A", "B", MEAN]
    assert set(got["system"]) == {"(all)"}


def test_llm_vs_human_per_system_and_only_shared_reports():
    human, llm_cov, llm, a, _ = coverage_frames()
    # the LLM lacks one bm25 report: that pair drops out of bm25's correlation
    got = llm_vs_human(human, llm_cov.iloc[1:], per_system=True).set_index(["system", "annotator"])
    assert got.loc[("bm25", "A"), "n"] == 4
    assert got.loc[("bm25", "A"), "rho"] == pytest.approx(stats.spearmanr(llm[1:5], a[1:5])[0])
    assert got.loc[("oracle", "A"), "rho"] == pytest.approx(stats.spearmanr(llm[5:], a[5:])[0])


def test_llm_vs_human_constant_or_short_gives_nan():
    human = pd.DataFrame({"topic": ["t0", "t1"], "system": "bm25", "annotator": "A",
                          "Cov": [1.0, 1.0]})
    llm_cov = pd.DataFrame({"topic": ["t0", "t1"], "system": "bm25", "Cov_y": [0.5, 1.0]})
    assert math.isnan(llm_vs_human(human, llm_cov)["rho"].iloc[0])
    assert math.isnan(llm_vs_human(human.iloc[:1], llm_cov)["rho"].iloc[0])
    with pytest.raises(ValueError, match="Cov_y"):
        llm_vs_human(human, llm_cov.rename(columns={"Cov_y": "Cov"}))


# --- T1: Fleiss' kappa --------------------------------------------------------------------------

def test_fleiss_kappa_by_hand_and_statsmodels():
    # Three annotators, four items (answerable counts 3, 2, 0, 1 of 3):
    #   P_i = (sum_j n_ij^2 - n) / (n (n - 1)) = 1, 1/3, 1, 1/3 -> P_bar = 2/3
    #   p_answerable = 6/12, p_unanswerable = 6/12 -> P_e = 0.25 + 0.25 = 0.5
    #   kappa = (P_bar - P_e) / (1 - P_e) = (1/6) / (1/2) = 1/3
    votes = {"A": [1, 1, 0, 0], "B": [1, 1, 0, 1], "C": [1, 0, 0, 0]}
    rows = [("t0", "bm25", a, q, bool(v)) for a, vs in votes.items() for q, v in enumerate(vs)]
    rows.append(("t0", "bm25", "A", 9, True))    # only A labelled q9: dropped
    res = fleiss(labels_frame(rows))
    assert res.kappa == pytest.approx(1 / 3)
    assert (res.n_items, res.n_dropped, res.annotators) == (4, 1, ["A", "B", "C"])
    matrix = np.array([votes[a] for a in "ABC"]).T
    assert res.kappa == pytest.approx(fleiss_kappa(aggregate_raters(matrix)[0]))
    # restricted to kept questions {0, 2}: both unanimous items -> P_bar = 1, kappa = 1
    assert fleiss(labels_frame(rows), {"t0": [0, 2]}).kappa == pytest.approx(1.0)


def test_fleiss_over_items_of_overlap_two_among_three_annotators():
    # cruxflow annotate --overlap 2 with A, B, C: q0 (A, B), q1 (B, C), q2 (C, A), q3 (A, B);
    # labels (1,1), (1,0), (0,0), (0,1); q4 has one label only (dropped).
    #   P_i = 1, 0, 1, 0 -> P_bar = 1/2; p_1 = 4/8, p_0 = 4/8 -> P_e = 1/2 -> kappa = 0
    # flipping q1's C to 1: P_i = 1, 1, 1, 0 -> P_bar = 3/4; p_1 = 5/8 -> P_e = 25/64 + 9/64
    # = 34/64 -> kappa = (3/4 - 34/64) / (30/64) = (14/64) / (30/64) = 7/15
    pairs = [("A", "B", 1, 1), ("B", "C", 1, 0), ("C", "A", 0, 0), ("A", "B", 0, 1)]
    rows = [("t0", "bm25", a, q, bool(x)) for q, (a, b, x, y) in enumerate(pairs)
            for a, x in ((a, x), (b, y))]
    rows.append(("t0", "bm25", "C", 4, True))
    res = fleiss(labels_frame(rows))
    assert res.kappa == pytest.approx(0.0, abs=1e-12)
    assert (res.n_items, res.n_dropped, res.raters_per_item) == (4, 1, 2)
    rows = [r if (r[2], r[3]) != ("C", 1) else ("t0", "bm25", "C", 1, True) for r in rows]
    assert fleiss(labels_frame(rows)).kappa == pytest.approx(7 / 15)


def test_fleiss_needs_two_annotators():
    with pytest.raises(ValueError, match="at least 2 annotators"):
        fleiss(labels_frame([("t0", "bm25", "A", 0, True), ("t0", "bm25", "A", 1, False)]))


# --- T2: the judge against human ratings --------------------------------------------------------

def ratings_frame(rows):
    return pd.DataFrame(rows, columns=["topic_id", "passage_id", "question", "annotator",
                                       "rating"])


def test_judge_precision_recall_by_hand():
    # human: 5 4 3 1 0 2 0 -> A A A U U U U     (eta = 3)
    # LLM:   4 1 1 0 3 2 0 -> A U U U A U U
    # answerable:   TP 1 (#0), predicted A {#0, #4} -> P = 1/2; true A {#0,#1,#2} -> R = 1/3
    #               F1 = 2 * (1/2 * 1/3) / (1/2 + 1/3) = 0.4
    # unanswerable: predicted U {#1,#2,#3,#5,#6}, correct {#3,#5,#6} -> P = 3/5;
    #               true U {#3,#4,#5,#6} -> R = 3/4; F1 = 2 * 0.45 / 1.35 = 2/3
    # exact 0-5 agreement: #5 (2, 2) and #6 (0, 0) -> 2/7
    human = [5, 4, 3, 1, 0, 2, 0]
    llm_r = [4, 1, 1, 0, 3, 2, 0]
    frame = ratings_frame([("t0", f"t0:0#{i}", 0, "A", h) for i, h in enumerate(human)])
    llm = {("t0", f"t0:0#{i}"): [r] for i, r in enumerate(llm_r)}
    res = judge_precision_recall(frame, llm, eta=3)
    table = res.table[res.table["annotator"] == "(all)"].set_index("class")
    assert table.loc["answerable", ["precision", "recall", "f1"]].tolist() == \
        pytest.approx([1 / 2, 1 / 3, 0.4])
    assert table.loc["unanswerable", ["precision", "recall", "f1"]].tolist() == \
        pytest.approx([3 / 5, 3 / 4, 2 / 3])
    assert table["support"].tolist() == [3, 4]
    assert res.confusion.to_numpy().tolist() == [[1, 2], [1, 3]]
    assert res.exact_agreement == pytest.approx(2 / 7)
    assert res.n_examples == 7


def test_judge_each_annotator_rating_is_one_example():
    # one (passage, question) pair, LLM says 4; A rated 5 (agrees), B rated 1 (disagrees)
    frame = ratings_frame([("t0", "t0:0#0", 1, "A", 5), ("t0", "t0:0#0", 1, "B", 1)])
    res = judge_precision_recall(frame, {("t0", "t0:0#0"): [0, 4]})
    pooled = res.table[res.table["annotator"] == "(all)"].set_index("class")
    assert pooled["support"].tolist() == [1, 1]
    assert pooled.loc["answerable", "precision"] == pytest.approx(1 / 2)
    assert pooled.loc["answerable", "recall"] == 1.0
    assert math.isnan(pooled.loc["unanswerable", "precision"])   # never predicted
    per_b = res.table[res.table["annotator"] == "B"].set_index("class")
    assert per_b.loc["unanswerable", "recall"] == 0.0


def test_judge_missing_llm_rating_names_the_pair(tmp_path):
    path = write_lines(tmp_path / "t2.jsonl", [t2(), t2(passage="t0:1#5")])
    frame = read_passage_ratings(path)
    with pytest.raises(DataError) as exc:
        judge_precision_recall(frame, {("t0", "t0:0#0"): [3]})
    msg = str(exc.value)
    assert "'t0:1#5'" in msg and "line 2" in msg and str(path) in msg
    with pytest.raises(DataError, match="LLM rated 0 questions"):
        judge_precision_recall(frame, {("t0", "t0:0#0"): [3], ("t0", "t0:1#5"): []})


# --- Figure 4 and the report --------------------------------------------------------------------

def test_plot_writes_png_with_one_axes_per_system(tmp_path):
    human, llm_cov, *_ = coverage_frames()
    fig = plot_agreement(human, llm_cov, tmp_path / "fig" / "agreement.png")
    png = (tmp_path / "fig" / "agreement.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert len(fig.axes) == 2
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["bm25", "oracle"]
    assert fig.axes[0].get_ylim() == (0, 1)
    fig = plot_agreement(human, llm_cov, tmp_path / "one.png", systems=["oracle"])
    assert len(fig.axes) == 1


def test_agreement_report_bundles_and_writes(tmp_path):
    rows = [t1(topic=t, system=s, annotator=a, question=q, answerable=(q + i + len(a)) % 2 == 0)
            for i, t in enumerate(["t0", "t1", "t2"]) for s in ("bm25", "oracle")
            for a in ("A", "BB") for q in range(3)]
    labels = labels_frame([tuple(r.values()) for r in rows])
    kept = {"t0": [0, 1, 2], "t1": [0, 2], "t2": [1, 2]}
    llm_cov = pd.DataFrame({"topic": ["t0", "t1", "t2"] * 2,
                            "system": ["bm25"] * 3 + ["oracle"] * 3,
                            "Cov_y": [0.3, 0.5, 0.5, 1.0, 0.5, 0.5]})
    ratings = ratings_frame([("t0", "t0:0#0", 0, "A", 4), ("t0", "t0:0#0", 1, "A", 0)])
    report = agreement_report(labels, kept, llm_cov, ratings, {("t0", "t0:0#0"): [5, 1]})
    assert set(report.tables) == {"human_coverage", "annotator_spearman", "spearman",
                                  "judge_precision_recall", "judge_confusion"}
    assert report.summary["t1"]["reports"] == 6
    assert report.summary["t1"]["fleiss"]["n_items"] == 18
    assert report.summary["t2"]["exact_agreement"] == 0.0
    assert report.summary["t2"]["per_class"]["answerable"]["recall"] == 1.0
    written = report.write(tmp_path / "out")
    assert {p.name for p in written} >= {"spearman.tsv", "summary.json"}
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["eta"] == 3
    tsv = pd.read_csv(tmp_path / "out" / "judge_confusion.tsv", sep="\t", index_col=0)
    assert tsv.to_numpy().tolist() == [[1, 0], [0, 1]]
    with pytest.raises(ValueError, match="need kept"):
        agreement_report(labels)

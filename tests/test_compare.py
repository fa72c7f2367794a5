"""``cruxflow.compare``: runs scored by ``cruxflow.evaluate``, every pair tested, a report."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import cruxflow
from cruxflow.data.errors import DataError
from cruxflow.metrics.policy import POLICY

PAPER = Path(__file__).parent / "data" / "crux" / "paper"
N = 16      # topics: 2^16 sign patterns > 9,999, so the test is sampled


def case():
    """Per topic two passages: 'hit' answers both questions, 'miss' none. good ranks the hit
    first, bad the miss, coin alternates."""
    judgments = {f"t{i:02d}": {f"t{i:02d}:hit": [5, 4], f"t{i:02d}:miss": [0, 1]}
                 for i in range(N)}
    def run(first):
        return {t: {f"{t}:{first(i)}": 2.0, f"{t}:{'miss' if first(i) == 'hit' else 'hit'}": 1.0}
                for i, t in enumerate(judgments)}
    runs = {"good": run(lambda i: "hit"), "bad": run(lambda i: "miss"),
            "coin": run(lambda i: "hit" if i % 2 else "miss")}
    return runs, judgments


def test_report_by_hand():
    runs, judgments = case()
    report = cruxflow.compare(runs, judgments, measures=["Cov@1", "nDCG@1"])
    assert report.policy == POLICY and report.runs == ["good", "bad", "coin"]
    # the scores are cruxflow.evaluate's, run by run
    for name, run in runs.items():
        alone = cruxflow.evaluate(run, judgments, measures=["Cov@1", "nDCG@1"])
        pd.testing.assert_frame_equal(report.per_topic.loc[name], alone)
        assert list(report.means.loc[name]) == pytest.approx(list(alone.mean()))
    assert report.means.loc["good", "Cov@1"] == 1 and report.means.loc["bad", "Cov@1"] == 0
    assert report.means.loc["coin", "Cov@1"] == 0.5
    pd.testing.assert_frame_equal(report.to_dataframe(), report.means)
    tests = report.tests.set_index(["measure", "a", "b"])
    # good - bad = 1 on all 16 topics: no random sign pattern reaches the observed mean, so
    # p = 2 * (0 + 1) / (9,999 + 1); Holm over the 3 pairs of Cov@1 triples the smallest
    good_bad = tests.loc[("Cov@1", "good", "bad")]
    assert good_bad.topics == N and good_bad["diff"] == 1.0
    assert good_bad.p == pytest.approx(2 / 10000)
    assert good_bad.p_adjusted == pytest.approx(3 * 2 / 10000)
    assert (good_bad.test, good_bad.correction) == ("randomization", "holm")
    # the marks: good beats bad and coin, coin beats bad, on both measures
    assert report.beats()[("good", "Cov@1")] == ["bad", "coin"]
    assert report.beats()[("coin", "Cov@1")] == ["bad"]
    assert report.beats()[("bad", "Cov@1")] == []
    md = report.to_markdown()
    assert "| (a) good | 1.0000 bc | 1.0000 bc |" in md
    assert "| (c) coin | 0.5000 b |" in md
    assert POLICY.describe() in md and "| measure | a | b | topics | a - b | p | p (Holm) |" in md
    tex = report.to_latex()
    assert r"(a) good & 1.0000$^{bc}$ & 1.0000$^{bc}$ \\" in tex and r"\caption{" in tex


def test_options_and_inputs(tmp_path):
    runs, judgments = case()
    report = cruxflow.compare(runs, judgments, measures=["Cov@1"], test="t-test",
                              correction="bonferroni")
    assert (report.policy.test, report.policy.correction) == ("t-test", "bonferroni")
    assert "paired t-test" in report.to_markdown()
    # a list of run files: named by their file names without the last suffix; two of one
    # name refused in one line naming both (never numbered, never one kept)
    paths = [PAPER / "bm25.run", PAPER / "oracle.run", tmp_path / "bm25.run"]
    paths[2].write_text((PAPER / "bm25.run").read_text())
    with pytest.raises(DataError) as info:
        cruxflow.compare(paths, PAPER / "testb_judgements.jsonl", measures=["Cov@10"])
    assert str(info.value) == (f"two runs named 'bm25': {paths[0]} and {paths[2]} (name them "
                               "apart: NAME=PATH)")
    paths[2] = paths[2].rename(tmp_path / "bm25.r1.run")
    report = cruxflow.compare(paths, PAPER / "testb_judgements.jsonl", measures=["Cov@10"])
    assert report.runs == ["bm25", "oracle", "bm25.r1"]
    same = report.tests[(report.tests.a == "bm25") & (report.tests.b == "bm25.r1")].iloc[0]
    assert same.p == 1.0 and same["diff"] == 0.0
    with pytest.raises(ValueError, match="two runs or more"):
        cruxflow.compare([PAPER / "bm25.run"], PAPER / "testb_judgements.jsonl")
    with pytest.raises(TypeError, match="name other runs in a mapping"):
        cruxflow.compare([runs["good"], runs["bad"]], judgments)
    with pytest.raises(ValueError, match="unknown test 'ttest'"):
        cruxflow.compare(runs, judgments, test="ttest")


def test_judgments_in_every_form_evaluate_takes(tmp_path):
    # the release folder (its judge/ and its qrels of eta 3), Judgments(...), a ratings file:
    # read once by compare, each run's frame that of cruxflow.evaluate on the same judgments,
    # crux-eval's printed names included
    duc = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
    bm25 = duc / "run" / "bm25.run"
    lines = [x.split() for x in bm25.read_text().splitlines()]
    flipped = tmp_path / "flipped.run"      # each topic's ranking reversed
    flipped.write_text("".join(
        f"{q} Q0 {p} {r} {-float(s)} flip\n" for q, _, p, r, s, _ in lines))
    measures = ["Cov@2", "alpha_nDCG@2",
                "alpha_nDCG(cut='rank',topics='run')@10",
                "P(cut='rank',qrels='diversity',topics='run')@10"]
    forms = {"release folder": duc,
             "Judgments": cruxflow.Judgments(ratings=duc / "judge",
                                             qrels=duc / "qrels" / "div_qrels-tau3.txt"),
             "ratings": duc / "judge"}
    for form, judgments in forms.items():
        with warnings.catch_warnings():     # bm25 ties at a cutoff: evaluate says so
            warnings.simplefilter("ignore")
            report = cruxflow.compare([bm25, flipped], judgments, measures=measures)
            alone = {name: cruxflow.evaluate(run, judgments, measures=measures)
                     for name, run in (("bm25", bm25), ("flipped", flipped))}
        assert report.runs == ["bm25", "flipped"] and report.measures == measures, form
        for name, frame in alone.items():
            pd.testing.assert_frame_equal(report.per_topic.loc[name], frame, check_names=False)
        assert len(report.tests) == len(measures), form
    # the release folder reads the diversity qrels file; the ratings alone derive them: the
    # two agree on this excerpt, as the file was written from these ratings at eta 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert report.means.loc["bm25", "alpha_nDCG@2"] == pytest.approx(
            cruxflow.evaluate(bm25, duc, ["alpha_nDCG@2"])["alpha_nDCG@2"].mean())

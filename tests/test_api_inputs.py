"""What cruxflow.evaluate accepts (cruxflow.metrics.inputs) and what it refuses.

One run and one set of relevance qrels given in every accepted form must give one frame;
bad input gets one DataError naming the record and the field. ranx is not a dependency: its
Run and Qrels are duck-typed (anything with ``to_dict()``), tested here with a stand-in.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import cruxflow
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.metrics.inputs import Judgments

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
RUN = DUC / "run" / "bm25.run"
LINES = [x.split() for x in RUN.read_text().splitlines()]
QRELS = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1}}
SCORES = {"q1": {"a": 1.0, "x": 3.0, "c": 2.0}, "q2": {"y": 1.0, "d": 0.5}}


class RanxLike:
    """What cruxflow reads of a ranx Run or Qrels: ``to_dict()``."""

    def __init__(self, data):
        self.data = data

    def to_dict(self):
        return self.data


def evaluate(run, judgments, measures, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cruxflow.evaluate(run, judgments, measures, **kw)


def test_a_run_in_every_form_gives_one_frame():
    as_dict = {}
    for q, _, d, _, s, _ in LINES:
        as_dict.setdefault(q, {})[d] = float(s)
    rows = [(q, d, float(s)) for q, _, d, _, s, _ in LINES]
    forms = [RUN, str(RUN), as_dict, RanxLike(as_dict),
             [ir_measures.ScoredDoc(q, d, s) for q, d, s in rows],
             pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]),
             pd.DataFrame(rows, columns=["qid", "docno", "score"])]
    measures = ["Cov@oracle", "alpha_nDCG_crux@2", "nDCG@2", "alpha_nDCG@10", "R(rel=2)@1"]
    frames = [evaluate(f, DUC / "judge", measures) for f in forms]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0], check_exact=True)


def test_relevance_qrels_in_every_form_give_ir_measures_numbers():
    rows = [(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()]
    forms = [QRELS, RanxLike(QRELS), [ir_measures.Qrel(q, d, g) for q, d, g in rows],
             pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]),
             pd.DataFrame(rows, columns=["qid", "docno", "label"]),
             cruxflow.Judgments(relevance=QRELS)]
    measures = ["nDCG@2", "R@2", "AP@3", "P(rel=2)@2"]
    frames = [evaluate(SCORES, f, measures) for f in forms]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0], check_exact=True)
    # the independent route: ir_measures (pytrec_eval) on the same qrels and run
    want = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 2, ir_measures.R @ 2, ir_measures.AP @ 3,
         ir_measures.P(rel=2) @ 2], QRELS, SCORES)
    got = frames[0].mean()
    assert got["nDCG@2"] == pytest.approx(want[ir_measures.nDCG @ 2], abs=1e-12)
    assert got["R@2"] == pytest.approx(want[ir_measures.R @ 2], abs=1e-12)
    assert got["AP@3"] == pytest.approx(want[ir_measures.AP @ 3], abs=1e-12)
    assert got["P(rel=2)@2"] == pytest.approx(want[ir_measures.P(rel=2) @ 2], abs=1e-12)
    # by hand: q1 ranks x (unjudged), c (1), a (2): nDCG@2 = (1 / log2 3) / (2 + 1 / log2 3)
    assert frames[0].loc["q1", "nDCG@2"] == pytest.approx(
        (1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # CRUX's measures need ratings: refused in one line
    with pytest.raises(DataError, match=r"Cov@2 reads ratings: the judgments .* have none"):
        evaluate(SCORES, QRELS, ["Cov@2"])


def test_the_release_folder_and_the_explicit_form_agree():
    ratings = read_ratings(DUC / "judge").by_topic()
    explicit = cruxflow.Judgments(ratings=ratings, qrels=DUC / "qrels" / "div_qrels-tau3.txt")
    measures = ["alpha_nDCG(cut='rank',order='ndeval',topics='run')@10",
                "P(cut='rank',qrels='diversity',topics='run')@10", "Cov@10"]
    pd.testing.assert_frame_equal(evaluate(RUN, DUC, measures),
                                  evaluate(RUN, explicit, measures), check_exact=True)


@pytest.mark.parametrize("run,match", [
    ({"q1": {"a": float("nan")}}, r"query q1 passage a: field 'score': score nan"),
    ({"q1": {"a": "high"}}, r"query q1 passage a: field 'score': score 'high' is not a number"),
    (pd.DataFrame([("q1", "a", 1.0), ("q1", "a", 2.0)], columns=["qid", "docno", "score"]),
     r"row 2: field 'doc_id': passage 'a' appears twice for query 'q1'"),
    (pd.DataFrame([("q1", "a", 1.0)], columns=["query", "doc", "score"]),
     r"needs the columns query_id, doc_id, score or qid, docno, score"),
    ({"q9": {"a": 1.0}}, r"query q9: field 'query_id': unknown topic 'q9'"),
])
def test_bad_runs_are_refused_naming_record_and_field(run, match):
    with pytest.raises(DataError, match=match):
        cruxflow.evaluate(run, QRELS, ["nDCG@2"])


@pytest.mark.parametrize("judgments,match", [
    ({"t": {"p": [3, "x"]}}, r"query t passage p: field 'ratings': a rating is an integer"),
    ({"t": {"p": [3, 7]}}, r"a rating is an integer from -1 to 5, got 7"),
    ({"t": {"p": [3, 1], "q": [2]}}, r"query t: field 'ratings': rating lists of lengths"),
    ({"t": {"p": 1.5}}, r"query t passage p: field 'relevance': relevance 1.5"),
])
def test_bad_judgments_are_refused_naming_record_and_field(judgments, match):
    with pytest.raises(DataError, match=match):
        cruxflow.evaluate({"t": {"p": 1.0}}, judgments, ["nDCG@1"])


@pytest.mark.parametrize("measures", [["Cov@10"], ["alpha_nDCG@10", "Den@10"],
                                      ["alpha_nDCG_crux@oracle", "nDCG@5"]])
def test_judgments_without_a_topic_are_one_clean_error(measures):
    """No topic at all (empty ratings, an empty run): the error that says so, for the
    measures on arrays of no subtopic (alpha-nDCG, ndeval's sum over subtopics) and on token
    counts of no passage (Den) as for the rest; it was an IndexError."""
    with pytest.raises(DataError, match=r"no topic to score"):
        cruxflow.evaluate({}, Judgments(ratings={}), measures, texts={})


def test_topics_run_leaves_unknown_run_topics_out():
    """A run topic the judgments lack is an error for the default topics, left out for
    topics='run' (the CRUX authors' habit)."""
    run = {**SCORES, "q9": {"z": 1.0}}
    frame = evaluate(run, QRELS, ["nDCG(topics='run')@2"])
    assert list(frame.index) == ["q1", "q2"]


# --- issue 54: the API as able as the command line ---------------------------------------------

def _cli_json(capsys, *argv) -> dict:
    import json

    from cruxflow.cli import main

    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_release_folder_brings_its_texts_as_the_cli_finds_them(capsys, tmp_path):
    """cruxflow.evaluate(run, release_folder, ["Den@10"]) equals cruxflow evaluate's Den@10:
    the corpus is the one beside the subset (crux-mds-corpus); texts= a passages file gives
    the same; what the command line says beside its table the frame says too."""
    from cruxflow.data.ingest.crux_common import read_collection

    run = tmp_path / "bm25.run"   # the released run and a passage outside the collection
    run.write_text(RUN.read_text() + "duc04-test-1 Q0 duc04-test-1:9#9 99 0.001 x\n")
    cli = _cli_json(capsys, "evaluate", "--crux-root", DUC, "--run", run, "--k", "10",
                    "oracle", "--json")
    den = {row["k"]: row["Den"] for row in cli["aggregate"]}
    with pytest.warns(UserWarning) as said:
        frame = cruxflow.evaluate(run, DUC, ["Den@10", "Den@oracle"])
    assert frame.mean().tolist() == [den["10"], den["oracle"]]
    assert 0 < den["10"] < 1
    corpus = DUC.parent / "crux-mds-corpus"
    assert frame.attrs["texts"] == str(corpus.resolve())
    for key in ("missing_in_run", "topics_not_evaluated", "run_lines_outside_collection"):
        assert frame.attrs[key] == cli[key], key
    assert frame.attrs["run_lines_outside_collection"] == 1
    messages = [str(w.message) for w in said]
    assert "1 run lines rank a passage outside the collection: scored as unjudged " \
           "(rated 0); --strict-collection refuses them" in messages
    assert f"1 topics without an answerable question, not evaluated: " \
           f"{cli['topics_not_evaluated'][0]}" in messages
    # texts= a passage collection's path, or its mapping: the same values
    for texts in (corpus, read_collection(corpus)[0]):
        again = cruxflow.evaluate(run, DUC / "judge", ["Den@10", "Den@oracle"], texts=texts)
        assert again.mean().tolist() == frame.mean().tolist()


def test_the_default_measures_are_the_papers_and_den_needs_texts():
    """By default the paper's Table 1 measures at k = |Z*|; Den where texts are found, else
    left out with a warning saying why."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with_texts = cruxflow.evaluate(RUN, DUC)
    assert list(with_texts.columns) == ["Cov@oracle", "alpha_nDCG_crux@oracle", "Den@oracle"]
    with pytest.warns(UserWarning, match="Den@oracle left out of the default measures: no "
                                         "passage texts"):
        without = cruxflow.evaluate(RUN, DUC / "judge")
    assert list(without.columns) == ["Cov@oracle", "alpha_nDCG_crux@oracle"]
    assert without.attrs["left_out"].keys() == {"Den@oracle"}
    assert without.equals(with_texts[without.columns])
    with pytest.raises(ValueError, match=r"Den@10 needs the passages' texts \(texts="):
        cruxflow.evaluate(RUN, DUC / "judge", ["Den@10"])


def test_graded_qrels_reads_every_folder_evaluate_reads(tmp_path, capsys):
    """A release subset folder and a prepared dataset folder, as the judge folder gives."""
    from cruxflow.cli import main

    want = cruxflow.graded_qrels(DUC / "judge")
    assert len(want) > 0
    pd.testing.assert_frame_equal(cruxflow.graded_qrels(DUC), want)
    assert main(["ingest", "--format", "crux", "--input", str(DUC), "--output",
                 str(tmp_path / "ds")]) == 0
    capsys.readouterr()
    got = cruxflow.graded_qrels(tmp_path / "ds")
    key = ["query_id", "doc_id", "iteration"]
    assert sorted(map(tuple, got[key + ["relevance"]].values.tolist())) == \
        sorted(map(tuple, want[key + ["relevance"]].values.tolist()))


def test_a_trec_qrels_path_is_relevance_qrels_and_a_diversity_file_is_ratings(tmp_path):
    """A plain path to TREC qrels (one value in the second column, a passage once a topic)
    gives ir_measures' numbers; it was read as graded diversity qrels (one sub-question a
    topic, its grades as ratings) and gave other numbers in silence. A diversity qrels file,
    whose subtopic column varies, is still read as ratings."""
    trec = tmp_path / "qrels.txt"
    trec.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items()
                            for d, g in docs.items()))
    run = [ir_measures.ScoredDoc(q, d, s) for q, docs in SCORES.items() for d, s in docs.items()]
    want = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP],
                                      list(ir_measures.read_trec_qrels(str(trec))), run)
    got = evaluate(SCORES, trec, ["nDCG@10", "AP"]).mean()
    assert got["nDCG@10"] == pytest.approx(want[ir_measures.nDCG @ 10], abs=1e-12)
    assert got["AP"] == pytest.approx(want[ir_measures.AP], abs=1e-12)
    diversity = tmp_path / "div.txt"          # two sub-questions: ratings, as before
    diversity.write_text("q1 0 a 4\nq1 1 a 0\nq1 0 c 0\nq1 1 c 3\n")
    assert Judgments(ratings=diversity).ratings == {"q1": {"a": [4, 0], "c": [0, 3]}}
    cov = evaluate({"q1": {"a": 2.0, "c": 1.0}}, diversity, ["Cov@1", "Cov@2"])
    assert cov.loc["q1"].tolist() == [0.5, 1.0]

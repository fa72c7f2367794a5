"""The registry's measures as ir_measures measures (cruxflow.metrics.measures): CRUX's values
by hand, one number through ir_measures and through cruxflow.evaluate, and cruxflow's
alpha_nDCG (ties by passage id descending, the judged topics) kept apart from ir_measures'
own."""

from __future__ import annotations

import math
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import cruxflow
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.data.io import RunRow
from cruxflow.metrics.inputs import graded_qrels
from cruxflow.metrics.judgments import derive
from cruxflow.metrics.measures import (
    MEASURES,
    Cov,
    Den,
    alpha_nDCG_crux,
    with_tokens,
)
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import regex_token_count

# RUN ties two passages on purpose: the tie warning is tested in tests/test_doors.py
pytestmark = pytest.mark.filterwarnings("ignore:.*tied scores decide")

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
L3, L4 = math.log2(3), math.log2(4)

# Graded diversity qrels: topic t, sub-questions 0-2, ratings 0-5 (and -1).
#   t:0#0 [5, 0, 1]   t:0#1 [3, 4, -1]   t:0#2 [0, 2, 0]     -> answerable: q0, q1
# topic u: every rating < 3 (no answerable sub-question).
QRELS = pd.DataFrame(
    [("t", str(q), p, r) for p, rs in (("t:0#0", [5, 0, 1]), ("t:0#1", [3, 4, -1]),
                                       ("t:0#2", [0, 2, 0])) for q, r in enumerate(rs)]
    + [("u", "0", "u:0#0", 2)],
    columns=["query_id", "iteration", "doc_id", "relevance"])
# the run: t:0#2 and t:0#0 tie at 2.0; ties go by id, descending (as trec_eval): t:0#2 first.
RUN = pd.DataFrame([("t", "t:0#0", 2.0), ("t", "t:0#2", 2.0), ("t", "t:0#1", 1.0),
                    ("t", "x:9#9", 0.5), ("u", "u:0#0", 1.0)],
                   columns=["query_id", "doc_id", "score"])


def per_topic(measure, qrels=QRELS, run=RUN) -> dict[str, float]:
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def test_cov_over_answerable_questions():
    # Cov@1: t:0#2 answers nothing -> 0; Cov@2: + t:0#0 answers q0 -> 1/2; Cov@3: + t:0#1 -> 2/2
    assert per_topic(Cov @ 1)["t"] == 0.0
    assert per_topic(Cov @ 2)["t"] == 0.5
    assert per_topic(Cov @ 3)["t"] == 1.0
    # every sub-question counts with questions=all: q0 of 3
    assert math.isclose(per_topic(Cov(questions="all") @ 2)["t"], 1 / 3)
    # eta 4: only q0 (t:0#0's 5) and q1 (t:0#1's 4) are answerable, t:0#1 answers only q1
    assert per_topic(Cov(rel=4) @ 3)["t"] == 1.0
    assert per_topic(Cov(rel=5) @ 3)["t"] == 1.0   # q0 alone answerable, t:0#0 answers it
    # u has no answerable sub-question: not one of the topics of the mean (topics='judged');
    # with topics='all' every topic of the qrels counts, u's undefined value as 0
    assert math.isnan(per_topic(Cov @ 3)["u"])
    assert per_topic(Cov(topics="all") @ 3) == {"t": 1.0, "u": 0.0}
    assert ir_measures.calc_aggregate([Cov @ 2], QRELS, RUN)[Cov @ 2] == 0.5


def test_alpha_ndcg_ideal_over_the_oracle_context():
    # Z* = P** = [t:0#1] (answers q0 and q1 at once): ideal DCG = 2 / log2 2 = 2.
    # The run t:0#2 (nothing), t:0#0 (q0: gain 1), t:0#1 (q0 seen once: 0.5, q1: 1) ->
    # (1 / log2 3 + 1.5 / log2 4) / 2.
    want = (1 / L3 + 1.5 / L4) / 2
    assert math.isclose(per_topic(alpha_nDCG_crux @ 3)["t"], want)
    assert math.isclose(per_topic(alpha_nDCG_crux(alpha=0.0) @ 3)["t"], (1 / L3 + 2 / L4) / 2)


def test_our_alpha_ndcg_is_ir_measures_own_at_eta():
    ours = MEASURES["alpha_nDCG"]
    # the bare name is ir_measures' number (ndeval's ties, every qrels topic); on graded
    # qrels it reads the diversity qrels at eta, so it prints namespaced and never passes for
    # ir_measures' own, and cruxflow's parser reads the name back
    assert str(ours @ 10) == "cruxflow.alpha_nDCG@10" != str(ir_measures.alpha_nDCG @ 10)
    assert str(cruxflow.parse_measure(str(ours @ 10))) == "alpha_nDCG@10"
    assert ir_measures.parse_measure("alpha_nDCG@10") == ir_measures.alpha_nDCG @ 10
    got = per_topic(ours @ 10)
    assert math.isnan(got["u"])   # u: nothing answerable at eta 3, no diversity qrels line
    # ndeval's order breaks the tie at 2.0 by id ascending: t:0#0 (q0: 1), t:0#2 (nothing),
    # t:0#1 (q0: 0.5, q1: 1) -> 1 + 1.5 / log2 4; ndeval's ideal t:0#1 (2), t:0#0 (0.5)
    # -> 2 + 0.5 / log2 3
    assert math.isclose(got["t"], (1 + 1.5 / L4) / (2 + 0.5 / L3))
    # the tables' alpha_nDCG (our tie policy, the topics with an answerable question): by id
    # descending, t:0#2 (nothing), t:0#0 (q0: 1), t:0#1 (q0: 0.5, q1: 1)
    table = per_topic(ours(order="score", topics="judged") @ 10)
    assert math.isnan(table["u"])
    assert math.isclose(table["t"], (1 / L3 + 1.5 / L4) / (2 + 0.5 / L3))
    # = ir_measures' own given the run in that order (untied scores)
    binary = pd.DataFrame([("t", "0", "t:0#0", 1), ("t", "0", "t:0#1", 1),
                           ("t", "1", "t:0#1", 1)],
                          columns=["query_id", "iteration", "doc_id", "relevance"])
    ordered = pd.DataFrame([("t", "t:0#2", 3.0), ("t", "t:0#0", 2.0), ("t", "t:0#1", 1.0)],
                           columns=["query_id", "doc_id", "score"])
    assert table["t"] == per_topic(ir_measures.alpha_nDCG @ 10, binary, ordered)["t"]
    # and the bare name = ir_measures' own on the diversity qrels at eta 3, the run as given
    assert got["t"] == per_topic(ir_measures.alpha_nDCG @ 10, binary)["t"]


def test_one_number_through_ir_measures_and_cruxflow_evaluate():
    """docs/evaluate.md's example: the release stand-in's bm25 run, through ir_measures'
    calc_aggregate and through cruxflow.evaluate (test-0 ties at 1.5, test-2 has no
    answerable question, test-3 is not in the run)."""
    ratings = read_ratings(DUC / "judge").by_topic()
    run = ir_measures.read_trec_run(str(DUC / "run" / "bm25.run"))
    asked = [Cov @ 10, alpha_nDCG_crux @ 10, MEASURES["alpha_nDCG"] @ 10]
    via_ir = ir_measures.calc_aggregate(asked, graded_qrels(ratings), run)
    via_api = cruxflow.evaluate(DUC / "run" / "bm25.run", DUC / "judge",
                                [str(m.name()) for m in asked]).mean()
    for m in asked:
        assert via_ir[m] == via_api[str(m.name())], m
    # the bare alpha_nDCG is ir_measures' own on the diversity qrels at eta 3 (the release's
    # file, written from these ratings)
    div = list(ir_measures.read_trec_qrels(str(DUC / "qrels" / "div_qrels-tau3.txt")))
    own = ir_measures.calc_aggregate([ir_measures.alpha_nDCG @ 10], div,
                                     ir_measures.read_trec_run(str(DUC / "run" / "bm25.run")))
    assert via_api["alpha_nDCG@10"] == pytest.approx(own[ir_measures.alpha_nDCG @ 10],
                                                     abs=1e-15)


def test_den_needs_tokens_and_follows_eq6():
    counts = {"t:0#0": 10, "t:0#1": 20, "t:0#2": 30, "x:9#9": 40, "u:0#0": 5}
    qrels, run = with_tokens(QRELS, counts), with_tokens(RUN, counts)
    # Den@3: Cov 1 over 30 + 10 + 20 = 60 tokens; Z* = [t:0#1]: Cov 1 over 20 tokens:
    # ((1/60) / (1/20)) ** 0.5
    assert math.isclose(per_topic(Den @ 3, qrels, run)["t"], (20 / 60) ** 0.5)
    assert math.isclose(per_topic(Den(weight=1.0) @ 3, qrels, run)["t"], 20 / 60)
    with pytest.raises(ValueError, match="tokens"):
        ir_measures.calc_aggregate([Den @ 3], QRELS, RUN)
    with pytest.raises(KeyError, match="no token count"):
        with_tokens(RUN, {"t:0#0": 1})


def test_measures_parse_and_mix_with_ir_measures():
    assert ir_measures.parse_measure("Cov(rel=4)@5") == Cov(rel=4) @ 5
    assert str(alpha_nDCG_crux @ 10) == "alpha_nDCG_crux@10"
    res = ir_measures.calc_aggregate([Cov @ 2, ir_measures.P(rel=3) @ 2], QRELS, RUN)
    assert res[Cov @ 2] == 0.5
    # a qrels topic missing from the run has an empty context: Cov 0
    assert per_topic(Cov @ 2, run=RUN[RUN["query_id"] == "u"])["t"] == 0.0


def test_agree_with_the_workflow_scorer():
    """An independent route: the workflow's ContextScorer on the same ratings and run."""
    ds, _ = ingest("crux", DUC, IngestOptions(prefix="crux"))
    judged = derive(ds, 3, 0.5)
    texts = {pid: p.contents for pid, p in ds.passages.items()}
    scorer = ContextScorer(ds, judged, texts, regex_token_count)
    # both doors order a run the same way (score, then id descending)
    rows = [("duc04-test-0", "duc04-test-0:1#2", 4.0), ("duc04-test-0", "duc04-test-0:0#0", 3.0),
            ("duc04-test-0", "duc04-test-0:0#1", 2.0), ("duc04-test-1", "duc04-test-1:0#1", 3.0),
            ("duc04-test-1", "duc04-test-1:1#2", 2.0), ("duc04-test-1", "duc04-test-1:0#0", 1.0)]
    run: dict[str, list[RunRow]] = {}
    for q, d, s in rows:
        run.setdefault(q, []).append(RunRow(q, d, len(run.get(q, [])) + 1, s))
    frame = scorer.score(run, "x", 2).set_index("topic")
    counts = {p: regex_token_count(t) for p, t in texts.items()}
    qrels = with_tokens(graded_qrels(read_ratings(DUC / "judge").by_topic()), counts)
    run_frame = with_tokens(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), counts)
    for measure, column in ((Cov @ 2, "Cov"), (alpha_nDCG_crux @ 2, "alpha_nDCG_crux"),
                            (Den @ 2, "Den")):
        got = per_topic(measure, qrels, run_frame)
        for topic in ("duc04-test-0", "duc04-test-1", "duc04-test-3"):
            assert math.isclose(got[topic], frame.loc[topic, column]), (column, topic)


def test_the_docs_ir_measures_example_gives_cruxflow_evaluates_numbers():
    """docs/evaluate.md's ir_measures example, run as written (from the repository's root)."""
    import os
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "evaluate.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S)
                 if "calc_aggregate" in b)
    setup = next(b for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S)
                 if "duc = " in b)
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(Path(__file__).resolve().parents[1])
    try:
        exec(setup.replace("print(", "(lambda *a: None)("), namespace)
        exec(block.replace("print(", "result = ("), namespace)
    finally:
        os.chdir(cwd)
    result = namespace["scores"]          # ir_measures.calc_aggregate's
    api = cruxflow.evaluate(f"{namespace['duc']}/run/bm25.run", f"{namespace['duc']}/judge",
                            measures=["Cov@10", "alpha_nDCG@10"]).mean()
    assert result[Cov @ 10] == api["Cov@10"] == pytest.approx(2 / 3)
    assert result[MEASURES["alpha_nDCG"] @ 10] == api["alpha_nDCG@10"]
    assert f"{api['alpha_nDCG@10']:.6f}" in doc      # the value the doc prints

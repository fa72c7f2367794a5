"""`cruxflow crux-eval`: the CRUX authors' rac_eval.py reproduced, pinned to hand-computed values.

Fixture (tests/data/crux/release/crux-mds-duc04), k = 10, eta = 3:

topic A (duc04-test-0), 3 questions, judge ratings:
    A:0#0 [5,0,1]  A:0#1 [3,4,-1]  A:1#2 [0,2,0]  A:1#3 [1,1,2]   -> the oracle answers q0, q1
  qrels (release convention: only lines of relevance 1, subtopics from 0):
    q0: A:0#0, A:0#1   q1: A:0#1
  run: A:0#1 r1 2.0 | A:0#0 r2 1.5 | A:1#2 r3 1.5 | duc04-test-9:0#0 r4 1.0 (unjudged)
       | A:1#3 r11 0.5 (rank > 10: left out)
topic B (duc04-test-1), 2 questions: B:0#0 [4,1] B:0#1 [0,5] B:1#2 [3,3]
  qrels q0: B:0#0, B:1#2   q1: B:0#1, B:1#2;   run: B:0#1 r1 3.0 | B:0#0 r2 2.0
topic C (duc04-test-2), 2 questions: C:0#0 [2,1] C:0#1 [-1,0]: its judged passages answer
  nothing, so it has no qrels line; run: C:0#0, C:0#1
topic D (duc04-test-3): in the qrels, not in the run.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.metrics.crux_eval import (
    compare_runs,
    crux_eval,
    judged_name,
    measure_names,
)
from cruxflow.metrics.policy import Policy
from cruxflow.metrics.tokens import read_token_counts

DATA = Path(__file__).parent / "data" / "crux"
DUC = DATA / "release" / "crux-mds-duc04"
RUN, QRELS, JUDGE = DUC / "run" / "bm25.run", DUC / "qrels" / "div_qrels-tau3.txt", DUC / "judge"
PAPER = DATA / "paper"
A, B, C = "duc04-test-0", "duc04-test-1", "duc04-test-2"
L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)

# P@10: A 2 relevant of 10, B 2 of 10.
# nDCG@10, A: pytrec_eval breaks the 1.5 tie by passage id descending, so A:1#2 (not
#   relevant) is rank 2 and A:0#0 rank 3: (1 + 1/log2 4) / (1 + 1/log2 3).
# nDCG@10, B: relevant at ranks 1, 2 of 3 relevant: (1 + 1/log2 3) / (1 + 1/log2 3 + 1/log2 4).
# alpha_nDCG@10 (alpha 0.5), A: ndeval breaks the tie ascending: A:0#1 covers q0, q1 (gain 2),
#   A:0#0 then q0 again (gain 0.5): 2 + 0.5/log2 3, which is also the ideal -> 1.
# alpha_nDCG@10, B: B:0#1 (q1, gain 1), B:0#0 (q0, gain 1) -> 1 + 1/log2 3; the ideal is B:1#2
#   (gain 2), then two passages of gain 0.5: 2 + 0.5/log2 3 + 0.5/log2 4.
# Cov@10, A: max over A:0#1, A:0#0, A:1#2, unjudged = [5,4,1]: 2 of 3 questions, 2 of the 2 the
#   oracle answers; B: [4,5]: 2 of 2; C: [2,1]: 0 of 2, and 0/0 with the oracle filter.
NDCG_A = (1 + 1 / L4) / (1 + 1 / L3)
NDCG_B = (1 + 1 / L3) / (1 + 1 / L3 + 1 / L4)
ALPHA_B = (1 + 1 / L3) / (2 + 0.5 / L3 + 0.5 / L4)
EXPECTED = {
    A: {"P@10": 0.2, "nDCG@10": NDCG_A, "alpha_nDCG@10": 1.0, "Cov@10": 2 / 3},
    B: {"P@10": 0.2, "nDCG@10": NDCG_B, "alpha_nDCG@10": ALPHA_B, "Cov@10": 1.0},
    C: {"P@10": None, "nDCG@10": None, "alpha_nDCG@10": None, "Cov@10": 0.0},
}


def script(result, values: dict) -> dict:
    """Values under our names as the script names them (P@10 ...); Judged, not the script's,
    left out."""
    return {result.authors_names[m]: v for m, v in values.items() if m in result.authors_names}


def close(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(
        (g is None and w is None) or (g is not None and w is not None and math.isclose(g, w))
        for g, w in ((got[k], want[k]) for k in want))


def test_per_topic_values_and_means():
    r = crux_eval(RUN, QRELS, JUDGE)
    for tid, want in EXPECTED.items():
        assert close(script(r, r.per_topic[tid]), want), tid
    assert list(r.per_topic) == [A, B, C]                 # D: missing from the run, left out
    assert close(script(r, r.aggregate), {"P@10": 0.2, "nDCG@10": (NDCG_A + NDCG_B) / 2,
                                          "alpha_nDCG@10": (1 + ALPHA_B) / 2,
                                          "Cov@10": (2 / 3 + 1 + 0) / 3})
    assert script(r, r.evaluated) == {"P@10": 2, "nDCG@10": 2, "alpha_nDCG@10": 2, "Cov@10": 3}
    # beside them, not the script's: the judged share of the lines Cov reads (rank <= 10, file
    # order): A ranks 3 rated passages and one of another topic (its rank-11 line cut), B and
    # C rate all theirs
    judged = judged_name(10)
    assert r.measures[-1] == judged == "Judged(cut='rank',order='file',topics='run')@10"
    assert {t: r.per_topic[t][judged] for t in (A, B, C)} == {A: 0.75, B: 1.0, C: 1.0}
    assert r.aggregate[judged] == pytest.approx((0.75 + 1 + 1) / 3)
    assert r.warnings[0] == ("1 of 3 qrels topics are missing from the run and left out: "
                             "duc04-test-3")
    assert r.info["lines_beyond_k"] == 1
    # the script's line, means to 4 decimals: 0.2, 0.84254, 0.81786, 0.55556
    assert r.line() == (f"{DUC / 'run'} | bm25.run | P@10 | 0.2000 | nDCG@10 | 0.8425 | "
                        "alpha_nDCG@10 | 0.8179 | Cov@10 | 0.5556 |")


def test_filter_by_oracle_leaves_out_a_topic_whose_passages_answer_nothing():
    r = crux_eval(RUN, QRELS, JUDGE, filter_by_oracle=True)
    cov = "Cov(cut='rank',order='file',topics='run')@10"   # the answerable questions only
    assert r.authors_names[cov] == "Cov@10"
    assert r.per_topic[A][cov] == 1.0 and r.per_topic[B][cov] == 1.0
    assert r.per_topic[C][cov] is None                    # 0/0: the script would print nan
    assert r.aggregate[cov] == 1.0 and r.evaluated[cov] == 2
    assert any(w.startswith("the script's Cov@10: 1 of 3 run topics left out") for w in r.warnings)


def test_ties_coverage_in_file_order_pytrec_descending_ndeval_ascending(tmp_path):
    # three tied lines, all rank 1 (<= k = 2): the script keeps all three; Cov takes the first
    # two in file order (t:0#2, t:0#0), pytrec_eval the top 2 by id descending (t:0#2, t:0#1),
    # ndeval by id ascending (t:0#0, t:0#1).
    run = tmp_path / "tie.run"
    run.write_text("t Q0 t:0#2 1 1.0 x\nt Q0 t:0#0 1 1.0 x\nt Q0 t:0#1 1 1.0 x\n"
                   "u Q0 t:0#0 1 1.0 x\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("t 0 t:0#0 1\nt 1 t:0#1 1\n")
    judge = tmp_path / "j.jsonl"
    judge.write_text("".join(json.dumps({"id": "t", "docid": d, "rating": r}) + "\n" for d, r in
                             (("t:0#0", [5, 0]), ("t:0#1", [0, 5]), ("t:0#2", [0, 0]))))
    r = crux_eval(run, qrels, judge, k=2)
    # Cov: max([0,0],[5,0]) = [5,0] -> 1/2; P@2: t:0#1 relevant of 2; nDCG@2: relevant at rank
    # 2 of 2 relevant: (1/log2 3) / (1 + 1/log2 3); alpha: q0 then q1, the ideal -> 1
    assert close(script(r, r.per_topic["t"]), {"P@2": 0.5, "nDCG@2": (1 / L3) / (1 + 1 / L3),
                                               "alpha_nDCG@2": 1.0, "Cov@2": 0.5})
    # a run topic without qrels or ratings: left out of every measure (the script crashes)
    assert close(script(r, r.per_topic["u"]),
                 dict.fromkeys(["P@2", "nDCG@2", "alpha_nDCG@2", "Cov@2"]))
    assert script(r, r.aggregate)["Cov@2"] == 0.5


@pytest.mark.parametrize("shared", [False, True])
def test_coverage_reads_the_rating_of_the_lines_own_topic(tmp_path, shared):
    """A passage rated for two topics (NeuCLIR's documents are) counts with each topic's own
    rating, one rated for another topic only answers nothing; with ids that carry their topic
    the ratings are looked up by the id alone, on its bytes (each by hand: Cov = answered /
    questions over the first k = 2 lines)."""
    a, b = ("d1", "d1") if shared else ("a:0#1", "b:0#1")
    judge = tmp_path / "j.jsonl"
    judge.write_text("".join(json.dumps({"id": t, "docid": d, "rating": r}) + "\n" for t, d, r in
                             (("ta", a, [5, 0]), ("tb", b, [0, 0]), ("tb", "b:0#2", [0, 4]),
                              ("ta", "a:0#9", [0, 3]))))
    qrels = tmp_path / "q.txt"
    qrels.write_text("ta 0 " + a + " 1\ntb 1 b:0#2 1\n")
    run = tmp_path / "r.run"
    run.write_text(f"ta Q0 {a} 1 2.0 x\nta Q0 b:0#2 2 1.0 x\n"     # b:0#2 is tb's, not ta's
                   f"tb Q0 {b} 1 2.0 x\ntb Q0 b:0#2 2 1.0 x\ntb Q0 a:0#9 3 0.5 x\n")
    r = crux_eval(run, qrels, judge, k=2)
    assert script(r, r.per_topic["ta"])["Cov@2"] == 0.5       # q0 by a; b:0#2 unrated for ta
    assert script(r, r.per_topic["tb"])["Cov@2"] == 0.5       # q1 by b:0#2; b answers nothing


def test_paper_era_qrels_with_zero_lines_and_subtopics_from_one():
    # tests/data/crux/paper: bm25.run ranks every line 4 with score 0.25 (the labeling tool's
    # runs). Topic P: bm25 = P:1#2, P:0#0; relevant P:0#0 (q1), P:0#1 (q2), P:2#3 (q3).
    #   pytrec order P:1#2, P:0#0: P 1/10, nDCG (1/log2 3) / (1 + 1/log2 3 + 1/log2 4);
    #   ndeval order P:0#0, P:1#2: alpha 1 / (1 + 1/log2 3 + 1/log2 4); Cov max([1,1,1],
    #   [4,0,0]) = 1 of 3.
    # Topic Q: bm25 = Q:0#1, Q:0#0; relevant Q:0#0 (q1), Q:1#2 (q2).
    #   pytrec Q:0#1, Q:0#0: nDCG (1/log2 3) / (1 + 1/log2 3); ndeval Q:0#0 first:
    #   alpha 1 / (1 + 1/log2 3); Cov max([0,2],[3,0]) = 1 of 2.
    r = crux_eval(PAPER / "bm25.run", PAPER / "testb_div_qrels.txt",
                  PAPER / "testb_judgements.jsonl")
    ideal3 = 1 + 1 / L3 + 1 / L4
    assert close(script(r, r.per_topic["duc04-testb-3"]), {
        "P@10": 0.1, "nDCG@10": (1 / L3) / ideal3, "alpha_nDCG@10": 1 / ideal3,
        "Cov@10": 1 / 3})
    assert close(script(r, r.per_topic["duc04-testb-7"]), {
        "P@10": 0.1, "nDCG@10": (1 / L3) / (1 + 1 / L3), "alpha_nDCG@10": 1 / (1 + 1 / L3),
        "Cov@10": 0.5})
    assert r.info["qrels"]["zero_lines"] == 13 and r.info["qrels"]["subtopic_base"] == 1


def test_density_from_token_counts(tmp_path):
    counts = tmp_path / "tokens.tsv"
    counts.write_text("".join(f"{p}\t{n}\n" for p, n in (
        (f"{A}:0#1", 20), (f"{A}:0#0", 10), (f"{A}:1#2", 30), (f"{A}:1#3", 5),
        ("duc04-test-9:0#0", 40), (f"{B}:0#0", 10), (f"{B}:0#1", 10), (f"{B}:1#2", 25),
        (f"{C}:0#0", 3), (f"{C}:0#1", 3))))
    r = crux_eval(RUN, QRELS, JUDGE, token_counts=read_token_counts(counts))
    # A: Z* = P** = [A:0#1] (answers q0 and q1), 20 tokens; the context A:0#1, A:0#0, A:1#2 and
    # the unjudged passage has 100 tokens; Cov = Cov(Z*) = 2/3: Den = ((2/3)/100 /
    # ((2/3)/20)) ** 0.5 = 0.2 ** 0.5. B: Z* = [B:1#2] (q0, q1), 25 tokens; context 20 tokens,
    # Cov 1: Den = (25/20) ** 0.5. C: the oracle covers nothing: undefined.
    den = {m for m, name in r.authors_names.items() if name == "Den@10"}.pop()
    assert den == "Den(cut='rank',order='file',topics='run')@10"
    assert math.isclose(r.per_topic[A][den], 0.2 ** 0.5)
    assert math.isclose(r.per_topic[B][den], 1.25 ** 0.5)
    assert r.per_topic[C][den] is None
    assert r.line().endswith(f"| Den@10 | {(0.2 ** 0.5 + 1.25 ** 0.5) / 2:.4f} |")
    # a ranked passage without a token count (a run over a larger corpus than the local
    # collection): A's Den is undefined and counted, never computed from a guess; the oracle's
    # passages still need theirs
    del_one = read_token_counts(counts)
    del del_one["duc04-test-9:0#0"]
    r = crux_eval(RUN, QRELS, JUDGE, token_counts=del_one)
    assert script(r, r.per_topic[A])["Den@10"] is None
    assert script(r, r.per_topic[A])["Cov@10"] == 2 / 3
    assert math.isclose(script(r, r.aggregate)["Den@10"], 1.25 ** 0.5)
    assert r.info["den_undefined_no_text"] == [A]
    del del_one[f"{B}:1#2"]     # B's Z*
    with pytest.raises(DataError) as info:
        crux_eval(RUN, QRELS, JUDGE, token_counts=del_one)
    assert info.value.record == f"topic {B}"


def test_paired_tests_between_two_runs():
    # P@10 per topic: oracle.run 0.3 and 0.2 (every passage relevant), bm25.run 0.1 and 0.1.
    # d = [0.2, 0.1]: t = 0.15 / (0.0707107 / sqrt 2) = 3 with 1 degree of freedom, whose
    # two-sided p is 1 - (2/pi) atan(3); the exact sign-flip test: 2 of the 4 flips reach
    # |mean| >= 0.15, p = 0.5.
    qrels, judge = PAPER / "testb_div_qrels.txt", PAPER / "testb_judgements.jsonl"
    a = crux_eval(PAPER / "oracle.run", qrels, judge)
    b = crux_eval(PAPER / "bm25.run", qrels, judge)
    p10 = next(iter(measure_names(10)))
    row = {r["measure"]: r for r in compare_runs([a, b])}[p10]
    assert (row["a"], row["b"]) == ("oracle", "bm25")    # named by their file stems
    assert row["topics"] == 2 and math.isclose(row["diff"], 0.15)
    # the policy's default, the randomization test; one pair: Holm changes nothing
    assert (row["test"], row["correction"]) == ("randomization", "holm")
    assert math.isclose(row["p"], 0.5) and row["p_adjusted"] == row["p"]
    row = {r["measure"]: r for r in compare_runs([a, b], Policy(test="t-test"))}[p10]
    assert math.isclose(row["p"], 1 - 2 / math.pi * math.atan(3), rel_tol=1e-6)


def test_cli_prints_the_scripts_line_and_warns(capsys, tmp_path):
    rc = main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
               "--authors-line"])
    captured = capsys.readouterr()
    assert rc == 0
    assert gc.isenabled()      # the command pauses the collector, and gives it back
    assert captured.out == (
        f"{DUC / 'run'} | bm25.run | P@10 | 0.2000 | nDCG@10 | 0.8425 | "
        "alpha_nDCG@10 | 0.8179 | Cov@10 | 0.5556 |\n")
    assert "1 of 3 qrels topics are missing from the run" in captured.err
    # the table: short labels, and under it our full names, which say what differs from the
    # workflow's definitions; no line past 120 characters (issue 54)
    rc = main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
               "--output", str(tmp_path)])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    names = list(measure_names(10))
    assert lines[1].split() == ["run", "P@10", "nDCG@10", "alpha_nDCG@10", "Cov@10", "Judged@10"]
    assert lines[2].split() == [RUN.stem, "0.2000", "0.8425", "0.8179", "0.5556", "0.9167"]
    assert lines[3] == "labels:"
    assert lines[7].split() == ["Cov@10", "Cov(cut='rank',order='file',questions='all',"
                                "topics='run')@10,", "the", "script's", "Cov@10"]
    assert judged_name(10) in lines[8]
    assert max(map(len, lines + captured.err.splitlines())) <= 120
    saved = json.loads((tmp_path / "crux_eval.json").read_text())["runs"][0]
    assert saved["per_topic"][A][names[1]] == NDCG_A          # full precision
    assert saved["authors_names"][names[1]] == "nDCG@10"
    rc = main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
               "--filter_by_oracle", "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["runs"][0]["aggregate"]["Cov(cut='rank',order='file',topics='run')@10"] == 1.0


def test_cli_density_from_a_collection_and_run_b(capsys, tmp_path):
    # regex tokens (words and punctuation marks): A:0#1 "Officials evacuated 300 homes as the
    # river crested on 3 March." 12, A:0#0 11, A:1#2 7, duc04-test-9:0#0 6 -> context 36,
    # Z* = [A:0#1] 12: Den = (12/36) ** 0.5. B: B:0#1 7 + B:0#0 8 = 15, Z* = [B:1#2] 12:
    # Den = (12/15) ** 0.5.
    corpus = DATA / "release" / "crux-mds-corpus"
    # the same run under another name (one name twice is refused: names never merge)
    again = tmp_path / "again.run"
    again.write_text(RUN.read_text())
    rc = main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
               "--collection", str(corpus), "--run-b", str(again), "--authors-line"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0
    den = ((12 / 36) ** 0.5 + (12 / 15) ** 0.5) / 2
    assert len(lines) == 2 and lines[0].endswith(f"| Den@10 | {den:.4f} |")
    assert lines[0].split("|", 2)[2] == lines[1].split("|", 2)[2]   # but for folder and file
    rc = main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
               "--collection", str(corpus), "--run-b", str(again)])
    lines = capsys.readouterr().out.splitlines()
    # the same run twice under two names: every difference 0, so p = 1
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert ["P@10", RUN.stem, "again", "2", "0.2000", "0.2000", "0.0000"] + ["1.0000"] * 2 \
        in rows
    assert main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
                 "--run-b", str(RUN)]) == 2
    assert capsys.readouterr().err.strip() == (f"cruxflow: error: two runs named {RUN.stem!r}: "
                                               f"{RUN} and {RUN} (name them apart: NAME=PATH)")


def test_cli_bad_run_line_names_file_and_line(tmp_path, capsys):
    run = tmp_path / "bad.run"
    run.write_text(f"{A} Q0 {A}:0#0 one 1.0 x\n")
    rc = main(["crux-eval", "--run", str(run), "--qrel", str(QRELS), "--judge", str(JUDGE)])
    assert rc == 2
    assert f"{run}: line 1: field 'rank'" in capsys.readouterr().err


def test_windows_line_ends_and_byte_order_mark_score_the_same(tmp_path):
    """A run and qrels saved with CRLF line ends, the judge file with a byte-order mark too:
    the same per-topic values as the LF originals (tests/data/crux/paper)."""
    files = {}
    for name in ("bm25.run", "testb_div_qrels.txt", "testb_judgements.jsonl"):
        data = (PAPER / name).read_bytes().replace(b"\n", b"\r\n")
        files[name] = tmp_path / name
        files[name].write_bytes((b"\xef\xbb\xbf" if name.endswith(".jsonl") else b"") + data)
    got = crux_eval(*files.values())
    want = crux_eval(PAPER / "bm25.run", PAPER / "testb_div_qrels.txt",
                     PAPER / "testb_judgements.jsonl")
    assert got.per_topic == want.per_topic and len(got.per_topic) == 2


def test_qrels_topic_with_only_zero_lines_missing_from_the_run(tmp_path):
    """rac_eval.py reads its threshold-1 qrels without such a topic, so it is not "missing";
    the diversity qrels keep it and ir_measures gives it alpha-nDCG 0, which stays in that
    mean. P, nDCG and Cov loop over other topics: it is not in theirs. When a topic with a
    relevant line is missing too, the script filters the diversity qrels to the run's topics
    and the zero-only topic goes with it."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("t 0 t:0#0 1\nt 1 t:0#1 1\nz 0 z:0#0 0\nz 1 z:0#1 0\n")
    run = tmp_path / "r.run"
    run.write_text("t Q0 t:0#0 1 2.0 x\nt Q0 t:0#1 2 1.0 x\n")
    judge = tmp_path / "j.jsonl"
    judge.write_text("".join(json.dumps({"id": "t", "docid": d, "rating": r}) + "\n" for d, r in
                             (("t:0#0", [5, 0]), ("t:0#1", [0, 5]))))
    r = crux_eval(run, qrels, judge)
    # t: both relevant passages at ranks 1, 2 -> every measure 1; z: alpha 0 only
    assert script(r, r.per_topic["t"])["alpha_nDCG@10"] == 1.0
    assert close(script(r, r.per_topic["z"]), {"P@10": None, "nDCG@10": None,
                                               "alpha_nDCG@10": 0.0, "Cov@10": None})
    means = script(r, r.aggregate)
    assert means["alpha_nDCG@10"] == 0.5 and means["nDCG@10"] == 1.0
    assert means["Cov@10"] == 1.0 and script(r, r.evaluated)["alpha_nDCG@10"] == 2
    assert r.info["zero_only_missing_from_run"] == ["z"]
    assert r.line().endswith("alpha_nDCG@10 | 0.5000 | Cov@10 | 1.0000 |")
    # a relevant topic missing as well: both left out, alpha over t alone
    qrels.write_text(qrels.read_text() + "m 0 m:0#0 1\n")
    r = crux_eval(run, qrels, judge)
    assert "z" not in r.per_topic and script(r, r.aggregate)["alpha_nDCG@10"] == 1.0
    assert r.info["missing_from_run"] == ["z", "m"]


def test_neuclir_and_ragtime_spellings_from_the_authors_loaders(tmp_path):
    """Fixtures written from DylanJoo/crux's loaders (no real file of these subsets is public):
    crux/tools/neuclir/ir_utils.py load_ratings reads {"id", "pid", "rating"};
    crux/tools/ragtime/ir_utils.py load_qrels reads 'qid facet docid score' with a nugget id
    as facet. d1 answers question 0 and facet n-a, d2 question 1 and facet n-b, d3 nothing:
    P@10 2/10; nDCG@10 and alpha-nDCG@10 1 (both relevant passages first, each facet once);
    Cov@10 max([5,0],[0,4]) = both questions."""
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n")
    qrels = tmp_path / "neuclir24-test-request.qrel"
    qrels.write_text("q1 n-a d1 1\nq1 n-b d2 1\nq1 n-b d3 0\n")
    judge = tmp_path / "crux_llama3.3-70b-instruct.jsonl"
    judge.write_text('{"id": "q1", "pid": "d1", "rating": [5, 0]}\n'
                     '{"id": "q1", "pid": "d2", "rating": [0, 4]}\n')
    r = crux_eval(run, qrels, judge)
    assert close(script(r, r.per_topic["q1"]), {"P@10": 0.2, "nDCG@10": 1.0,
                                                "alpha_nDCG@10": 1.0, "Cov@10": 1.0})


# --- what the rank column cut, by cause -----------------------------------------------------

def _run(path: Path, rows) -> Path:
    path.write_text("".join(f"{t} Q0 {p} {r} {s} x\n" for t, p, r, s in rows))
    return path


@pytest.mark.parametrize("rows, bad", [
    # each topic 1..n in file order, a passage each: a rank
    ([(A, "a", 1, 2.0), (A, "b", 2, 1.0), (B, "c", 1, 1.0)], None),
    # 1..n in another order (a run sorted by passage): still a rank, read a second time
    ([(A, "b", 2, 1.0), (A, "a", 1, 2.0), (B, "c", 1, 1.0)], None),
    # a global line counter: B's lines continue A's ranks (its every line cut at k = 2); seen
    # once the file is read again for the cut lines' topics (file_topics, asked first below)
    ([(A, "a", 1, 2.0), (A, "b", 2, 1.0), (B, "c", 3, 1.0), (B, "d", 4, 0.5)], (B, [3, 4])),
    # a gap (a run filtered after ranking), a repeat, each topic's index as the rank
    ([(A, "a", 1, 2.0), (A, "b", 5, 1.0)], (A, [1, 5])),
    ([(A, "a", 1, 2.0), (A, "b", 1, 1.0), (B, "c", 1, 1.0)], (A, [1, 1])),
    ([(A, "a", 4, 2.0), (A, "b", 4, 1.0), (B, "c", 5, 1.0)], (A, [4, 4])),
    # a topic's lines in two stretches, ranks 1..n within each: not 1..n within the topic
    ([(A, "a", 1, 2.0), (B, "c", 1, 1.0), (A, "b", 1, 1.0)], (A, [1, 1])),
])
def test_a_rank_column_that_is_not_a_rank_is_found(tmp_path, rows, bad):
    from cruxflow.data.runs import read_every_topic, read_run_file

    top = read_run_file(_run(tmp_path / "r.run", rows), max_rank=2)
    topics = list(dict.fromkeys(t for t, *_ in rows))
    assert top.file_topics == topics
    # the cheap check on the ranks and kept lines, and the full one on every line, agree
    found = read_every_topic(top.path)[1]
    if bad is None:
        assert top.not_a_rank is None and found is None
    else:
        assert (top.not_a_rank.example, top.not_a_rank.ranks) == bad
        assert top.not_a_rank == found
        assert top.not_a_rank.of == len(topics)


def test_missing_topics_are_told_apart_from_those_the_rank_column_cut(tmp_path):
    # the qrels' topics A, B, D: A ranked within the cut, B in the file but every line of it
    # ranked 11 and beyond, D not in the file; the numbers stay the script's (left out)
    run = _run(tmp_path / "r.run", [(A, f"{A}:0#1", 1, 2.0), (A, f"{A}:0#0", 2, 1.5),
                                    (B, f"{B}:0#1", 11, 3.0), (B, f"{B}:0#0", 12, 2.0)])
    r = crux_eval(run, QRELS, JUDGE)
    assert list(r.per_topic) == [A]
    missing = [t for t in r.info["missing_from_run"]]
    assert B in missing and r.info["cut_by_rank_column"] == [B]
    assert r.info["lines_beyond_k"] == 2
    assert r.warnings[0].startswith(f"{len(missing) - 1} of 3 qrels topics are missing from the "
                                    "run and left out: ")
    assert r.warnings[1] == ("1 of 3 qrels topics are in the run file, but the rank column cut "
                             f"every line of theirs (rank > 10; 2 lines cut in all): left out, "
                             f"as the script does: {B}")
    assert r.info["rank_column_not_a_rank"] == {"topics": 1, "of": 2, "example": B,
                                                "ranks": [11, 12]}
    assert r.warnings[2] == (f"ranks not 1..n in 1 of 2 topics ({B}: 11, 12); cut at rank <= "
                             "10 all the same")


def test_one_blas_thread_only_where_nobody_chose_and_numpy_is_not_loaded(monkeypatch):
    """crux-eval without paired tests asks OpenBLAS for one thread (numpy would start a
    worker per core that no product uses), unless the user set a number or numpy is
    imported already (then the setting would come too late, and is left alone)."""
    import sys

    from cruxflow.cli import crux_eval as cli_crux_eval

    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    cli_crux_eval._one_blas_thread()          # numpy is loaded in this process
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    cli_crux_eval._one_blas_thread()
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.delenv("OMP_NUM_THREADS")
    cli_crux_eval._one_blas_thread()
    assert os.environ.pop("OPENBLAS_NUM_THREADS") == "1"

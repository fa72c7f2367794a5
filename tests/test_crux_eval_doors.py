"""crux-eval (the authors' rac_eval.py) and evaluate (the workflow's scorer) on the same release
files: names that say where the definitions differ, equal values where they do not bind, many
runs in one call, Holm's correction, and the numeric flags both refuse.

Fixture: tests/data/crux/release/crux-mds-duc04 (the release's layout; the arithmetic of its
topics is in tests/test_crux_eval.py's docstring). Topics A, B and D have a relevant passage
in the qrels, C has none (its judged passages answer nothing at eta 3).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scipy import stats

import cruxflow
from cruxflow.cli import main
from cruxflow.metrics.crux_eval import crux_eval, crux_eval_runs, measure_names

DATA = Path(__file__).parent / "data" / "crux"
DUC = DATA / "release" / "crux-mds-duc04"
RUN, QRELS, JUDGE = DUC / "run" / "bm25.run", DUC / "qrels" / "div_qrels-tau3.txt", DUC / "judge"
PAPER = DATA / "paper"
A, B, C, D = (f"duc04-test-{i}" for i in range(4))
P10, NDCG10, ALPHA10, COV10 = measure_names(10)                  # every question counts
COV10_FILTERED = list(measure_names(10, filter_by_oracle=True))[3]


def run_file(path: Path, lines: list[tuple[str, str, int, float]]) -> Path:
    path.write_text("".join(f"{t} Q0 {p} {r} {s} x\n" for t, p, r, s in lines))
    return path


def cli_json(capsys, *argv) -> dict:
    rc = main([*map(str, argv), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_no_crux_eval_name_is_one_of_the_workflows(capsys):
    got = cli_json(capsys, "evaluate", "--crux-root", DUC, "--run", RUN, "--k", "10")
    ours = set(got["aggregate"][0]) - {"system", "k", "topics", "missing_in_run"}
    script = set(got["crux_eval"]["aggregate"])
    assert ours and script and not ours & script
    # each script name says what differs: the rank-column cut and the run's topics always
    assert all("cut='rank'" in m and "topics='run'" in m for m in script)
    assert got["crux_eval"]["authors_names"] == {P10: "P@10", NDCG10: "nDCG@10",
                                                 ALPHA10: "alpha_nDCG@10", COV10: "Cov@10"}


def test_coverage_agrees_per_topic_where_the_parameters_do_not_bind(capsys):
    # bm25.run: ranks follow the scores, at most 4 lines of rank <= 10 per topic, so the rank
    # cut, the file order and the score order keep the same passages; with --filter-by-oracle
    # both count the answerable questions. Per topic the two Cov agree: A 1 (A:0#1 answers q0
    # and q1), B 1. The means differ by the topic set only: D is judged and missing, 0 in the
    # workflow's mean (2/3), left out of the script's (1).
    got = cli_json(capsys, "evaluate", "--crux-root", DUC, "--run", RUN, "--k", "10",
                   "--filter-by-oracle")
    assert got["aggregate"][0]["Cov"] == pytest.approx(2 / 3)
    assert got["crux_eval"]["aggregate"][COV10_FILTERED] == 1.0
    assert got["crux_eval"]["per_topic"][A][COV10_FILTERED] == 1.0


def test_coverage_per_topic_equal_across_doors(tmp_path):
    from cruxflow.data.ingest import IngestOptions
    from cruxflow.data.ingest.crux import read_crux
    from cruxflow.metrics.evaluate import evaluate_run

    dataset, _ = read_crux(DUC, IngestOptions(collection=str(DATA / "release" / "crux-mds-corpus")))
    texts = {pid: p.contents for pid, p in dataset.passages.items()}
    ours = evaluate_run(dataset=dataset, texts=texts, run=RUN, ks=[10]).per_query
    ours = ours.set_index("topic")["Cov"]
    script = crux_eval(RUN, QRELS, JUDGE, filter_by_oracle=True).per_topic
    assert ours[A] == script[A][COV10_FILTERED] == 1.0
    assert ours[B] == script[B][COV10_FILTERED] == 1.0
    assert ours[D] == 0.0 and D not in script             # missing: 0 there, left out here
    assert C not in ours.index and script[C][COV10_FILTERED] is None   # nothing answerable


def test_a_tied_run_is_cut_in_file_order_by_the_script_only(tmp_path):
    # every line rank 1, score 1.0; k = 1. The script's Cov takes the first line in the file,
    # A:0#1 ([3, 4, -1]: q0 and q1 of the answerable q0, q1) -> 1. By id ascending the first
    # would be A:0#0 (q0 only, 1/2), by id descending (trec_eval) A:1#3 (nothing, 0): the
    # workflow's Cov@1 is not 1 whichever way it breaks ties, and its name says score order.
    run = run_file(tmp_path / "tied.run", [(A, f"{A}:{p}", 1, 1.0)
                                           for p in ("0#1", "1#3", "0#0", "1#2")])
    cov1 = list(measure_names(1, filter_by_oracle=True))[3]
    script = crux_eval(run, QRELS, JUDGE, k=1, filter_by_oracle=True)
    assert cov1 == "Cov(cut='rank',order='file',topics='run')@1"
    assert script.per_topic[A][cov1] == 1.0
    # pytrec_eval breaks the tie by id descending: A:1#3, not relevant -> P@1 0
    assert script.per_topic[A][list(measure_names(1))[0]] == 0.0

    from cruxflow.data.ingest import IngestOptions
    from cruxflow.data.ingest.crux import read_crux
    from cruxflow.metrics.evaluate import evaluate_run

    dataset, _ = read_crux(DUC, IngestOptions(collection=str(DATA / "release" / "crux-mds-corpus")))
    texts = {pid: p.contents for pid, p in dataset.passages.items()}
    ours = evaluate_run(dataset=dataset, texts=texts, run=run, ks=[1]).per_query
    assert ours.set_index("topic").loc[A, "Cov"] != 1.0


def test_a_run_with_topics_missing_is_averaged_over_its_own_topics(tmp_path):
    # only B: P@10 2/10, Cov 1 (B:0#1 + B:0#0 answer both questions); A and D (both with a
    # relevant passage) are missing: left out, and the qrels are not scored for them
    run = run_file(tmp_path / "b.run", [(B, f"{B}:0#1", 1, 3.0), (B, f"{B}:0#0", 2, 2.0)])
    r = crux_eval(run, QRELS, JUDGE)
    assert list(r.per_topic) == [B]
    assert r.aggregate[P10] == pytest.approx(0.2) and r.aggregate[COV10] == 1.0
    assert r.warnings[0].startswith("2 of 3 qrels topics are missing from the run")


def test_a_topic_with_only_zero_lines_that_the_run_lacks_counts_for_alpha(tmp_path):
    # the script filters the diversity qrels only when a topic with a relevant passage is
    # missing; here none is, so ndeval scores Z (only a 0 line) as 0 in alpha-nDCG's mean:
    # a mean over every topic of the diversity qrels, and the name says so (topics='all')
    qrels = tmp_path / "q.txt"
    qrels.write_text(QRELS.read_text().replace(f"{D} 0 {D}:0#0 1", f"Z 0 {D}:0#0 0"))
    r = crux_eval(RUN, qrels, JUDGE)
    alone = crux_eval(RUN, QRELS, JUDGE)
    alpha_all = str(cruxflow.parse_measure(ALPHA10).with_(topics="all"))
    assert r.measures[2] == alpha_all and r.authors_names[alpha_all] == "alpha_nDCG@10"
    assert r.per_topic["Z"] == {**dict.fromkeys(r.measures), alpha_all: 0.0}
    assert r.aggregate[alpha_all] == pytest.approx(alone.aggregate[ALPHA10] * 2 / 3)


# --- many runs ----------------------------------------------------------------------------------

RUNS = [PAPER / "oracle.run", PAPER / "bm25.run", PAPER / "dr_rankfirst.run"]


def test_many_runs_give_each_runs_own_values(capsys):
    qrels, judge = PAPER / "testb_div_qrels.txt", PAPER / "testb_judgements.jsonl"
    alone = [crux_eval(r, qrels, judge) for r in RUNS]
    together = crux_eval_runs(RUNS, qrels, judge)
    for a, b in zip(alone, together, strict=True):
        assert a.per_topic == b.per_topic and a.aggregate == b.aggregate
    # the CLI: --run a b and --run a --run b and --run-b are the same call
    first = cli_json(capsys, "crux-eval", "--run", *RUNS, "--qrel", qrels, "--judge", judge)
    second = cli_json(capsys, "crux-eval", "--run", RUNS[0], "--run", RUNS[1], "--run-b",
                      RUNS[2], "--qrel", qrels, "--judge", judge)
    assert first == second
    assert [r["aggregate"] for r in first["runs"]] == [r.aggregate for r in alone]
    rc = main(["crux-eval", "--run", *map(str, RUNS), "--qrel", str(qrels), "--judge",
               str(judge), "--authors-line"])
    assert rc == 0
    assert capsys.readouterr().out.splitlines() == [r.line() for r in alone]


def test_several_k_are_each_scored_as_the_script_scores_its_one_k(capsys):
    """``--k 5 10``: each k as a call with that k alone, the runs and paired tests of one k
    after another, a table per k."""
    qrels, judge = PAPER / "testb_div_qrels.txt", PAPER / "testb_judgements.jsonl"
    common = ["--qrel", qrels, "--judge", judge, "--test", "t-test"]
    both = cli_json(capsys, "crux-eval", "--run", *RUNS, *common, "--k", "5", "10")
    alone = [cli_json(capsys, "crux-eval", "--run", *RUNS, *common, "--k", k) for k in ("5", "10")]
    assert [(r["run"], r["k"]) for r in both["runs"]] == [
        (str(r), k) for k in (5, 10) for r in RUNS]
    assert both["runs"] == alone[0]["runs"] + alone[1]["runs"]
    assert both["paired"] == alone[0]["paired"] + alone[1]["paired"]
    assert {r["measure"].rsplit("@", 1)[1] for r in both["paired"]} == {"5", "10"}
    assert main(["crux-eval", "--run", *map(str, RUNS), *map(str, common), "--k", "5", "10"]) == 0
    out = capsys.readouterr().out
    assert "; k=5, eta=3" in out and "; k=10, eta=3" in out
    assert main(["crux-eval", "--run", str(RUNS[0]), "--qrel", str(qrels), "--judge", str(judge),
                 "--k", "5", "10", "--authors-line"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        crux_eval(RUNS[0], qrels, judge, k=k).line() for k in (5, 10)]


def test_holm_over_three_runs_by_hand(capsys):
    qrels, judge = PAPER / "testb_div_qrels.txt", PAPER / "testb_judgements.jsonl"
    got = cli_json(capsys, "crux-eval", "--run", *RUNS, "--qrel", qrels, "--judge", judge,
                   "--test", "t-test")
    assert got["paired_policy"]["test"] == "t-test"
    # the runs named by their file names without the last suffix, as every door names them
    runs = {Path(r["run"]).stem: r["per_topic"] for r in got["runs"]}
    rows = [r for r in got["paired"] if r["measure"] == NDCG10]
    assert [(r["a"], r["b"]) for r in rows] == [(RUNS[0].stem, RUNS[1].stem),
                                                (RUNS[0].stem, RUNS[2].stem),
                                                (RUNS[1].stem, RUNS[2].stem)]
    raw = []
    for r in rows:
        topics = sorted(runs[r["a"]])
        x = [runs[r["a"]][t][NDCG10] for t in topics]
        y = [runs[r["b"]][t][NDCG10] for t in topics]
        raw.append(1.0 if x == y else float(stats.ttest_rel(x, y).pvalue))
    assert [r["p"] for r in rows] == pytest.approx(raw)
    # Holm: the i-th smallest p times (3 - i), running maximum, capped at 1
    order = sorted(range(3), key=lambda i: raw[i])
    want, running = [0.0] * 3, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[i]))
        want[i] = running
    assert [r["p_adjusted"] for r in rows] == pytest.approx(want)
    assert any(h > p for h, p in zip(want, raw, strict=True))   # the correction did something
    # Bonferroni by hand: 3 p, capped at 1
    got = cli_json(capsys, "crux-eval", "--run", *RUNS, "--qrel", qrels, "--judge", judge,
                   "--test", "t-test", "--correction", "bonferroni")
    rows = [r for r in got["paired"] if r["measure"] == NDCG10]
    assert [r["p_adjusted"] for r in rows] == pytest.approx([min(1, 3 * p) for p in raw])
    # --test none: no comparison at all
    got = cli_json(capsys, "crux-eval", "--run", *RUNS, "--qrel", qrels, "--judge", judge,
                   "--test", "none")
    assert "paired" not in got


# --- flags --------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag, value, message", [
    ("--k", "0", "argument --k: context size must be 'oracle', 'all' or a positive integer, "
                 "got '0'"),
    ("--k", "oracle", "argument --k: 'oracle' is a context size of evaluate; crux-eval takes "
                      "positive integers"),
    ("--k", "10,10", "argument --k: context size 10 is given twice"),
    ("--alpha", "2", "argument --alpha: must lie in 0..1, got 2.0"),
    ("--eta", "7", "argument --eta: must be a rating from 1 to 5, got 7"),
    ("--density-weight", "nan", "argument --density-weight: must be a finite number"),
    ("--resamples", "-5", "argument --resamples: must be at least 1, got -5"),
    ("--seed", "-1", "argument --seed: must be at least 0, got -1"),
    ("--output", str(RUN), "--output names a directory"),
])
def test_crux_eval_refuses_bad_numbers_in_one_line(capsys, flag, value, message):
    with pytest.raises(SystemExit) as info:
        main(["crux-eval", "--run", str(RUN), "--qrel", str(QRELS), "--judge", str(JUDGE),
              flag, value])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("cruxflow crux-eval: error: ") and message in err


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "--dataset", ".", "--run", str(RUN), "--output", str(RUN)],
     "--output names a directory"),
    (["evaluate", "--dataset", ".", "--run", str(RUN), "--resamples", "0"],
     "argument --resamples: must be at least 1, got 0"),
    (["evaluate", "--dataset", ".", "--run", str(RUN), "--k", "0"], "positive integer"),
])
def test_evaluate_refuses_the_same_way(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err and len(err.splitlines()) == 1


def test_version(capsys):
    from cruxflow import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert re.fullmatch(rf"cruxflow {re.escape(__version__)}\n", capsys.readouterr().out)


# --- the run reader ------------------------------------------------------------------------------

@pytest.mark.parametrize("line, field, message", [
    (f"{A} Q0 {A}:0#0 1 2.0", None, "expected 6 columns"),
    (f"{A} Q0 {A}:0#0 1 2.0 x extra", None, "expected 6 columns"),
    (f"{A} Q0 {A}:0#0 1 nan x", "score", "NaN"),
    (f"{A} Q0 {A}:0#0 1.5 2.0 x", "rank", "not an integer"),
    (f"{A} Q0 {A}:0#1 9 0.1 x", "docid", "appears twice"),    # again, inside the cut
])
def test_a_bad_run_line_is_named(tmp_path, line, field, message):
    from cruxflow.data.errors import DataError
    from cruxflow.data.runs import read_run_file

    run = tmp_path / "r.run"
    run.write_text(f"{A} Q0 {A}:0#1 1 3.0 x\n\n{B} Q0 {B}:0#0 1 1.0 x\n{line}\n")
    with pytest.raises(DataError) as info:
        read_run_file(run, max_rank=10)
    assert info.value.record == "line 4" and message in str(info.value)
    if field:
        assert info.value.field == field


def test_the_reader_keeps_file_order_line_numbers_and_the_rank_cut(tmp_path):
    from cruxflow.data.runs import read_run_file

    # blank lines, tabs and runs of spaces between fields; a passage again below the cut
    # changes no number (the script keeps only rank <= k), so it is accepted
    run = tmp_path / "r.run"
    run.write_text(f"{A} Q0 {A}:0#1 2 3.0 x\n\n{A}\tQ0  {A}:0#0 1 3.5 x\n"
                   f"{B} Q0 {B}:0#0 11 1.0 x\n{A} Q0 {A}:0#1 12 0.1 x\n")
    top = read_run_file(run, max_rank=10)
    assert top.topics == {A: [(f"{A}:0#1", 3.0, 1), (f"{A}:0#0", 3.5, 3)]}
    assert top.beyond_k == 2


@pytest.mark.parametrize("score, plain", [("3.25", True), ("-3.25", True), ("3.", True),
                                          ("3.25e+00", False), ("+3.25", False)])
def test_plain_and_other_scores_read_the_same(tmp_path, score, plain):
    # a block of plain decimals is read without splitting the rows below the cut; an exponent
    # or a plus sign sends it field by field: the same rows, scores and line numbers
    from cruxflow.data import runs as crux_eval_io

    run = tmp_path / "r.run"
    run.write_text(f"{A} Q0 {A}:0#1 12 0.5 x\n{A} Q0 {A}:0#0 3 {score} x\n\n"
                   f"{B} Q0 {B}:0#0 10 -1 x\n")
    assert (crux_eval_io._plain_rows(run.read_bytes(), 10) is not None) == plain
    top = crux_eval_io.read_run_file(run, max_rank=10)
    assert top.topics == {A: [(f"{A}:0#0", {"3.": 3.0, "-3.25": -3.25}.get(score, 3.25), 2)],
                          B: [(f"{B}:0#0", -1.0, 4)]}
    assert top.beyond_k == 1


def test_a_no_break_space_inside_a_field_is_still_a_bad_line(tmp_path):
    # str.split splits on U+00A0: seven fields, as the field-by-field reader sees them
    from cruxflow.data.errors import DataError
    from cruxflow.data.runs import read_run_file

    run = tmp_path / "r.run"
    run.write_text(f"{A} Q0 {A}:0#1 1 3.0 x\n{A} Q0 {A}:0\u00a0#0 2 2.0 x\n")
    with pytest.raises(DataError) as info:
        read_run_file(run, max_rank=10)
    assert info.value.record == "line 2" and "expected 6 columns" in str(info.value)

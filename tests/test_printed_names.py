"""Every measure name a command prints parses and recomputes (issue 36, item 2).

One table-driven walk over the outputs of ``cruxflow evaluate`` (its table and ``--json``,
with the CRUX authors' numbers beside it) and ``cruxflow crux-eval`` (table and ``--json``,
with and without ``--filter-by-oracle``, with Den), on the same inputs: the release excerpt
(tests/data/crux/release/crux-mds-duc04, whose bm25 run ties at a cutoff and lacks a topic)
and the paper-era files (tests/data/crux/paper: qrels with 0 lines, runs whose every line has
rank 4, so that the rank cut keeps more than k lines and the file's order decides). Each name
is fed back through :func:`cruxflow.evaluate` with the inputs the command read, and the mean
it returns must be the value the command printed: to the last digit in JSON, to the printed
decimals in tables. The paired tests' rows (crux-eval's ``paired``, evaluate's
``crux_eval_paired``) name measures that parse, and their topics and means are those of
:func:`cruxflow.evaluate` under each run's own name; :func:`cruxflow.compare` on crux-eval's
names gives crux-eval's p-values. The workflow's tables and the paper tables are walked the same
way in tests/test_workflow.py (they need a finished workflow run).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.ingest.crux_common import read_collection
from cruxflow.metrics import names
from cruxflow.metrics.options import MetricOptions

DATA = Path(__file__).parent / "data" / "crux"
DUC = DATA / "release" / "crux-mds-duc04"
CORPUS = DATA / "release" / "crux-mds-corpus"
PAPER = DATA / "paper"
PAPER_JUDGMENTS = cruxflow.Judgments(ratings=PAPER / "testb_judgements.jsonl",
                                     qrels=PAPER / "testb_div_qrels.txt")
MEASURE_COLUMNS = names.table_columns()


def defined_mean(frame, name: str) -> float | None:
    """The mean every door prints: a correctly rounded sum over the defined values."""
    values = [v for v in frame[name].tolist() if not math.isnan(v)]
    return math.fsum(values) / len(values) if values else None


def recompute(run, judgments, name: str, options=None, **kw) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = cruxflow.evaluate(run, judgments, [name], options=options, **kw)
    return defined_mean(frame, str(names.parse(name)))


def run_cli(capsys, *argv) -> str:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def texts() -> dict[str, str]:
    return read_collection(CORPUS)[0]


def markdown_rows(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in ``text``."""
    lines = [x for x in text.splitlines() if x.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in x.strip("|").split("|")), strict=True))
            for x in lines[2:]]


# --- cruxflow evaluate --------------------------------------------------------------------------

@pytest.mark.parametrize("eta", [3, 2])
def test_evaluate_names_recompute(capsys, eta):
    run = DUC / "run" / "bm25.run"
    argv = ["evaluate", "--crux-root", DUC, "--run", run, "--k", "oracle", "1", "2", "10", "20",
            "--eta", eta]
    got = json.loads(run_cli(capsys, *argv, "--json"))
    options = MetricOptions(eta=eta)
    walked = 0
    for row in got["aggregate"]:
        for column in MEASURE_COLUMNS:
            name = names.qualified(column, row["k"], options)
            assert str(names.parse(name)) == name
            want = recompute(run, DUC / "judge", name, options, texts=texts())
            assert row[column] == want, name
            walked += 1
    # the table (every column): the same names, at the printed 4 decimals (a mark after)
    for row in markdown_rows(run_cli(capsys, *argv, "--measures", "all")):
        for column in MEASURE_COLUMNS:
            name = names.qualified(column, row["k"], options)
            want = recompute(run, DUC / "judge", name, options, texts=texts())
            assert row[column].split(" [")[0] == (
                "undefined" if want is None else f"{want:.4f}"), name
    # the authors' numbers beside them, under crux-eval's names, from the files they read:
    # the release folder itself where it holds the qrels of this eta
    script = got["crux_eval"]
    read = DUC if eta == 3 else cruxflow.Judgments(
        ratings=DUC / "judge", qrels=DUC / "qrels" / "div_qrels-tau3.txt")
    for name, value in script["aggregate"].items():
        assert recompute(run, read, name, options) == value, name
        walked += 1
    assert walked == 5 * len(MEASURE_COLUMNS) + 5   # the script's four and Judged


# --- cruxflow crux-eval -------------------------------------------------------------------------

CRUX_EVAL_CASES = {
    "release": (["--qrel", DUC / "qrels" / "div_qrels-tau3.txt", "--judge", DUC / "judge",
                 "--run", DUC / "run" / "bm25.run", "--collection", CORPUS], DUC),
    "release, filtered, k 2": (["--qrel", DUC / "qrels" / "div_qrels-tau3.txt", "--judge",
                                DUC / "judge", "--run", DUC / "run" / "bm25.run",
                                "--filter-by-oracle", "--k", "2", "--collection", CORPUS], DUC),
    "paper-era, three runs": (["--qrel", PAPER / "testb_div_qrels.txt", "--judge",
                               PAPER / "testb_judgements.jsonl", "--run", PAPER / "oracle.run",
                               PAPER / "bm25.run", PAPER / "dr_rankfirst.run", "--k", "4",
                               "--paired", "none"], PAPER_JUDGMENTS),
    # every line rank 1, score 1.0, k 1: the rank cut keeps every line, and the file's order
    # (Cov, Den), ids descending (P, nDCG) and ids ascending (alpha-nDCG) each pick another
    "release, every line tied": (["--qrel", DUC / "qrels" / "div_qrels-tau3.txt", "--judge",
                                  DUC / "judge", "--run", "TIED", "--k", "1",
                                  "--collection", CORPUS], DUC),
    "paper-era, eta 2, alpha 0.3": (["--qrel", PAPER / "testb_div_qrels.txt", "--judge",
                                     PAPER / "testb_judgements.jsonl", "--run",
                                     PAPER / "bm25.run", "--eta", "2", "--alpha", "0.3",
                                     "--filter-by-oracle"], PAPER_JUDGMENTS),
}


@pytest.mark.parametrize("case", list(CRUX_EVAL_CASES))
def test_crux_eval_names_recompute(capsys, case, tmp_path):
    argv, judgments = CRUX_EVAL_CASES[case]
    tied = tmp_path / "tied.run"
    tied.write_text("".join(f"{q} Q0 {q}:{p} 1 1.0 tied\n" for q, ps in (
        ("duc04-test-0", ("0#1", "1#3", "0#0", "1#2")), ("duc04-test-1", ("0#0", "1#2", "0#1")))
        for p in ps))
    argv = [tied if a == "TIED" else a for a in argv]
    got = json.loads(run_cli(capsys, "crux-eval", *argv, "--json"))
    table = run_cli(capsys, "crux-eval", *argv)
    eta = int(argv[argv.index("--eta") + 1]) if "--eta" in argv else 3
    alpha = float(argv[argv.index("--alpha") + 1]) if "--alpha" in argv else 0.5
    options = MetricOptions(eta=eta, alpha=alpha)
    extra = {"texts": texts()} if "--collection" in argv else {}
    printed = dict(re.findall(r"^(\S+)\s+(.*)$", table, flags=re.M))
    for result in got["runs"]:
        label = result["run"]
        for name, value in result["aggregate"].items():
            assert str(names.parse(name)) == name
            want = recompute(result["run"], judgments, name, options, **extra)
            assert want == value, (label, name)
            per_topic = {t: v[name] for t, v in result["per_topic"].items()
                         if v[name] is not None}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                frame = cruxflow.evaluate(result["run"], judgments, [name], options=options,
                                          **extra)[name].dropna()
            assert frame.to_dict() == per_topic, (label, name)
        cells = printed[Path(label).stem].split()   # a run is named by its file stem
        assert cells == [("n/a" if v is None else f"{v:.4f}") for v in
                         result["aggregate"].values()], label
    if case.startswith("release"):
        assert any("Den(" in n for r in got["runs"] for n in r["aggregate"])


# --- the paired tests' names ----------------------------------------------------------------------

def zero_only_case(tmp_path):
    """Two runs on qrels with a topic of 0 lines only (z): one run lacks z, so the script's
    alpha-nDCG mean covers every qrels topic (topics='all'), the other has z (topics='run')."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("t 0 t:0#0 1\nt 1 t:0#1 1\nz 0 z:0#0 0\nz 1 z:0#1 0\n"
                     "u 0 u:0#0 1\nu 1 u:0#1 1\n")
    judge = tmp_path / "j.jsonl"
    judge.write_text("".join(json.dumps({"id": d.split(":")[0], "docid": d, "rating": r}) + "\n"
                             for d, r in (("t:0#0", [5, 0]), ("t:0#1", [0, 5]), ("z:0#0", [0, 1]),
                                          ("z:0#1", [1, 0]), ("u:0#0", [4, 0]),
                                          ("u:0#1", [0, 4]))))
    whole, part = tmp_path / "whole.run", tmp_path / "part.run"
    part.write_text("t Q0 t:0#0 1 2.0 x\nt Q0 t:0#1 2 1.0 x\nu Q0 u:0#0 1 1.0 x\n")
    whole.write_text("t Q0 t:0#1 1 2.0 y\nu Q0 u:0#1 1 2.0 y\nu Q0 u:0#0 2 1.0 y\n"
                     "z Q0 z:0#0 1 1.0 y\n")
    return [part, whole], cruxflow.Judgments(ratings=judge, qrels=qrels)


def check_paired_rows(rows, runs: dict, judgments, options, families: int) -> None:
    """Each row's names parse, and its topics and means are those of cruxflow.evaluate's
    per-topic values under each run's own name, over the topics both runs define."""
    assert rows and len({r["measure"] for r in rows}) == families
    for row in rows:
        a_name, b_name = row.get("measure_a", row["measure"]), row.get("measure_b", row["measure"])
        for name in (row["measure"], a_name, b_name):
            assert str(names.parse(name)) == name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = cruxflow.evaluate(runs[row["a"]], judgments, [a_name], options=options)[a_name]
            b = cruxflow.evaluate(runs[row["b"]], judgments, [b_name], options=options)[b_name]
        both = sorted(set(a.dropna().index) & set(b.dropna().index))
        assert row["topics"] == len(both), row
        if both:
            assert row["mean_a"] == a[both].to_numpy().mean(), row
            assert row["mean_b"] == b[both].to_numpy().mean(), row


def test_crux_eval_paired_names_recompute(capsys, tmp_path):
    # the paper-era runs: every run names its measures alike
    runs = [PAPER / "oracle.run", PAPER / "bm25.run", PAPER / "dr_rankfirst.run"]
    got = json.loads(run_cli(capsys, "crux-eval", "--qrel", PAPER / "testb_div_qrels.txt",
                             "--judge", PAPER / "testb_judgements.jsonl", "--run", *runs,
                             "--k", "4", "--json"))
    # the script's four measures and Judged
    check_paired_rows(got["paired"], {r.stem: r for r in runs}, PAPER_JUDGMENTS,
                      MetricOptions(), 5)
    assert not any("measure_a" in r for r in got["paired"])
    # cruxflow.compare on the same names, runs and judgments: the same tests
    report = cruxflow.compare(runs, PAPER_JUDGMENTS, measures=list(got["runs"][0]["aggregate"]))
    stems = {r.stem: str(r) for r in runs}
    api = {(r["measure"], r["a"], r["b"]): r for r in report.tests.to_dict("records")}
    assert set(stems) == {r["a"] for r in got["paired"]} | {r["b"] for r in got["paired"]}
    for row in got["paired"]:
        mine = api[(row["measure"], row["a"], row["b"])]
        assert (mine["topics"], mine["p"], mine["p_adjusted"]) == (
            row["topics"], row["p"], row["p_adjusted"]), row
    # alpha-nDCG over every qrels topic for one run, over its own for the other: one family
    (part, whole), judgments = zero_only_case(tmp_path)
    argv = ["--qrel", tmp_path / "q.txt", "--judge", tmp_path / "j.jsonl", "--run", part, whole]
    got = json.loads(run_cli(capsys, "crux-eval", *argv, "--json"))
    alpha = [r for r in got["paired"] if r["measure"].startswith("alpha_nDCG")]
    assert len(alpha) == 1 and alpha[0]["measure_a"] == alpha[0]["measure"] \
        and names.parse(alpha[0]["measure_a"])["topics"] == "all" \
        and names.parse(alpha[0]["measure_b"])["topics"] == "run"
    # by hand: t, u and z in both (z 0 in both); part has t whole (1) and u half (1 / (1 +
    # 1/log2 3)), whole the other way round: the differences cancel
    assert alpha[0]["topics"] == 3 and alpha[0]["mean_a"] == pytest.approx(
        (1 + 1 / (1 + 1 / math.log2(3))) / 3) and alpha[0]["diff"] == pytest.approx(0, abs=1e-15)
    check_paired_rows(got["paired"], {part.stem: part, whole.stem: whole}, judgments,
                      MetricOptions(), 5)
    # cruxflow evaluate's comparison of the authors' numbers: the same rows, under its labels
    got_evaluate = json.loads(run_cli(capsys, "evaluate", *argv, "--json"))
    assert got_evaluate["crux_eval_paired"] == got["paired"]   # both name runs by stem

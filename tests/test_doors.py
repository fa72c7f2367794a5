"""One name, one number: the same inputs through every door of ours (issue 26).

Doors: the workflow's scorer as ``workflow_scripts/context_metrics.py`` calls it (judgments
written and read back, the collection's texts), ``cruxflow evaluate`` (its per_query.tsv and
its --json aggregate), the ir_measures measures of ``cruxflow.metrics.measures`` (on graded
diversity qrels, ``alpha_nDCG(rel=3)`` there being the diversity qrels' ``alpha_nDCG``) and the
Python API ``cruxflow.evaluate``. Inputs: the CRUX-DUC release excerpt in tests/data/crux
(its judge ratings and its bm25 run, which has a score tie across the top-2 boundary, a topic
missing (duc04-test-3) and a passage no topic rated (duc04-test-9:0#0)); a run in which every
score ties; and a small case computed by hand. crux-eval's rows are in its own test file.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.data.io import read_run, ties_at_cutoff
from cruxflow.data.model import Passage
from cruxflow.metrics import names
from cruxflow.metrics.inputs import graded_qrels
from cruxflow.metrics.judgments import derive, read_judgments, write_judgments
from cruxflow.metrics.measures import with_tokens
from cruxflow.metrics.options import DEFAULTS, MetricOptions
from cruxflow.metrics.scorer import ContextScorer, parse_context_size
from cruxflow.metrics.tokens import make_token_counter, regex_token_count

DUC = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"
OUTSIDE = "duc04-test-9:0#0"     # in the bm25 run; no topic of the excerpt rated it
KS = ["oracle", 1, 2, 10]
# names every door prints (ir_measures': the registered CRUX measures)
SHARED = ["Cov", "alpha_nDCG_crux", "Den"]
OURS = ["R", "R(rel=2)", "P", "AP", "nDCG", "alpha_nDCG", "alpha_nDCG_published"]


@pytest.fixture(scope="module")
def duc(tmp_path_factory):
    """The excerpt as a dataset directory, its judgments and a collection that also holds the
    unrated passage (a corpus is larger than the judged set)."""
    root = tmp_path_factory.mktemp("doors")
    ds, _ = ingest("crux", DUC, IngestOptions(prefix="crux"))
    ds.passages[OUTSIDE] = Passage(OUTSIDE, "an unrated passage of another topic", None, None)
    ds.save(root / "data")
    write_judgments(derive(ds, 3, 0.5), ds, root / "judgments", 3)
    collection = root / "collection.jsonl"
    collection.write_text("".join(json.dumps({"id": p, "contents": x.contents}) + "\n"
                                  for p, x in ds.passages.items()))
    tied = root / "tied.run"   # every score equal: the ids decide (descending)
    tied.write_text("".join(f"{q} Q0 {p} {i} 1.0 tied\n" for i, (q, p) in enumerate(
        [(q, p) for q in ("duc04-test-0", "duc04-test-1", "duc04-test-2")
         for p in sorted(ds.ratings_by_topic()[q])], 1)))
    return {"root": root, "dataset": ds, "data": root / "data", "collection": collection,
            "runs": {"bm25": DUC / "run" / "bm25.run", "tied": tied}}


def workflow_door(duc, run_path) -> pd.DataFrame:
    """As workflow_scripts/context_metrics.py: long table, one row per (k, topic)."""
    from cruxflow.data.model import Dataset
    from cruxflow.retrieval.corpus import read_collection

    dataset = Dataset.load(duc["data"], with_passages=False)
    texts = read_collection(duc["collection"])
    run = read_run(run_path)
    options = MetricOptions()
    scorer = ContextScorer(dataset, read_judgments(duc["root"] / "judgments" / "judgments.jsonl"),
                           texts, make_token_counter(options.tokenizer), options)
    return pd.concat([scorer.score(run, "w", parse_context_size(str(k))) for k in KS],
                     ignore_index=True)


def cli_door(duc, run_path, out: Path, capsys):
    rc = main(["evaluate", "--dataset", str(duc["data"]), "--run", str(run_path), "--k",
               *map(str, KS), "--collection", str(duc["collection"]),
               "--output", str(out), "--json"])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    return pd.read_csv(out / "per_query.tsv", sep="\t", dtype={"k": str}), json.loads(stdout)


def api_door(duc, run, k) -> pd.DataFrame:
    """The table's columns at k by their full names (a table's rows are its judged topics in
    the one tie policy: ``nDCG(topics='judged')@10``, names.qualified)."""
    texts = {p: x.contents for p, x in duc["dataset"].passages.items()}
    measures = [names.qualified(m, k) for m in SHARED + OURS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cruxflow.evaluate(run, duc["data"], measures, texts=texts)


def ir_measures_door(duc, run_path, k: int) -> dict[str, dict[str, float]]:
    counts = {p: regex_token_count(x.contents) for p, x in duc["dataset"].passages.items()}
    qrels = with_tokens(graded_qrels(read_ratings(DUC / "judge").by_topic()), counts)
    run = with_tokens(pd.DataFrame([(q, r.doc_id, r.score) for q, rows in
                                    read_run(run_path).items() for r in rows],
                                   columns=["query_id", "doc_id", "score"]), counts)
    from cruxflow.metrics import measures as M

    asked = {M.Cov @ k: "Cov", M.alpha_nDCG_crux @ k: "alpha_nDCG_crux", M.Den @ k: "Den"}
    out: dict[str, dict[str, float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in ir_measures.iter_calc(list(asked), qrels, run):
            out.setdefault(asked[m.measure], {})[m.query_id] = m.value
    # ndeval breaks score ties by id *ascending* inside itself; our doors order the run first
    # (trec_eval's order), so ir_measures' alpha_nDCG is given the run in that order
    ordered = run.assign(score=-run.groupby("query_id").cumcount().astype(float))
    for m in ir_measures.iter_calc([ir_measures.alpha_nDCG(rel=3) @ k], qrels, ordered):
        out.setdefault("alpha_nDCG", {})[m.query_id] = m.value
    return out


def same(a, b, tol=0.0) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(a - b) <= tol


@pytest.mark.parametrize("run_name", ["bm25", "tied"])
def test_every_door_prints_one_number_per_name(duc, run_name, tmp_path, capsys):
    run_path = duc["runs"][run_name]
    wf = workflow_door(duc, run_path)
    cli, cli_json = cli_door(duc, run_path, tmp_path / "out", capsys)
    columns = SHARED + OURS
    assert list(wf["topic"].unique()) == ["duc04-test-0", "duc04-test-1", "duc04-test-3"]
    # the CLI's per_query.tsv is the workflow's table, written at 6 decimals
    for col in columns:
        for x, y in zip(wf[col], cli[col], strict=True):
            assert same(float(x), float(y), 5e-7), col
    # its aggregate (--json, full precision) is the mean of the workflow's rows, NaN left out
    for row in cli_json["aggregate"]:
        part = wf[wf["k"] == row["k"]]
        for col in columns:
            want = part[col].mean()
            assert (row[col] is None and math.isnan(want)) or row[col] == want, (row["k"], col)
    for k in KS:
        part = wf[wf["k"] == str(k)].set_index("topic")
        api = api_door(duc, run_path, k)
        for col in columns:   # the API: the same numbers, to the last digit
            name = names.qualified(col, k)
            for topic, value in api[name].items():
                assert same(float(value), float(part.loc[topic, col])), (name, topic)
        if k == "oracle":
            continue          # ir_measures has no @oracle
        for col, values in ir_measures_door(duc, run_path, k).items():
            for topic in part.index:   # the topics with an answerable question
                assert same(values[topic], float(part.loc[topic, col]), 1e-12), (col, k, topic)


def test_the_tie_policy_and_its_warning(duc, tmp_path, capsys):
    run = read_run(duc["runs"]["tied"])
    # every score ties: trec_eval's order is passage id descending, whatever the rank column
    assert [r.doc_id for r in run["duc04-test-0"]] == [
        "duc04-test-0:1#3", "duc04-test-0:1#2", "duc04-test-0:0#1", "duc04-test-0:0#0"]
    assert ties_at_cutoff(run, 2) == ["duc04-test-0", "duc04-test-1"]   # test-2 has 2 lines
    # the bm25 excerpt: duc04-test-0:0#0 and :1#2 tie at 1.5 across ranks 2 and 3
    bm25 = read_run(duc["runs"]["bm25"])
    assert [r.doc_id for r in bm25["duc04-test-0"]][:3] == [
        "duc04-test-0:0#1", "duc04-test-0:1#2", "duc04-test-0:0#0"]
    assert ties_at_cutoff(bm25, 2) == ["duc04-test-0"] and ties_at_cutoff(bm25, 1) == []
    # each door warns once, with the count
    with pytest.warns(UserWarning, match=r"for 1 of 3 topics \(duc04-test-0\)"):
        cruxflow.evaluate(duc["runs"]["bm25"], duc["data"], ["Cov@2", names.qualified("nDCG", 2)])
    rc = main(["evaluate", "--dataset", str(duc["data"]), "--run", str(duc["runs"]["bm25"]),
               "--k", "2", "--collection", str(duc["collection"])])
    _, err = capsys.readouterr()
    assert rc == 0 and err.count("tied scores decide") == 1 and "for 1 of 3 topics" in err


def test_a_small_case_by_hand(duc):
    """duc04-test-1: ratings 0#0 [4, 1], 0#1 [0, 5], 1#2 [3, 3]; eta 3 -> q0 (0#0, 1#2) and
    q1 (0#1, 1#2) answerable; Z* = P** = [1#2]. The run: 0#1 (3.0), 0#0 (2.0)."""
    run = {"duc04-test-1": {"duc04-test-1:0#1": 3.0, "duc04-test-1:0#0": 2.0}}
    got = cruxflow.evaluate(run, read_ratings(DUC / "judge").by_topic(), [
        "Cov@1", "Cov@2", "alpha_nDCG_crux@2", "alpha_nDCG_crux@oracle", "R@2", "R(rel=2)@2",
        "P@2", "P@oracle", "AP@2", "nDCG@2", "alpha_nDCG@2", "alpha_nDCG_published@2"],
        ).loc["duc04-test-1"]
    L3 = math.log2(3)
    want = {
        "Cov@1": 1 / 2, "Cov@2": 1.0,
        "alpha_nDCG_crux@2": (1 + 1 / L3) / 2,      # gains 1, 1; ideal: 1#2 alone, gain 2
        "alpha_nDCG_crux@oracle": 1 / 2,            # k = |Z*| = 1
        "R@2": 2 / 3, "R(rel=2)@2": 0.0,            # P* = 3 passages; P** = {1#2}
        "P@2": 1.0, "P@oracle": 1.0,
        "AP@2": (1 + 1) / 3,                        # precisions 1, 1 over 3 relevant
        "nDCG@2": (1 + 1 / L3) / (2 + 1 / L3),      # grades 1, 1; ideal 2, 1 (cut at 2)
        # ndeval: run gains 1 (q1), 1 (q0); ideal 1#2 (2), then 0.5 at rank 2 (cut at 2)
        "alpha_nDCG@2": (1 + 1 / L3) / (2 + 0.5 / L3),
        # the paper's computation: the same DCG over ndeval's ideal at rank 20 (P*: 3 ranks,
        # the third adds 0.5 / log2(4))
        "alpha_nDCG_published@2": (1 + 1 / L3) / (2 + 0.5 / L3 + 0.5 / 2),
    }
    for name, value in want.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name
    # a judged topic missing from the run: an empty context, 0, and listed
    frame = cruxflow.evaluate(run, read_ratings(DUC / "judge").by_topic(), ["Cov@2"])
    assert frame.attrs["missing_in_run"] == ["duc04-test-0", "duc04-test-3"]
    assert frame["Cov@2"].tolist() == [0.0, 1.0, 0.0]
    assert frame.mean()["Cov@2"] == pytest.approx(1 / 3)


def test_inputs_as_files_dicts_and_frames_agree(duc):
    ratings = read_ratings(DUC / "judge").by_topic()
    qrels = graded_qrels(ratings)
    qrels_file = duc["root"] / "graded.txt"
    qrels_file.write_text("".join(f"{q} {i} {d} {r}\n" for q, i, d, r in qrels.itertuples(
        index=False)))
    run = read_run(duc["runs"]["bm25"])
    as_dict = {q: {r.doc_id: r.score for r in rows} for q, rows in run.items()}
    as_frame = pd.DataFrame([(q, d, s) for q, docs in as_dict.items() for d, s in docs.items()],
                            columns=["query_id", "doc_id", "score"])
    measures = ["Cov@10", "Cov(questions=all)@10", "alpha_nDCG@10", "nDCG@oracle"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = [cruxflow.evaluate(r, j, measures)
                  for r in (duc["runs"]["bm25"], as_dict, as_frame)
                  for j in (duc["data"], ratings, qrels, qrels_file, DUC / "judge")]
    for f in frames[1:]:
        pd.testing.assert_frame_equal(f, frames[0])
    # Cov(questions=all): test-0 answers 2 of its 3 questions (q2 is nobody's at eta 3)
    assert frames[0].loc["duc04-test-0", "Cov(questions='all')@10"] == pytest.approx(2 / 3)


def test_relevance_measures_are_computed_on_relevance_qrels(duc):
    """Handing the graded ratings to ir_measures' P would read each passage's last
    sub-question line as its grade; the API computes P on P* graded 2-1 instead, at any
    ``rel``."""
    ratings = read_ratings(DUC / "judge").by_topic()
    with pytest.warns(UserWarning, match="tied scores"):   # test-0's rank 2 and 3 tie
        got = cruxflow.evaluate(duc["runs"]["bm25"], ratings, ["P@2"])
    # test-0's top 2 are 0#1 and 1#2 (the tie at 1.5 goes to the larger id), both in P*
    assert got.loc["duc04-test-0", "P@2"] == 1.0
    # P(rel=2): the share of the top 10 in P** (grade 2). test-0: P** = [0#1] (it answers
    # q0 and q1, the answerable ones), ranked first -> 1/10; test-1: P** = [1#2], not in the
    # run -> 0; test-2 has no P** (nothing answerable) -> 0, counted as ir_measures counts
    # every qrels topic; test-3 is not in the run -> 0
    got = cruxflow.evaluate(duc["runs"]["bm25"], ratings, ["P(rel=2)@10", "AP(rel=2)@10"])
    assert got["P(rel=2)@10"].tolist() == [0.1, 0.0, 0.0, 0.0]
    assert got["AP(rel=2)@10"].tolist() == [1.0, 0.0, 0.0, 0.0]
    # over the topics with an answerable question only, as a table of ours counts them
    got = cruxflow.evaluate(duc["runs"]["bm25"], ratings, ["P(rel=2,topics=judged)@10"])
    assert got.index.tolist() == ["duc04-test-0", "duc04-test-1", "duc04-test-3"]
    with pytest.raises(ValueError, match="give a cutoff"):
        cruxflow.evaluate(duc["runs"]["bm25"], ratings, ["P"])
    with pytest.raises(ValueError, match="Den@10 needs the passages' texts"):
        cruxflow.evaluate(duc["runs"]["bm25"], ratings, ["Den@10"])


def test_defaults_are_declared_once():
    """argparse (cli.args, i26b), the schema and the names read MetricOptions' defaults."""
    from cruxflow.data import model
    from cruxflow.metrics import options

    schema = json.loads((Path(cruxflow.__file__).parent / "schemas" /
                         "config.schema.json").read_text())
    metrics = schema["properties"]["metrics"]["properties"]
    for key in ("eta", "alpha", "density_weight", "tokenizer", "relevance_grades"):
        assert metrics[key]["default"] == getattr(DEFAULTS, key), key
    assert metrics["relevance_grades"]["enum"] == list(options.RELEVANCE_GRADES)
    assert (options.RATING_MIN, options.RATING_MAX) == (model.RATING_MIN, model.RATING_MAX)
    assert names.parse("Cov@10")["rel"] == DEFAULTS.eta
    assert names.parse("alpha_nDCG_crux@10")["alpha"] == DEFAULTS.alpha
    assert names.parse("Den@10")["weight"] == DEFAULTS.density_weight


def test_names_parse_and_print_canonically():
    assert str(names.parse("Cov(rel=3)@10")) == "Cov@10"
    assert str(names.parse("Cov( questions=all )@oracle")) == "Cov(questions='all')@oracle"
    assert names.qualified("Cov", "10", MetricOptions(eta=4)) == "Cov(rel=4)@10"
    # a cutoff above ndeval's 20 parses (the tables print it): its values are undefined
    assert str(names.parse("alpha_nDCG@21")) == "alpha_nDCG@21"
    for bad, why in (("Cov(order=rank)@1", "order must be one of"),
                     ("Cov(eta=3)@1", "no parameter"), ("Recall@10", "unknown measure"),
                     ("Cov@0", "positive")):
        with pytest.raises(ValueError, match=why):
            names.parse(bad)
    # ir_measures reads the same names (CRUX's once cruxflow.metrics.measures is imported)
    from cruxflow.metrics import measures  # noqa: F401

    for text in ("Cov(questions='all')@10", "R(rel=2)@10", "alpha_nDCG@10", "nDCG@10",
                 "Den(weight=1.0)@3"):
        assert str(ir_measures.parse_measure(text)) == text


def test_options_are_checked_and_import_cruxflow_stays_light():
    from cruxflow.data.errors import DataError

    for bad in ({"eta": 0}, {"alpha": 1.5}, {"density_weight": 0}, {"relevance_grades": "1"}):
        with pytest.raises(DataError, match=next(iter(bad))):
            MetricOptions(**bad)
    assert MetricOptions().with_(eta=4, alpha=None).eta == 4
    import subprocess
    import sys

    code = ("import sys, cruxflow; cruxflow.MetricOptions; cruxflow.parse_measure('Cov@10'); "
            "print(sorted(m for m in ('numpy', 'pandas', 'ir_measures') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_every_commands_metric_defaults_are_the_options_defaults():
    """argparse reads the defaults declared once (metrics.options.DEFAULTS): a command that
    wrote its own would drift from the API and the schema."""
    from cruxflow.cli import build_parser
    from cruxflow.metrics.options import DEFAULTS

    parser = build_parser()
    commands = {"evaluate": ["--dataset", "d", "--run", "r"],
                "crux-eval": ["--run", "r", "--qrel", "q", "--judge", "j"],
                "agreement": [], "meta-eval": ["--judge", "j", "--human", "h"]}
    for command, rest in commands.items():
        args = vars(parser.parse_args([command, *rest]))
        for key in ("eta", "alpha", "density_weight", "relevance_grades"):
            if key in args and not (command == "meta-eval" and key == "alpha"):
                assert args[key] == getattr(DEFAULTS, key), (command, key)

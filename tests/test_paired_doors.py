"""One paired-test policy, every door built from it: ``cruxflow evaluate`` and ``cruxflow
crux-eval`` with several runs, the workflow's significance table (rules/rag.smk, paper_tables)
and the Python API (``cruxflow.compare``) take their defaults from
``cruxflow.metrics.policy.POLICY`` and give the same pairwise p-values for the same runs."""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import cruxflow
from cruxflow.cli import build_parser, main
from cruxflow.data.model import Dataset, Passage, Topic
from cruxflow.metrics import crux_eval, stats
from cruxflow.metrics.evaluate import evaluate_run
from cruxflow.metrics.policy import POLICY, Policy
from cruxflow.paper import significance
from cruxflow.workflow.config import config_schema, with_defaults

ROOT = Path(__file__).resolve().parents[1]

N_TOPICS, N_PASSAGES, N_QUESTIONS = 20, 6, 4
RUNS = ("first", "second", "third")
MEASURES = {"Cov": "Cov@3", "alpha_nDCG_crux": "alpha_nDCG_crux@3", "nDCG": "nDCG@3"}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """20 topics (2^20 sign patterns: the sampled randomization test, its shared signs), six
    rated passages each, three runs ranking them differently."""
    root = tmp_path_factory.mktemp("paired")
    rng = np.random.default_rng(11)
    topics, passages, ratings = {}, {}, {}
    for t in range(N_TOPICS):
        tid = f"q{t:02d}"
        topics[tid] = Topic(tid, f"summary {t}", [f"{tid}:0"], query=f"report {t}",
                            questions=[f"{tid} question {i}?" for i in range(N_QUESTIONS)])
        for p in range(N_PASSAGES):
            pid = f"{tid}:0#{p}"
            passages[pid] = Passage(pid, f"passage {p} of topic {t} " * (p + 1), tid, f"{tid}:0")
            ratings[(tid, pid)] = rng.choice([0, 1, 2, 3, 4, 5], N_QUESTIONS,
                                             p=[.4, .1, .1, .15, .15, .1]).tolist()
    Dataset(topics, {}, passages, ratings).save(root / "data")
    runs = []
    for name in RUNS:
        lines = []
        for tid in topics:
            order = rng.permutation(N_PASSAGES)
            lines += [f"{tid} Q0 {tid}:0#{p} {r} {10 - r} {name}\n"
                      for r, p in enumerate(order, 1)]
        (root / f"{name}.run").write_text("".join(lines))
        runs.append(root / f"{name}.run")
    return root / "data", runs


def workflow_policy() -> Policy:
    """The policy paper_tables.py builds from the config's defaults (rag.significance)."""
    return Policy(**{k: v["default"]
                     for k, v in config_schema()["properties"]["rag"]["properties"]["significance"]
                     ["properties"].items()})


def test_every_door_defaults_to_the_policy():
    for command in ("evaluate", "crux-eval"):
        parser = build_parser(command.replace("-", "_"))
        args = parser.parse_args([command, "--run", "x.run", "--qrel", "q", "--judge", "j"])
        assert Policy(test=args.test, correction=args.correction, resamples=args.resamples,
                      seed=args.seed) == POLICY, command
    assert workflow_policy() == POLICY                              # the workflow's config
    # ... as the workflow fills it in: config.yaml validated, its defaults set, then the
    # Policy paper_tables.py builds from rag.significance
    config = with_defaults(yaml.safe_load((ROOT / "config.yaml").read_text()))
    assert Policy(**config["rag"]["significance"]) == POLICY
    for function in (significance.paired_tests, stats.pairwise_tests, stats.pairwise,
                     stats.paired_p_values):
        assert inspect.signature(function).parameters["policy"].default is POLICY
    assert inspect.signature(crux_eval.compare_runs).parameters["policy"].default is None
    for name in ("test", "correction", "resamples", "seed"):        # None: the policy's
        assert inspect.signature(cruxflow.compare).parameters[name].default is None


def test_cli_workflow_and_api_give_the_same_p_values(case, capsys):
    data, runs = case
    # the CLI
    assert main(["evaluate", "--dataset", str(data), "--run", *map(str, runs), "--k", "3",
                 "--measures", *MEASURES, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["paired_policy"] == POLICY.to_json()
    cli = {(r["measure"], r["a"], r["b"]): r for r in got["paired"]
           if r["measure"] in MEASURES}
    # the API
    report = cruxflow.compare(runs, data, measures=list(MEASURES.values()))
    assert report.policy == POLICY
    api = {(m, r["a"], r["b"]): r for m, name in MEASURES.items()
           for r in report.tests.to_dict("records") if r["measure"] == name}
    # the workflow: per-query values written and read back as rag_metrics.py and
    # paper_tables.py do, then the significance table's function under the config's policy
    per_query = pd.concat([evaluate_run(data, run=run, ks=[3], name=run.stem).per_query
                           for run in runs], ignore_index=True)
    text = io.StringIO()
    per_query.to_csv(text, sep="\t", index=False)
    text.seek(0)
    read = pd.read_csv(text, sep="\t", dtype={"k": str, "topic": str, "system": str})
    table = significance.paired_tests(read, list(MEASURES), systems=list(RUNS),
                                      policy=workflow_policy())
    workflow = {(r["metric"], r["system_a"], r["system_b"]): r
                for r in table.to_dict("records")}
    assert set(cli) == set(api) == set(workflow) and len(cli) == 3 * 3
    sampled = 0
    for key in cli:
        c, a, w = cli[key], api[key], workflow[key]
        assert c["topics"] == a["topics"] == w["n_topics"], key
        assert c["p"] == a["p"] == w["p"], key
        assert c["p_adjusted"] == a["p_adjusted"] == w["p_adjusted"], key
        assert c["diff"] == pytest.approx(a["diff"], abs=1e-12)
        sampled += c["topics"] > 13          # 2^topics > 9,999: drawn, not enumerated
    assert sampled == len(cli)
    assert any(r["p"] < 0.5 for r in cli.values())    # not only p = 1 everywhere
    # another test and correction: still equal, and named
    assert main(["evaluate", "--dataset", str(data), "--run", *map(str, runs), "--k", "3",
                 "--json", "--test", "wilcoxon", "--correction", "bh"]) == 0
    got = json.loads(capsys.readouterr().out)
    report = cruxflow.compare(runs, data, measures=list(MEASURES.values()), test="wilcoxon",
                              correction="bh")
    cov = [r for r in got["paired"] if r["measure"] == "Cov"]
    assert [r["p_adjusted"] for r in cov] == list(report.tests.p_adjusted[:3])
    assert {(r["test"], r["correction"]) for r in cov} == {("wilcoxon", "bh")}


def test_evaluate_compares_runs_in_every_mode(tmp_path, capsys):
    # --qrel with --judge and no passage texts: the authors' script's measures are compared
    paper = Path(__file__).parent / "data" / "crux" / "paper"
    runs = [paper / f"{s}.run" for s in ("bm25", "dr_rankfirst", "oracle")]
    assert main(["evaluate", "--qrel", str(paper / "testb_div_qrels.txt"), "--judge",
                 str(paper / "testb_judgements.jsonl"), "--run", *map(str, runs),
                 "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "paired tests between every pair of systems" in out
    assert POLICY.describe("measure of the authors' script") in " ".join(out.split())
    paired = pd.read_csv(tmp_path / "out" / "paired.tsv", sep="\t")
    assert set(paired.source) == {"crux_eval"} and len(paired) == 3 * 5
    assert {(a, b) for a, b in zip(paired.a, paired.b, strict=True)} == {
        ("bm25", "dr_rankfirst"), ("bm25", "oracle"), ("dr_rankfirst", "oracle")}
    # equal to crux-eval's own comparison of the same runs
    rows = crux_eval.compare_runs(crux_eval.crux_eval_runs(
        runs, paper / "testb_div_qrels.txt", paper / "testb_judgements.jsonl"))
    assert list(paired.p) == [r["p"] for r in rows]
    # --test none: no comparison
    assert main(["evaluate", "--qrel", str(paper / "testb_div_qrels.txt"), "--judge",
                 str(paper / "testb_judgements.jsonl"), "--run", *map(str, runs), "--test",
                 "none"]) == 0
    assert "paired tests" not in capsys.readouterr().out

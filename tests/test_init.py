"""`cruxflow init`: a project for one's own documents with the workflow's own defaults, and the
walk-through of docs/own-data.md run for real."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from cruxflow.cli import main
from cruxflow.workflow.config import fill_format_defaults, retrievers, with_defaults
from cruxflow.workflow.project import REPLACED

ROOT = Path(__file__).resolve().parents[1]


def _drop(config: dict, dotted: str) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        config = config[key]
    config.pop(last, None)


def resolved(config: dict) -> dict:
    return fill_format_defaults(with_defaults(copy.deepcopy(config)))


@pytest.mark.parametrize("backend", ["served", "smollm2", "vllm"])
def test_project_config_has_the_workflow_defaults(tmp_path, capsys, backend):
    assert main(["init", str(tmp_path / "p"), "--backend", backend]) == 0
    printed = capsys.readouterr().out
    assert f"snakemake -s {ROOT / 'Snakefile'} --directory . --configfile config.yaml " \
           "--replace-workflow-config" in printed
    project = yaml.safe_load((tmp_path / "p" / "config.yaml").read_text())
    workflow = yaml.safe_load((ROOT / "config.yaml").read_text())
    mine, theirs = resolved(project), resolved(workflow)
    assert mine["llm"]["backend"] == backend and backend in mine["llm"]["backends"]
    assert mine["datasets"]["own"]["format"] == "documents"
    assert mine["datasets"]["own"]["generate"] is True
    assert mine["rag"]["datasets"] == ["own"]
    # what --replace-workflow-config lost before: SPLADE, MMR, k = 20
    assert retrievers(mine) == ["bm25", "dense", "splade"]
    assert list(mine["retrieval"]["rerankers"]) == ["mmr"]
    assert mine["metrics"]["context_sizes"] == ["oracle", 10, 20]
    # every value but the replaced ones, defaults filled in, is the workflow's
    for dotted in REPLACED:
        _drop(mine, dotted)
        _drop(theirs, dotted)
    assert mine == theirs


def test_served_backend_and_commented_alternatives(tmp_path):
    topics = tmp_path / "in" / "topics.jsonl"   # --input must exist
    topics.parent.mkdir()
    topics.write_text("")
    assert main(["init", str(tmp_path), "--dataset-name", "mine", "--input", str(topics)]) == 0
    text = (tmp_path / "config.yaml").read_text()
    config = yaml.safe_load(text)
    served = config["llm"]["backends"]["served"]
    assert (served["kind"], served["base_url"]) == ("openai", "http://127.0.0.1:8080/v1")
    assert config["llm"]["backends"]["smollm2"]["kind"] == "llamacpp"
    assert "vllm" not in config["llm"]["backends"] and "#   kind: vllm" in text
    assert "cruxflow llm-serve --port 8080" in text
    assert config["datasets"] == {"mine": {"format": "documents",
                                           "input": str(topics), "prefix": "mine"}}


def test_init_refuses_to_overwrite(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    before = (tmp_path / "config.yaml").read_text()
    assert main(["init", str(tmp_path), "--backend", "smollm2"]) == 2
    assert "config.yaml: exists: refusing to overwrite it" in capsys.readouterr().err
    assert (tmp_path / "config.yaml").read_text() == before
    assert main(["init", str(tmp_path), "--backend", "smollm2", "--force"]) == 0
    assert "backend: smollm2" in (tmp_path / "config.yaml").read_text()


def test_input_is_read_from_where_the_user_stands(tmp_path, monkeypatch, capsys):
    """``init proj --input mydocs`` reads ./mydocs, not proj/mydocs, and writes it into the
    config as the workflow reads it, from the project folder (../mydocs); an absolute path is
    kept; a path that is only inside the project is refused, naming the current folder."""
    (tmp_path / "mydocs" / "t1").mkdir(parents=True)
    (tmp_path / "mydocs" / "t1" / "a.txt").write_text("Some text.\n")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "a/proj", "--input", "mydocs", "--backend", "smollm2"]) == 0
    out = capsys.readouterr().out
    config = yaml.safe_load((tmp_path / "a/proj/config.yaml").read_text())
    assert config["datasets"]["own"]["input"] == "../../mydocs"
    assert (tmp_path / "a/proj" / "../../mydocs").resolve() == (tmp_path / "mydocs").resolve()
    assert "the config reads your input mydocs as ../../mydocs, relative to a/proj" in out
    assert main(["init", "b", "--input", str(tmp_path / "mydocs")]) == 0
    assert yaml.safe_load((tmp_path / "b/config.yaml").read_text())["datasets"]["own"][
        "input"] == str(tmp_path / "mydocs")
    (tmp_path / "c" / "inside").mkdir(parents=True)
    assert main(["init", "c", "--input", "inside"]) == 2
    err = capsys.readouterr().err
    assert "inside: no such file or folder" in err and f"current folder, {tmp_path}" in err
    assert not (tmp_path / "c/config.yaml").exists()


def test_bad_name_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["init", str(tmp_path), "--dataset-name", "my data"])
    assert exit_.value.code == 2 and not (tmp_path / "config.yaml").exists()


@pytest.mark.workflow
def test_walk_through(own_project):
    """docs/own-data.md's and the README's walk-through, run as they write it (the session's
    ``own_project``, which the docs harness reuses): init with the example corpus and the
    packaged SmolLM2 in process, then snakemake up to the context metrics of every retriever
    and reranker."""
    project = own_project
    target = "results/metrics/own/eta3/context_metrics.md"
    topics = {t["topic_id"]: t for t in map(json.loads, (project / "results/data/own/topics.jsonl")
                                             .read_text().splitlines())}
    given = (project / "data/president/questions.txt").read_text().split("\n")
    assert topics["president"]["questions"] == [q for q in given if q]
    assert topics["president"]["query"] == " ".join(
        (project / "data/president/request.txt").read_text().split())
    assert 1 <= len(topics["congress"]["questions"]) <= 3 and topics["congress"]["query"]
    assert "1 topics bring their sub-questions: not generated for them" in \
        (project / "logs/subquestions/own.log").read_text()
    calls = json.loads((project / "logs/subquestions/own.calls.json").read_text())
    # the congress topic only: one request, asked again while its output does not parse
    config = with_defaults(yaml.safe_load((project / "config.yaml").read_text()))
    assert 1 <= calls["requests"] <= config["llm"]["attempts"]
    ratings = [json.loads(x) for x in
               (project / "results/data/own/answerability.jsonl").read_text().splitlines()]
    assert {r["topic_id"] for r in ratings} == {"congress", "president"}
    assert all(len(r["ratings"]) == len(topics[r["topic_id"]]["questions"]) for r in ratings)
    # no summary, so no rating of y*
    assert (project / "results/data/own/reference_ratings.jsonl").read_text() == ""
    table = (project / target).read_text()
    # every first stage, each with MMR, at the workflow's k = |Z*|, 10 and 20, on both topics
    for system in ("bm25", "dense", "splade", "bm25+mmr", "dense+mmr", "splade+mmr"):
        for k in ("oracle", "10", "20"):
            assert re.search(rf"^\| {re.escape(system)} +\| {k} +\| +2 \|", table, re.M), \
                (system, k, table)


@pytest.mark.workflow
def test_walk_through_summary_flags_the_content(own_project):
    """The walk-through's content, written by the packaged 135M model (the session's
    ``own_project``, not run again): the summary flags it as unfit for conclusions, naming the
    checks that failed. What was checked is counted from the outputs themselves (every passage,
    congress's request and sub-questions: president brings its own), and a flagged passage's
    named words are looked up by hand in its text and its document's."""
    from cruxflow.paper.summary import summary

    text = summary(own_project)
    unfit = [line.strip() for line in text.splitlines() if "not fit for conclusions" in line]
    assert len(unfit) == 1 and unfit[0].startswith("own: the generated content is not fit"), text
    assert "passages unsupported_facts" in unfit[0] and "8B parameters or more" in unfit[0]
    generated = own_project / "results/generated/own"
    passages = [json.loads(x) for p in sorted((generated / "passages").glob("*.jsonl"))
                for x in p.read_text().splitlines()]
    questions = {r["topic_id"]: r["questions"] for r in map(
        json.loads, (generated / "subquestions.jsonl").read_text().splitlines())}
    line = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"^  own +(\S+) +(\d+) of (\d+) (?:passages|report requests|sub-questions) ", text,
        re.M)}
    assert line["passages"][1] == len(passages)
    assert line["report_requests"][1] == 1
    assert line["subquestions"][1] == len(questions["congress"])
    assert re.search(r"^  own +subquestions +\d of 1 topics have fewer", text, re.M)
    # the first flagged passage: each word the summary names is in the passage, not in the
    # document it was written from
    example = re.search(r"e\.g\. (\S+#\d+): (.+) not in (\S+)$", text, re.M)
    pid, named, doc_id = example.group(1), example.group(2).split(", "), example.group(3)
    passage = next(p for p in passages if p["id"] == pid)
    topic, index = doc_id.split(":")
    source = sorted((own_project / "data" / topic).glob("*.txt"))
    source = [p for p in source if p.stem not in ("request", "questions", "reference")]
    document = source[int(index)].read_text()
    for word in named:
        assert word in passage["contents"].replace(",", ""), (word, passage)
        assert not re.search(rf"\b{re.escape(word)}\b", document.replace(",", ""), re.I), word

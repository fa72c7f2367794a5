"""The workflow config's format-dependent defaults and its checks across keys
(cruxflow.workflow.config), on small configs validated against the schema as common.smk does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from cruxflow.stages.ratings import rating_options
from cruxflow.workflow.config import (
    ConfigError,
    config_schema,
    corpora,
    fill_format_defaults,
    locate,
    parity_settings,
    problems,
    rated_datasets,
    resolve,
    with_defaults,
)

REPO = Path(__file__).resolve().parents[1]


def make(**sections) -> dict:
    """A schema-valid config with its defaults filled in: one raw Multi-News dataset ``mn``
    unless ``datasets`` is given, plus the given sections."""
    config = {"datasets": {"mn": {"format": "multinews", "input": "mn.jsonl"}}, **sections}
    return with_defaults(config)


def raises_schema(build, **sections) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        build(**sections)
    return caught.value


def raises(config: dict) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        resolve(config)
    return caught.value


CRUX = {"format": "crux", "input": "crux"}
MN = {"format": "multinews", "input": "mn.jsonl"}


# --- schema validation with defaults


def test_defaults_are_filled_inside_every_entry_and_not_shared():
    config = make(datasets={"a": dict(MN), "b": dict(CRUX)},
                  beyond={"udcg": {"u": {"questions": "u.jsonl"}}})
    # nested defaults: schema "human_labels": {} then its "reports": null inside it
    assert config["datasets"]["a"]["human_labels"] == {"reports": None, "passages": None}
    assert config["datasets"]["a"]["prefix"] is None    # the format's: see below
    assert config["llm"]["judgment"]["top_logprobs"] == 20
    # defaults behind a $ref (definitions/udcg_job): its file fields; the options' defaults
    # (the paper's gamma of 1/3) live in UdcgOptions only, so the schema fills none
    assert config["beyond"]["udcg"]["u"]["theta"] is None
    assert "gamma" not in config["beyond"]["udcg"]["u"]
    config["datasets"]["a"]["human_labels"]["reports"] = "x.jsonl"
    assert config["datasets"]["b"]["human_labels"]["reports"] is None


def test_a_schema_violation_names_its_key_path():
    with pytest.raises(ConfigError) as caught:
        with_defaults({"datasets": {"mn": {"format": "trec", "input": "x"}}})
    assert caught.value.keys == ["datasets.mn.format"]
    assert "datasets.mn.format" in str(caught.value)


@pytest.mark.parametrize("path", ["config.yaml", "presets/paper.yaml"])
def test_defaults_match_snakemakes_validate(path, tmp_path):
    """An independent route: Snakemake's own validate fills in the same defaults (from the
    schema as the workflow loads it: the stored file with the format registry's keys)."""
    from snakemake.utils import validate

    schema = tmp_path / "config.schema.json"
    schema.write_text(json.dumps(config_schema()))
    config = yaml.safe_load((REPO / path).read_text())
    theirs = copy.deepcopy(config)
    validate(theirs, str(schema), set_default=True)
    assert with_defaults(config) == theirs


@pytest.mark.parametrize("path", ["config.yaml", "presets/paper.yaml"])
def test_shipped_configs_resolve(path):
    config = resolve(with_defaults(yaml.safe_load((REPO / path).read_text())))
    assert all(isinstance(d["generate"], bool) for d in config["datasets"].values())


# --- format-dependent defaults


@pytest.mark.parametrize(("fmt", "generate", "n_questions", "prefix"), [
    ("multinews", True, 10, "multi_news-test"), ("multinews-src", True, 10, "multi_news-test"),
    ("duc2004", True, 15, "duc04-test"), ("crux", False, 10, None),
    ("documents", True, 10, "own"), ("nuggets", False, 10, None),
])
def test_format_dependent_defaults(fmt, generate, n_questions, prefix):
    # The paper (Sec. 3.1): 15 sub-questions per DUC 2004 topic, 10 per Multi-News topic; the
    # formats that come rated (crux, nuggets) are not generated; topic ids as ingest names them
    config = resolve(make(datasets={"d": {"format": fmt, "input": "x"}}))
    assert config["datasets"]["d"]["generate"] is generate
    assert config["datasets"]["d"]["n_questions"] == n_questions
    assert config["datasets"]["d"]["prefix"] == prefix


def test_explicit_values_win_over_format_defaults():
    d = {"format": "duc2004", "input": "x", "generate": False, "n_questions": 7}
    config = resolve(make(datasets={"d": d}))
    assert config["datasets"]["d"]["generate"] is False
    assert config["datasets"]["d"]["n_questions"] == 7


def test_rated_datasets_and_corpora():
    config = resolve(make(
        datasets={"mn": dict(MN), "duc": {"format": "duc2004", "input": "d", "generate": False},
                  "cx": {**CRUX, "corpus": "shared"}, "tr": {**MN, "corpus": "shared"}},
        corpora={"shared": {"datasets": ["cx", "tr"]}}))
    # duc is raw and not generated: no ratings
    assert rated_datasets(config) == ["mn", "cx", "tr"]
    assert corpora(config) == {"shared": ["cx", "tr"], "mn": ["mn"], "duc": ["duc"]}


# --- one case per check


def test_crux_format_cannot_be_generated():
    e = raises(make(datasets={"c": {**CRUX, "generate": True}}))
    assert e.keys == ["datasets.c.generate"]
    e = raises(make(datasets={"n": {"format": "nuggets", "input": "n", "generate": True}}))
    assert e.keys == ["datasets.n.generate"] and "nuggets format comes rated" in str(e)


def test_an_option_the_format_does_not_read_is_refused():
    # set in vain it would be skipped in silence: each one named under its key
    e = raises(make(datasets={"c": {**CRUX, "min_docs": 3, "prefix": "x",
                                    "number_like": "p.jsonl"},
                              "m": {**MN, "judge": "r.jsonl", "count_empty_documents": True}}))
    assert e.keys == ["datasets.c.prefix", "datasets.c.min_docs", "datasets.c.number_like",
                      "datasets.m.judge"]
    assert "does not apply to the crux format (it applies to duc2004)" in str(e)


def test_unknown_dataset_backend():
    e = raises(make(datasets={"mn": {**MN, "llm_backend": "gpt"}}))
    assert e.keys == ["datasets.mn.llm_backend"] and "'gpt'" in str(e)


def test_default_backend_missing_for_a_generated_dataset():
    e = raises(make(llm={"backend": "gpt"}))
    assert e.keys == ["datasets.mn.llm_backend"]
    assert "llm.backend" in str(e)


def test_a_dataset_that_calls_no_llm_needs_no_backend():
    # CRUX data comes rated: no LLM stage, no RAG, so an unknown default backend is unused.
    config = fill_format_defaults(make(datasets={"c": dict(CRUX)}, llm={"backend": "gpt"}))
    assert problems(config) == []


def test_corpus_named_like_a_dataset():
    e = raises(make(corpora={"mn": {"datasets": ["mn"]}}))
    assert e.keys == ["corpora.mn"]


def test_corpus_with_an_unknown_member():
    e = raises(make(corpora={"all": {"datasets": ["mn", "duc"]}}))
    assert e.keys == ["corpora.all.datasets"] and "'duc'" in str(e)


def test_dataset_names_an_unknown_corpus():
    e = raises(make(datasets={"mn": {**MN, "corpus": "all"}}))
    assert e.keys == ["datasets.mn.corpus"]


def test_runs_for_an_unknown_dataset():
    e = raises(make(runs={"duc": {"bm25": "bm25.run"}}))
    assert e.keys == ["runs.duc"]


def test_rag_context_size_outside_the_metrics_sizes():
    e = raises(make(metrics={"context_sizes": ["oracle", 10]},
                    rag={"datasets": ["mn"], "context_sizes": ["oracle", 20]}))
    assert e.keys == ["rag.context_sizes"] and "20" in str(e)


def test_rag_sizes_are_not_checked_without_rag_datasets():
    # The schema's defaults disagree (metrics: oracle, 10; rag: oracle, 10, 20), and a config
    # that generates nothing must not fail on that.
    config = resolve(make())
    assert config["rag"]["context_sizes"] == ["oracle", 10, 20]


@pytest.mark.parametrize("dataset", [
    {**MN, "generate": False},      # raw and not generated: no ratings
    {**CRUX, "evaluate": False},    # rated but only lends its passages
])
def test_rag_dataset_must_be_rated_and_evaluated(dataset):
    e = raises(make(datasets={"d": dataset}, metrics={"context_sizes": ["oracle", 10, 20]},
                    rag={"datasets": ["d"]}))
    assert e.keys == ["rag.datasets"]


def test_rag_dataset_that_does_not_exist():
    e = raises(make(metrics={"context_sizes": ["oracle", 10, 20]}, rag={"datasets": ["duc"]}))
    assert e.keys == ["rag.datasets"] and "'duc'" in str(e)


def test_rag_topic_lists_name_rag_datasets():
    e = raises(make(metrics={"context_sizes": ["oracle", 10, 20]},
                    rag={"datasets": ["mn"], "topics": {"duc": "duc.txt"}}))
    assert e.keys == ["rag.topics.duc"]
    resolve(make(metrics={"context_sizes": ["oracle", 10, 20]},
                 rag={"datasets": ["mn"], "topics": {"mn": "mn.txt"}}))


def test_locate_finds_files_shipped_with_the_workflow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = "presets/paper_rag_topics/multi_news-test.txt"
    assert locate(shipped, REPO) == str(REPO / shipped)
    (tmp_path / "presets/paper_rag_topics").mkdir(parents=True)
    (tmp_path / shipped).write_text("mine\n")
    assert locate(shipped, REPO) == shipped           # the working directory's own copy first
    assert locate("nowhere.txt", REPO) == "nowhere.txt"


def test_paper_preset_sets_the_authors_choices():
    # docs/paper-parity.md: what presets/paper.yaml changes against our defaults
    config = resolve(with_defaults(yaml.safe_load((REPO / "presets/paper.yaml").read_text())))
    got = parity_settings(config)
    assert got["metrics"]["relevance_grades"] == "3-2-1"
    assert got["metrics"]["tokenizer"].endswith("tokenizer.json")
    assert got["ratings"]["decoding"] == "free" and got["ratings"]["free_max_tokens"] == 5
    assert got["ratings"]["layout"] == "paper"   # Fig. 8 as printed, question first
    # LANCER's backend applies the chat template, as the LANCER authors did; CRUX's do not.
    lancer = config["retrieval"]["rerankers"]["LANCER"]["llm_backend"]
    assert got["endpoints"].pop(lancer) == "chat"
    assert set(got["endpoints"].values()) == {"completion"}
    assert got["passages"] == {"max_document_words": 1024, "chunk_words": 512,
                               "max_passages": 3, "distractors": "llm"}   # every document
    for name, d in got["datasets"].items():
        assert d["count_empty_documents"] and d["chunk_documents"], name
    assert got["datasets"]["multi_news-test"]["max_topics"] == 5000
    assert got["datasets"]["multi_news-train"]["max_topics"] is None
    assert got["datasets"]["duc04-test"]["prefix"] == "duc04-testb"
    assert got["rag_topics"] == {
        "multi_news-test": "presets/paper_rag_topics/multi_news-test.txt"}


def test_chunks_no_longer_than_the_length_that_cuts():
    e = raises(make(llm={"passages": {"max_document_words": 400, "chunk_words": 512}}))
    assert e.keys == ["llm.passages.chunk_words"]


def test_paper_choices_are_options_with_our_defaults():
    config = resolve(make())
    d = config["datasets"]["mn"]
    assert (d["count_empty_documents"], d["chunk_documents"]) == (False, False)
    assert config["llm"]["passages"]["max_passages"] is None
    assert config["llm"]["ratings"]["decoding"] == "constrained"
    assert config["llm"]["ratings"]["layout"] == "paper"
    assert config["metrics"]["relevance_grades"] == "2-1"
    assert config["rag"]["topics"] == {}


def test_rating_options_reach_passage_ratings_and_report_judging():
    # workflow_scripts/ratings.py and rag_judge.py both pass rating_options(llm) on: the
    # layout chosen in the config is the one both use, with the other options beside it.
    config = resolve(make(llm={"ratings": {"layout": "passage_first", "decoding": "free"}}))
    assert rating_options(config["llm"]) == {"max_context_words": 2048, "decoding": "free",
                                             "free_max_tokens": 5, "layout": "passage_first"}
    assert rating_options(resolve(make())["llm"])["layout"] == "paper"
    e = raises_schema(make, llm={"ratings": {"layout": "question_first"}})
    assert e.keys == ["llm.ratings.layout"]
    for script in ("ratings.py", "rag_judge.py"):
        assert "**rating_options(" in (REPO / "workflow_scripts" / script).read_text(), script


def test_human_report_labels_need_rag():
    e = raises(make(datasets={"mn": {**MN, "human_labels": {"reports": "t1.jsonl"}}}))
    assert e.keys == ["datasets.mn.human_labels.reports"]


@pytest.mark.parametrize("role", ["generator", "judge"])
def test_unknown_rag_backends(role):
    e = raises(make(metrics={"context_sizes": ["oracle", 10, 20]},
                    rag={"datasets": ["mn"], role: "gpt"}))
    assert e.keys == [f"rag.{role}"]


def test_listwise_reranker_backend():
    listwise = {"kind": "listwise", "model": "m", "llm_backend": "gpt"}
    e = raises(make(retrieval={"rerankers": {"zephyr": listwise}}))
    assert e.keys == ["retrieval.rerankers.zephyr.llm_backend"]
    # rank_llm brings its own model; the LLM backends are not its business
    resolve(make(retrieval={"rerankers": {"zephyr": {**listwise, "engine": "rank_llm"}}}))


def test_beyond_backend_is_checked_when_a_job_uses_it():
    resolve(make(beyond={"backend": "gpt"}))   # no jobs: nothing calls it
    e = raises(make(beyond={"backend": "gpt", "kpr": {"k": {"questions": "k.jsonl"}}}))
    assert e.keys == ["beyond.backend"]


def test_every_problem_is_listed_at_once():
    e = raises(make(datasets={"c": {**CRUX, "generate": True, "corpus": "all"}},
                    runs={"x": {}}))
    assert e.keys == ["datasets.c.generate", "datasets.c.corpus", "runs.x"]
    assert str(e).count("\n") == 3   # a header line, then one line per problem


# --- the one check, before Snakemake builds its DAG (issue 31)


def test_every_schema_problem_gets_one_short_line_under_its_key():
    with pytest.raises(ConfigError) as caught:
        with_defaults({"datasets": {"mn": {"format": "trec", "input": 7}},
                       "metrics": {"alpha": "high", "eta": 9}})
    assert caught.value.keys == ["datasets.mn.format", "datasets.mn.input", "metrics.alpha",
                                 "metrics.eta"]
    assert all(len(line) < 260 for line in str(caught.value).splitlines())
    assert "$schema" not in str(caught.value) and "description" not in str(caught.value)


def test_the_check_finds_nan_and_every_file_the_config_names_that_is_missing(tmp_path,
                                                                            monkeypatch):
    from cruxflow.workflow.config import check

    monkeypatch.chdir(tmp_path)   # the working directory, as Snakemake's
    (tmp_path / "mn.jsonl").write_text("")
    config = {"datasets": {"mn": {"format": "multinews", "input": "mn.jsonl"},
                           "gone": {"format": "crux", "input": "no/crux"}},
              "runs": {"mn": {"bm25x": "runs/mine.run"}},
              "metrics": {"alpha": float("nan"), "tokenizer": "tok/tokenizer.json"},
              "beyond": {"kpr": {"k": {"questions": "k.jsonl"}}}}
    with pytest.raises(ConfigError) as caught:
        check(config, tmp_path / "elsewhere")
    assert caught.value.keys == ["metrics.alpha", "datasets.gone.input", "runs.mn.bm25x",
                                 "beyond.kpr.k.questions", "metrics.tokenizer"]
    assert "no such file or directory: runs/mine.run" in str(caught.value)


@pytest.mark.workflow
def test_snakemake_prints_the_same_problems_one_per_line_before_any_dag(tmp_path):
    import os
    import subprocess
    import sys

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["metrics"]["alpha"] = float("nan")
    config["runs"] = {"demo-crux": {"mine": str(tmp_path / "missing.run")}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                           "--configfile", str(tmp_path / "bad.yaml")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out
    assert "cruxflow: invalid config:\n  metrics.alpha: nan is not a finite number\n" \
        f"  runs.demo-crux.mine: no such file or directory: {tmp_path}/missing.run" in out
    assert "Building DAG" not in out and "MissingInputException" not in out


def test_an_alias_bomb_is_refused_before_the_schema_walks_it():
    import time

    from cruxflow.workflow.config import check

    text = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i > 1 else '0'] * 9)}]\n"
                   for i in range(1, 10))   # 9**9 = 387 million values once expanded
    config = {"datasets": {"mn": {"format": "multinews", "input": "mn.jsonl"}},
              "bomb": yaml.safe_load(text)}
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="alias bomb"):
        check(config)
    assert time.perf_counter() - start < 5


# --- issue 55: configs read strictly ---------------------------------------------------------


def test_a_key_that_is_not_a_string_is_refused_whatever_read_the_config():
    """Snakemake reads the config with its own loader: a dataset named yes reaches the check
    as the key True, which the schema's name pattern (strings only) lets through."""
    from cruxflow.workflow.config import check

    config = {"datasets": {True: {"format": "crux", "input": "crux"}},
              "runs": {"d": {1.0: "r.run"}}}
    with pytest.raises(ConfigError) as caught:
        check(config)
    assert caught.value.problems == [
        ("datasets.True", "the key True is not a string (YAML reads yes, no, on, off, true and "
                          "false unquoted as booleans and 1.0 as a number: quote a name: 'yes')"),
        ("runs.d.1.0", "the key 1.0 is not a string (YAML reads yes, no, on, off, true and "
                       "false unquoted as booleans and 1.0 as a number: quote a name: '1.0')")]


def test_a_config_nested_5000_deep_is_one_problem_not_a_recursion_error():
    from cruxflow.workflow.config import check

    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ConfigError, match=r"\(top level\): nested more than 100 deep"):
        check({"datasets": {}, "x": deep})


@pytest.mark.parametrize("cache, problem", [
    ("crux/topics.jsonl", "crux/topics.jsonl lies inside the input datasets.d.input (crux)"),
    ("crux", "crux is the input datasets.d.input (crux)"),
    ("notes.txt", "is not an SQLite database (an LLM cache): notes.txt"),
    ("folder", "is a folder, expected an SQLite file (or none yet): folder"),
    ("notes.txt/c.sqlite", "a file stands where its folder should be: notes.txt/c.sqlite"),
    ("new/c.sqlite", None),      # not there yet: the workflow makes it
    ("empty.sqlite", None),      # a 0-byte file SQLite makes a database of
    ("cache.sqlite", None),      # an SQLite file
])
def test_llm_cache_is_an_sqlite_database_or_absent_never_an_input(cache, problem, tmp_path,
                                                                   monkeypatch):
    import shutil
    import sqlite3

    from cruxflow.workflow.config import check

    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "resources" / "demo" / "crux", tmp_path / "crux")
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.sqlite").write_bytes(b"")
    sqlite3.connect(tmp_path / "cache.sqlite").execute("CREATE TABLE t (x)").connection.close()
    config = {"datasets": {"d": {"format": "crux", "input": "crux"}}, "llm": {"cache": cache}}
    for data_optional in (False, True):   # the workflow's check, and plan's
        if problem is None:
            check(copy.deepcopy(config), tmp_path, data_optional=data_optional)
            continue
        with pytest.raises(ConfigError) as caught:
            check(copy.deepcopy(config), tmp_path, data_optional=data_optional)
        [(key, message)] = caught.value.problems
        assert key == "llm.cache" and message.startswith(problem), message


@pytest.mark.workflow
@pytest.mark.parametrize("text, expect", [
    ("datasets:\n  demo-crux: {format: crux, input: resources/demo/crux}\nmetrics:\n  eta: 3\n"
     "  eta: 5\n", "line 5, column 3: invalid YAML: key 'eta' is given twice (lines 4 and 5)"),
    ("datasets:\n  yes: {format: crux, input: resources/demo/crux}\n",
     "line 2, column 3: invalid YAML: key 'yes' is read by YAML as a boolean, not as a name: "
     "quote it ('yes')"),
    ("datasets:\n  demo-crux: {format: crux, input: resources/demo/crux}\nx: "
     + "[" * 5000 + "]" * 5000 + "\n", "invalid YAML: nested more than 100 deep"),
])
def test_the_workflow_reads_its_config_as_strictly_as_plan(text, expect, tmp_path):
    """The real Snakemake on the workflow, its config.yaml with a key given twice, a dataset
    named yes, a list nested 5,000 deep: one line before Snakemake's own reader (which lets
    the last key win, and fails on the nesting with a RecursionError)."""
    import os
    import subprocess
    import sys

    (tmp_path / "config.yaml").write_text(text)
    (tmp_path / "resources").symlink_to(REPO / "resources")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--directory", str(tmp_path), "-n", "--cores", "1"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out and "RecursionError" not in out, out
    ours = [line for line in out.splitlines() if line.startswith("cruxflow")]
    assert ours == [f"cruxflow: invalid config: config.yaml: {expect}"] or (
        len(ours) == 1 and expect in ours[0]), out

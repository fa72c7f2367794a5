"""Finished workflow runs that several test files use, each made once per session (the
fixtures are registered in conftest.py): the demo's test slice (tests/test_workflow.py, the
docs' ``reuse="demo"``) and the README's / docs/own-data.md's example project
(tests/test_init.py, the docs' ``reuse="own-project"``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def snakemake(workdir: Path, *args, check=True):
    # one thread a job, as scripts/demo.sh on 2 cores: a 2-thread job (encoders, rerankers)
    # would otherwise wait until no LLM job runs
    cmd = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "2", "--max-threads", "1",
           *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


# The test slice of the default config: the LLM stages run for real (SmolLM2 on the CPU) on
# the first 2 demo topics, 3 sub-questions each and 4 distractor articles, about 6.5 minutes
# on 2 free cores (391 s on 2026-11-27; 10-11 minutes beside the other test worker).
N_TOPICS, N_QUESTIONS, N_DISTRACTORS = 2, 3, 4
RAG_MAX_TOKENS = 48
RAG_CONTEXT_WORDS = 200


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
    # RAG on the 2 generated topics: short reports from short prompts (the generator reads the
    # first RAG_CONTEXT_WORDS words of a context: half the prompt tokens of 2,048 words, 40%
    # less CPU a rag_generate job), k in {|Z*|, 10}, the demo's 1 sample per retriever
    config["rag"].update(max_tokens=RAG_MAX_TOKENS, max_context_words=RAG_CONTEXT_WORDS,
                         context_sizes=["oracle", 10],
                         bootstrap=50, significance={"resamples": 200})
    config["metrics"] = {**config["metrics"], **metrics}
    # Beyond CRUX: UDCG from the published-style utilities in the file (no LLM), support with
    # the LLM judging only the unlabelled citations, KPR judging given key points (recall only).
    beyond = REPO / "resources/demo/beyond"
    config["beyond"] = {
        "udcg": {"demo-nq": {"questions": str(beyond / "udcg_nq.json"), "utility": "given"}},
        "support": {"demo-trec": {"answers": str(beyond / "support_answers.jsonl"),
                                  "passages": str(beyond / "support_passages.jsonl"),
                                  "judge_pairs": "missing"}},
        "kpr": {"demo-long2rag": {"questions": str(beyond / "kpr_questions.jsonl"),
                                  "key_points": str(REPO / "tests/data/kpr/key_points.jsonl"),
                                  "precision": False, "judge_max_tokens": 8,
                                  "group_by": ["domain"]}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir / "config.yaml"


def make_demo_run(work: Path):
    """The demo slice above, run in ``work``; returns the snakemake process."""
    work.mkdir(parents=True, exist_ok=True)
    demo_config(work)
    return snakemake(work)


def built_once(tmp_path_factory, name: str, build):
    """``build(folder)`` run once per test run, in one process or across pytest-xdist's workers
    (scripts/test.sh runs two): the first worker to ask builds under a file lock in the run's
    common folder, the others wait for it and share the result. ``build`` returns what it has to
    tell (JSON); a build that failed fails every worker that asks, with the first one's error,
    and is not tried again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent   # the run's folder, above each worker's own
    folder, done, failed = root / name, root / f"{name}.json", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if done.exists():
            return folder, json.loads(done.read_text())
        if failed.exists():
            raise AssertionError(f"{name}, built by another worker, failed:\n"
                                 + failed.read_text())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            told = build(folder)
        except BaseException as error:
            failed.write_text(str(error))
            raise
        done.write_text(json.dumps(told))
        return folder, told


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The demo slice, run once per test run: tests/test_workflow.py checks it, the docs
    harness reuses it (``reuse="demo"``). Returns (folder, the snakemake process)."""
    def build(work):
        proc = make_demo_run(work)
        return [proc.args, proc.returncode, proc.stdout, proc.stderr]

    work, (args, code, out, err) = built_once(tmp_path_factory, "wf", build)
    return work, subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture(scope="session")
def demo_folder(demo_run):
    return demo_run[0]




# The README's and docs/own-data.md's walk-through, as they write it (keep these in step with
# the docs: a command that differs would find the reused run out of date and run again).
OWN_INIT = ["init", "myproject", "--example", "--backend", "smollm2", "--n-questions", "3"]
OWN_TARGET = "results/metrics/own/eta3/context_metrics.md"


def make_own_project(folder: Path) -> Path:
    """``cruxflow init myproject --example --backend smollm2 --n-questions 3`` in a scratch copy
    of the checkout under ``folder``, then ``snakemake -s ../Snakefile ... --cores 2`` up to the
    dataset's context metrics, with the packaged SmolLM2 in process. Returns the project."""
    import docs_harness

    root = docs_harness.scratch_copy(folder / "cruxflow")
    env = docs_harness.environment(root)
    cruxflow = Path(sys.executable).with_name("cruxflow")
    subprocess.run([str(cruxflow), *OWN_INIT], cwd=root, env=env, check=True,
                   capture_output=True)
    project = root / "myproject"
    proc = subprocess.run([str(SNAKEMAKE), "-s", "../Snakefile", "--directory", ".",
                           "--configfile", "config.yaml", "--replace-workflow-config",
                           "--cores", "2", OWN_TARGET], cwd=project, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project


@pytest.fixture(scope="session")
def own_project(tmp_path_factory):
    """The README's and docs/own-data.md's walk-through, run once per test run:
    tests/test_init.py checks it, the docs harness reuses it (``reuse="own-project"``)."""
    _, project = built_once(tmp_path_factory, "own",
                            lambda folder: str(make_own_project(folder)))
    return Path(project)

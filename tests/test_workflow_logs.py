"""A workflow script that fails writes why into its rule's log (cruxflow.workflow.job's
excepthook): bad input as the one-line error, a bug with its traceback. Run through a real
Snakemake on a two-rule workflow, as the workflow's own rules run their scripts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"

SNAKEFILE = """
rule all:
    input:
        "out/bad.txt",
        "out/bug.txt",


rule bad:
    output:
        "out/bad.txt",
    log:
        "logs/bad.log",
    script:
        "bad.py"


rule bug:
    output:
        "out/bug.txt",
    log:
        "logs/bug.log",
    script:
        "bug.py"
"""

BAD = """
from cruxflow.data.io import read_run
from cruxflow.workflow.job import setup_logging

log = setup_logging(snakemake)
log.info("reading the run")
read_run(snakemake.config["run"])
"""

BUG = """
from cruxflow.workflow.job import setup_logging

log = setup_logging(snakemake)
{}["missing key"]
"""


@pytest.mark.workflow
def test_a_failing_script_writes_its_error_to_the_rule_log(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    (tmp_path / "bug.py").write_text(textwrap.dedent(BUG))
    run = tmp_path / "my.run"
    run.write_text("q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 x tag\n")  # line 2: score 'x'
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([str(SNAKEMAKE), "--cores", "1", "--keep-going",
                           "--config", f"run={run}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    bad = (tmp_path / "logs" / "bad.log").read_text()
    assert "reading the run" in bad
    errors = [line for line in bad.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "Traceback" not in bad
    assert errors[0].endswith(f"error: {run}: line 2: field 'score': score 'x' is not a number")
    bug = (tmp_path / "logs" / "bug.log").read_text()
    assert "failed: 'missing key'" in bug
    assert "Traceback (most recent call last)" in bug and "KeyError: 'missing key'" in bug
    # stderr: the one line for bad input, the usual traceback for the bug
    assert f"error: {run}: line 2" in proc.stderr
    assert "KeyError" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())

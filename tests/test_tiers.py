"""The two tiers' marks have one home (pyproject.toml's markers); the fast tier's filter
(tests/conftest.py) and the guard that keeps the marks exact use those names."""

from __future__ import annotations

import tomllib
from pathlib import Path

import conftest

REPO = Path(__file__).resolve().parents[1]


def declared() -> set[str]:
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return {line.split(":", 1)[0] for line in ini["markers"]}


def test_every_slow_mark_is_declared_and_every_fixture_mark_is_one():
    assert set(conftest.SLOW) <= declared() and set(conftest.CHECKED) <= set(conftest.SLOW)
    assert {m for marks in conftest.FIXTURE_MARKS.values() for m in marks} <= set(conftest.CHECKED)


def test_the_fast_command_is_the_fast_option():
    script = (REPO / "scripts/test.sh").read_text()
    assert "pytest --fast" in script and "--fast" in (REPO / "README.md").read_text()


def test_a_subprocess_is_read_for_what_it_starts():
    started = conftest.started_by
    assert started(["/x/.venv/bin/snakemake", "-s", "Snakefile"]) == {"workflow"}
    assert started(["/x/bin/python3", "-m", "snakemake", "--lint"]) == {"workflow"}
    assert started(["bash", "-c", "cd w && .venv/bin/snakemake -n"]) == {"workflow"}
    assert started("snakemake --cores 2 all") == {"workflow"}
    # a module name among the arguments is not the program
    assert started(["python", "-c", "code", "pyarrow", "snakemake", "java"]) == set()
    assert started(["python", "-m", "cruxflow.cli", "llm-serve", "--port", "1"]) == {"server"}
    assert started(["/x/bin/cruxflow", "llm-serve"]) == {"server"}
    assert started(["/x/bin/cruxflow", "udcg", "--llm-serve"]) == set()
    assert started(["/x/jdk/bin/java", "-cp", "x", "Main"]) == {"jvm"}

"""Tests that change the machine (install system packages, start daemons as root) run only when
asked: ``CRUXFLOW_INVASIVE_TESTS=1``, which scripts/test.sh (and so CI) sets. A plain ``pytest``
in a developer's shell skips them and says how to run them."""

from __future__ import annotations

import os

import pytest

# Finished workflow runs shared by several test files (tests/workflow_runs.py), each made once.
from workflow_runs import demo_folder, demo_run, own_project  # noqa: F401

INVASIVE = "CRUXFLOW_INVASIVE_TESTS"


def pytest_collection_modifyitems(config, items):
    if os.environ.get(INVASIVE) == "1":
        return
    skip = pytest.mark.skip(reason=f"changes the machine (system packages, daemons): run with "
                                   f"{INVASIVE}=1, as scripts/test.sh does")
    for item in items:
        if item.get_closest_marker("invasive"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def docs_timings(request):
    """Every doc command run by tests/test_docs.py, with its time, reported at the end."""
    found: list = []
    request.config.stash[DOCS_TIMINGS] = found
    return found


DOCS_TIMINGS = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash.get(DOCS_TIMINGS, None)
    if not results:
        return
    terminalreporter.section("docs: time per block")
    per_block: dict = {}
    for r in results:
        per_block.setdefault(r.block.where, []).append(r)
    for where, rs in sorted(per_block.items(), key=lambda kv: -sum(r.seconds for r in kv[1])):
        compared = sum(bool(r.command.shown) for r in rs) + (rs[0].block.shown is not None)
        terminalreporter.write_line(f"{sum(r.seconds for r in rs):7.1f} s  {where}  "
                                    f"({len(rs)} commands, {compared} outputs compared)")
    terminalreporter.write_line(f"{sum(r.seconds for r in results):7.1f} s  in all, "
                                f"{len(per_block)} blocks")

"""Tests that change the machine (install system packages, start daemons as root) run only when
asked: ``CRUXFLOW_INVASIVE_TESTS=1``, which scripts/test.sh (and so CI) sets. A plain ``pytest``
in a developer's shell skips them and says how to run them."""

from __future__ import annotations

import os

import pytest

INVASIVE = "CRUXFLOW_INVASIVE_TESTS"


def pytest_collection_modifyitems(config, items):
    if os.environ.get(INVASIVE) == "1":
        return
    skip = pytest.mark.skip(reason=f"changes the machine (system packages, daemons): run with "
                                   f"{INVASIVE}=1, as scripts/test.sh does")
    for item in items:
        if item.get_closest_marker("invasive"):
            item.add_marker(skip)

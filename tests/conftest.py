"""Tests that change the machine (install system packages, start daemons as root) run only when
asked: ``CRUXFLOW_INVASIVE_TESTS=1``, which scripts/test.sh (and so CI) sets. A plain ``pytest``
in a developer's shell skips them and says how to run them.

Whatever the suite starts, it stops: every process started during a session carries the
session's mark in its environment (:data:`MARK`, inherited by children and by the daemons they
start), and at the session's end a process still alive with the mark fails the session, named,
and is then stopped, so that none outlives it (a SLURM cluster, a model server, a browser).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

INVASIVE = "CRUXFLOW_INVASIVE_TESTS"
MARK = "CRUXFLOW_TEST_SESSION"
# Helpers of Python's multiprocessing (and joblib's) in this process: each watches the pipe to
# its parent and ends with it, so none outlives the suite.
WITH_THEIR_PARENT = ("multiprocessing.resource_tracker", "multiprocessing.forkserver",
                     "joblib.externals.loky")


def pytest_collection_modifyitems(config, items):
    if os.environ.get(INVASIVE) == "1":
        return
    skip = pytest.mark.skip(reason=f"changes the machine (system packages, daemons): run with "
                                   f"{INVASIVE}=1, as scripts/test.sh does")
    for item in items:
        if item.get_closest_marker("invasive"):
            item.add_marker(skip)


def pytest_sessionstart(session):
    os.environ[MARK] = uuid.uuid4().hex


def marked_processes(mark: str) -> dict[int, str]:
    """``{pid: command}`` of the processes of this machine whose environment holds
    ``MARK=mark``, but this one and its ancestors (read from /proc; none where there is none,
    or where another user's processes cannot be read)."""
    needle = f"{MARK}={mark}".encode()
    ours, pid = set(), os.getpid()
    while pid > 1:   # this process and the shells or runners above it
        ours.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    found = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) in ours:
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip()
                text = command.decode(errors="replace")
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == os.getpid() and any(h in text for h in WITH_THEIR_PARENT):
                    continue
                found[int(entry.name)] = text[:200]
        except OSError:   # gone meanwhile, or not ours to read
            continue
    return found


def pytest_sessionfinish(session, exitstatus):
    mark = os.environ.get(MARK)
    if not mark:
        return
    deadline = time.monotonic() + 10   # a server stopped at the last teardown may still exit
    while (left := marked_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"  {pid}: {command}" for pid, command in sorted(left.items())]
    message = ("processes started by the tests outlive them (now stopped):\n"
               + "\n".join(lines))
    if reporter is not None:
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    for sig in (signal.SIGTERM, signal.SIGKILL):   # by id, each one checked to be ours
        for pid in list(marked_processes(mark)):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        time.sleep(2)

"""Tests that change the machine (install system packages, start daemons as root) run only when
asked: ``CRUXFLOW_INVASIVE_TESTS=1``, which scripts/test.sh (and so CI) sets. A plain ``pytest``
in a developer's shell skips them and says how to run them.

Whatever the suite starts, it stops: every process started during a session carries the
session's mark in its environment (:data:`MARK`, inherited by children and by the daemons they
start), and at the session's end a process still alive with the mark fails the session, named,
and is then stopped, so that none outlives it (a SLURM cluster, a model server, a browser).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

# Finished workflow runs shared by several test files (tests/workflow_runs.py), each made once.
from workflow_runs import demo_folder, demo_run, own_project  # noqa: F401

INVASIVE = "CRUXFLOW_INVASIVE_TESTS"
MARK = "CRUXFLOW_TEST_SESSION"
# Helpers of Python's multiprocessing (and joblib's) in this process: each watches the pipe to
# its parent and ends with it, so none outlives the suite.
WITH_THEIR_PARENT = ("multiprocessing.resource_tracker", "multiprocessing.forkserver",
                     "joblib.externals.loky")

# snakemake-executor-plugin-slurm runs `scontrol show config` as snakemake starts (every
# snakemake command, whatever its executor). Where SLURM's client is installed but no controller
# answers (this machine after tests/test_slurm.py has installed SLURM and stopped its cluster,
# and CI's from that test on) scontrol retries for 9 s: measured 26 s against 5 s for
# tests/test_rulegraph.py and tests/test_workflow_config.py. The suite's processes read a client
# configuration whose controller refuses at once (tests/data/slurm/no_cluster.conf);
# tests/test_slurm.py gives its cluster and submissions the machine's own (slurm_environment).
NO_CLUSTER = str(Path(__file__).resolve().parent / "data" / "slurm" / "no_cluster.conf")
MACHINE_SLURM_CONF = "CRUXFLOW_MACHINE_SLURM_CONF"
if os.environ.get("SLURM_CONF") != NO_CLUSTER:   # set once: pytest-xdist's workers inherit it
    os.environ[MACHINE_SLURM_CONF] = os.environ.get("SLURM_CONF", "")
    os.environ["SLURM_CONF"] = NO_CLUSTER


def slurm_environment() -> dict[str, str]:
    """This process's environment with the machine's SLURM client configuration (SLURM_CONF as
    it was before the suite set it, or none: SLURM's default file)."""
    env = dict(os.environ)
    machine = env.pop(MACHINE_SLURM_CONF, "")
    if machine:
        env["SLURM_CONF"] = machine
    else:
        env.pop("SLURM_CONF", None)
    return env


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    groups = {}
    for item in items:   # the tiers' marks that a test takes from the fixtures it uses
        info = getattr(item, "_fixtureinfo", None)
        for name, defs in (info.name2fixturedefs.items() if info else ()):
            for mark in FIXTURE_MARKS.get(f"{defs[-1].func.__module__}.{name}", ()):
                item.add_marker(mark)
        group = next((g for g, belongs in XDIST_GROUPS.items() if belongs(item)), None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item.nodeid] = group
        elif "own_project" in getattr(item, "fixturenames", ()):
            groups[item.nodeid] = FIRST   # its own scope, sent right after the demo's group
    # the walk-through project first (pytest-xdist's worker without the "demo" group builds it
    # while the other builds the demo's)
    items.sort(key=lambda i: "own_project" not in getattr(i, "fixturenames", ()))
    if worker := os.environ.get("PYTEST_XDIST_WORKER"):   # for the controller's scheduler
        folder = Path(config.option.basetemp).parent
        (folder / f"{worker}.groups.tmp").write_text(json.dumps(groups))
        (folder / f"{worker}.groups.tmp").replace(folder / f"{worker}{GROUPS_FILE}")
    if config.getoption("--fast"):
        fast = [i for i in items if not any(i.get_closest_marker(m) for m in SLOW)]
        if len(fast) < len(items):
            kept = set(map(id, fast))
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
            items[:] = fast
    if os.environ.get(INVASIVE) == "1":
        return
    skip = pytest.mark.skip(reason=f"changes the machine (system packages, daemons): run with "
                                   f"{INVASIVE}=1, as scripts/test.sh does")
    for item in items:
        if item.get_closest_marker("invasive"):
            item.add_marker(skip)


# Two tiers (docs/testing.md). The slow tier's marks are declared, with what each means,
# in pyproject.toml; ``pytest --fast`` (``bash scripts/test.sh --fast``) leaves out every test
# that carries one. The first four are checked: a test that starts a model, a JVM, a server or
# snakemake without its mark fails, named (pytest_runtest_makereport), so the fast tier stays
# fast and the marks exact. What a test's subprocess starts is seen only where the command
# names it (snakemake, llm-serve, java): a test whose child process loads the model or runs
# snakemake through a script is marked by hand (tests/test_llm_resume.py, test_rulegraph.py).
CHECKED = ("model", "jvm", "server", "workflow")
SLOW = (*CHECKED, "install", "invasive", "docs")


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help=f"the fast tier: leave out the tests marked {', '.join(SLOW)}")


# The fixtures that start one of them ("module.fixture"): every test that uses one takes its
# marks (a module-scoped fixture starts it for the first of its tests only).
FIXTURE_MARKS = {
    **dict.fromkeys(("workflow_runs.demo_run", "workflow_runs.demo_folder",
                     "workflow_runs.own_project"), ("workflow", "model", "jvm")),
    "test_llm.llama": ("model",), "test_llm.server": ("server",),
    "test_llm_hung_server.server": ("server",), "test_quiet_logs.served": ("server",),
    "test_generation.smollm2": ("model",), "test_rerank.mmr": ("model",),
    "test_retrieval.index": ("jvm",), "test_retrieval.dense_at_once": ("model", "jvm"),
    "test_splade.tiny_model": ("model",), "test_splade.index": ("jvm",),
    **dict.fromkeys(("test_rerank_models.monot5_path", "test_rerank_models.flan_path",
                     "test_rerank_models.cross_encoder_path"), ("model",)),
}
_started: set[str] = set()
_torch_noted = False

def _uses_the_demo(item) -> bool:
    """A test of the demo slice's finished run (it runs snakemake in it or copies it), or a
    doc whose blocks copy it (``reuse="demo"``) or serve (the labeling app's fixed port, which
    the README and docs/annotate.md share)."""
    if {"demo_run", "demo_folder"} & set(getattr(item, "fixturenames", ())):
        return True
    if not item.get_closest_marker("docs"):
        return False
    import docs_harness

    path = item.callspec.params.get("path") if hasattr(item, "callspec") else None
    return path is None or any(b.runs and ("serves" in b.marks or b.marks.get("reuse") == "demo")
                               for b in docs_harness.parse(path))


# scripts/test.sh runs the suite in two pytest-xdist workers (--dist loadgroup): the tests of
# one group run in one worker, one after another. "demo": the tests that use the demo slice's
# finished run and the docs that copy it or serve; "machine": the tests that install system
# packages or start daemons. The other docs run in either worker, like any test.
XDIST_GROUPS = {"demo": _uses_the_demo,
                "machine": lambda item: item.get_closest_marker("invasive") is not None}
GROUPS_FILE = ".xdist-groups.json"
# The scheduler sends the demo's group first (its build is the longest chain), then the tests
# that build the walk-through project (marked FIRST: the other worker starts on it at once,
# and the docs that copy it find it built), then the machine's group, then the rest as
# collected.
FIRST = "<first>"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the groups that the workers found. pytest-xdist 3.8 marks a
    group by adding "@group" to a test's nodeid, which pytest 9 ignores (it derives the nodeid
    from the test's id), so its own loadgroup scheduler sees no group: this one reads each
    worker's groups (written at collection, which ends before any scheduling)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = config._tmp_path_factory.getbasetemp()

    class GroupScheduling(LoadScopeScheduling):
        groups: dict | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = {}
                for path in folder.glob(f"*{GROUPS_FILE}"):
                    self.groups.update(json.loads(path.read_text()))
            if nodeid.rfind("@") > nodeid.rfind("]"):   # a pytest-xdist that can mark them
                return nodeid.rsplit("@", 1)[-1]
            group = self.groups.get(nodeid, nodeid)
            return nodeid if group == FIRST else group

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:   # the first assignment: the queue as FIRST's note says
                self.ordered = True
                rank = {"demo": 0, "machine": 2}
                units = sorted(self.workqueue.items(), key=lambda unit: rank.get(
                    unit[0], 1 if self.groups.get(unit[0]) == FIRST else 3))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

        ordered = False

    return GroupScheduling(config, log)


SHELL_WORDS = {"workflow": re.compile(r"(^|[\s/;&|])snakemake(\s|$)"),
               "server": re.compile(r"(^|\s)cruxflow(\.cli)? +llm-serve(\s|$)"),
               "jvm": re.compile(r"(^|[\s/;&|])java(\s|$)")}


def started_by(argv) -> set[str]:
    """The marks that a command (a Popen's argv, or a shell's line) calls for: the program it
    runs (``python -m`` read through), or what a ``sh -c`` line names."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [os.fsdecode(argv)]
    words = [os.fsdecode(w) for w in argv]
    program, rest = Path(words[0]).name, words[1:]
    if program.startswith("python") and rest[:1] == ["-m"] and len(rest) > 1:
        program, rest = rest[1], rest[2:]
    if len(words) == 1 or (program in ("sh", "bash") and rest[:1] == ["-c"]):
        line = words[0] if len(words) == 1 else rest[1]
        return {mark for mark, pattern in SHELL_WORDS.items() if pattern.search(line)}
    marks = {"snakemake": {"workflow"}, "java": {"jvm"}}.get(program, set())
    if program in ("cruxflow", "cruxflow.cli") and rest[:1] == ["llm-serve"]:
        marks = {"server"}
    return marks


def _audit(event, args):
    """What the running test starts, from Python's audit events."""
    if event == "import":
        if args[0] == "jnius":   # pyserini's JVM starts when jnius is imported
            _started.add("jvm")
        elif not _torch_noted:
            _note_torch_modules()
    elif event == "subprocess.Popen":
        _started.update(started_by(args[1]))


def _noting(mark, function):
    def noted(*args, **kwargs):
        _started.add(mark)
        return function(*args, **kwargs)
    return noted


def _note_torch_modules():
    """Every torch model is a ``torch.nn.Module``: note its construction, from the moment torch
    defines the class (an import event while torch is being imported), but not one that a
    module builds as it is imported (pyserini's Lucene searcher does)."""
    global _torch_noted
    module = getattr(sys.modules.get("torch.nn.modules.module"), "Module", None)
    if module is None:
        return
    init = module.__init__

    def noted(*args, **kwargs):
        frame = sys._getframe(1)
        while frame is not None and not frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = frame.f_back
        if frame is None:
            _started.add("model")
        return init(*args, **kwargs)

    module.__init__ = noted
    _torch_noted = True


sys.addaudithook(_audit)
# The doors in our code that every in-process llama.cpp model (a backend's first request, a
# server) and every use of pyserini go through; torch's modules from when torch defines them.
try:
    import cruxflow.llm.llamacpp as _llamacpp

    _llamacpp._params = _noting("model", _llamacpp._params)
except ImportError:   # the llm extra is not installed
    pass
import cruxflow.retrieval.java as _java  # noqa: E402

_java.prepare_pyserini = _noting("jvm", _java.prepare_pyserini)


def pytest_runtest_logstart(nodeid, location):
    _started.clear()   # what collection or the test before started is not this test's


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    started, _ = set(_started), _started.clear()
    missing = sorted(m for m in started if not item.get_closest_marker(m))
    if missing and report.passed:
        meaning = dict(line.split(":", 1) for line in item.config.getini("markers"))
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} ({report.when}) starts what its marks do not say: "
                           + ", ".join(f"{m} ({meaning[m].strip()})" for m in missing)
                           + ": mark it (or the fixture, in FIXTURE_MARKS), so that the fast "
                             "tier leaves it out")
    return report


@pytest.fixture(scope="session")
def docs_timings(request):
    """Every doc command run by tests/test_docs.py, with its time, reported at the end."""
    found: list = []
    request.config.stash[DOCS_TIMINGS] = found
    return found


DOCS_TIMINGS = pytest.StashKey[list]()
WORKER_TIMINGS = pytest.StashKey[list]()


def _block_times(config) -> list[tuple[str, float, bool, bool]]:
    """(block, seconds, the command's output compared, the block's output compared) of every
    doc command this process ran."""
    return [(r.block.where, r.seconds, bool(r.command.shown), r.block.shown is not None)
            for r in config.stash.get(DOCS_TIMINGS, [])]


@pytest.hookimpl(optionalhook=True)   # a pytest-xdist hook: plain pytest runs without it
def pytest_testnodedown(node, error):
    """A pytest-xdist worker's doc timings, for the summary of the controller."""
    found = getattr(node, "workeroutput", {}).get("docs_timings", [])
    node.config.stash.setdefault(WORKER_TIMINGS, []).extend(map(tuple, found))


def pytest_terminal_summary(terminalreporter, config):
    results = _block_times(config) + config.stash.get(WORKER_TIMINGS, [])
    if not results:
        return
    terminalreporter.section("docs: time per block")
    per_block: dict = {}
    for where, *rest in results:
        per_block.setdefault(where, []).append(rest)
    for where, rs in sorted(per_block.items(), key=lambda kv: -sum(r[0] for r in kv[1])):
        compared = sum(r[1] for r in rs) + rs[0][2]
        terminalreporter.write_line(f"{sum(r[0] for r in rs):7.1f} s  {where}  ({len(rs)} "
                                    f"commands, {compared} outputs compared)")
    terminalreporter.write_line(f"{sum(r[1] for r in results):7.1f} s  in all, "
                                f"{len(per_block)} blocks")


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
    if hasattr(session.config, "workeroutput"):   # a pytest-xdist worker: to its controller
        session.config.workeroutput["docs_timings"] = _block_times(session.config)
    mark = os.environ.get(MARK)
    if not mark or session.config.pluginmanager.hasplugin("dsession"):
        return   # pytest-xdist's controller: each worker checks what its tests started
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

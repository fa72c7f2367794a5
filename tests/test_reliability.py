"""Issue 40, what tests/test_bad_inputs.py's table cannot hold: the bound on a record measured
(exact at the limit, the memory of `--run /dev/zero`), a command's outputs together or not at
all on a full disk (a real tmpfs where one can be mounted, else a simulated ENOSPC), `init`
whole or nothing, a resumable project by default, the stale lock's one line, unused key points
counted, an unreadable topic folder, and the suite's own check for processes left behind."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from cruxflow.cli import main
from cruxflow.data.bounded import MAX_RECORD_BYTES, read_bytes, read_line_blocks
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest_to
from cruxflow.data.io import iter_lines, read_text

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "demo"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1,localhost",
       "no_proxy": "127.0.0.1,localhost"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("data") / "data"
    ingest_to("crux", DEMO / "crux", d, IngestOptions(prefix="crux"), eta=3)
    return d


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


# --- the bound on a record ------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["read_bytes", "read_line_blocks", "iter_lines", "pipe"])
def test_a_line_of_exactly_the_bound_passes_and_one_byte_more_stops(reader, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("CRUXFLOW_MAX_RECORD_BYTES", "10")
    ok, long = b"a\n" + b"x" * 10 + b"\nb", b"a\n" + b"x" * 11 + b"\nb"
    read = {"read_bytes": read_bytes, "pipe": read_bytes,
            "read_line_blocks": lambda p: b"".join(read_line_blocks(p, 4)),
            "iter_lines": lambda p: "\n".join(line for _, line in iter_lines(p)).encode()}[reader]
    for data, fails in ((ok, False), (long, True)):
        path = tmp_path / "f"
        if reader == "pipe":   # a FIFO, as process substitution gives: read in pieces
            path.unlink(missing_ok=True)
            os.mkfifo(path)
            # the writer opens the pipe itself: opening it here would wait for a reader
            writer = subprocess.Popen([sys.executable, "-c",
                                       f"open({str(path)!r}, 'wb').write({data!r})"])
        else:
            path.write_bytes(data)
        if fails:
            with pytest.raises(DataError, match=r"a line longer than 10 bytes \(from byte 2\)"):
                read(path)
        else:
            assert read(path) == data
        if reader == "pipe":
            if fails:   # the reader stopped early: the writer may wait on a full pipe
                writer.kill()
            writer.wait(10)


def test_the_bound_is_32_mib_and_a_longer_line_reads_with_the_override(tmp_path, monkeypatch):
    assert MAX_RECORD_BYTES == 32 * 1024 * 1024
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"text": "x" * 40}) + "\n")
    monkeypatch.setenv("CRUXFLOW_MAX_RECORD_BYTES", "20")
    with pytest.raises(DataError, match="raise the bound with CRUXFLOW_MAX_RECORD_BYTES"):
        read_text(path)
    monkeypatch.setenv("CRUXFLOW_MAX_RECORD_BYTES", "100")
    assert json.loads(read_text(path)) == {"text": "x" * 40}


def _peak_rss_mb(argv: list[str]) -> tuple[int, str, float]:
    """Run ``argv`` in a child of a fresh Python: exit status, stderr, the child's peak RSS."""
    probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], "
             "stderr=subprocess.PIPE, text=True); print(p.returncode); print(p.stderr.strip()); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    probe = probe.replace("stderr=subprocess.PIPE", "stdout=subprocess.DEVNULL, "
                                                    "stderr=subprocess.PIPE")
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True,
                         env=ENV, timeout=300).stdout.strip().splitlines()
    return int(out[0]), "\n".join(out[1:-1]), int(out[-1]) / 1024


def test_dev_zero_as_a_run_stops_in_bounded_memory(dataset):
    """Issue 40: `evaluate --run /dev/zero` grew to 8 GB in 14 s. Now it stops after 32 MiB
    with one line; its peak memory is measured against the same command on a real run."""
    command = [sys.executable, "-m", "cruxflow.cli", "evaluate", "--dataset", str(dataset),
               "--run"]
    rc, err, zero_mb = _peak_rss_mb([*command, "/dev/zero"])
    assert rc == 2 and err.startswith("cruxflow: error: /dev/zero: a line longer than "), err
    assert len(err.splitlines()) == 1
    rc, _, base_mb = _peak_rss_mb([*command, str(dataset / "judgments/eta3/oracle.run")])
    assert rc == 0
    print(f"peak RSS: /dev/zero {zero_mb:.0f} MB, a real run {base_mb:.0f} MB")
    assert zero_mb - base_mb < 100, (zero_mb, base_mb)


def test_a_50_mb_llm_answer_stops_in_bounded_memory(tmp_path):
    """Issue 55: a 50 MB answer took 1.16 GB and was stored in the cache. Now it is read up
    to the bound on an answer (8 MiB) and refused; the peak memory of `cruxflow udcg` against
    a real server sending it is measured against the same command given a small answer."""
    sys.path.insert(0, str(REPO / "tests"))
    from llm_server import Misbehaving

    (tmp_path / "u.json").write_text(json.dumps([{
        "question": "who wrote it", "answers": ["someone"],
        "passages": [{"doc_id": "d1", "text": "Someone wrote it.", "is_relevant": True}]}]))
    peaks, errors = {}, {}
    for mode in ("huge-undeclared", "ok"):
        with Misbehaving(mode) as server:
            rc, errors[mode], peaks[mode] = _peak_rss_mb([
                sys.executable, "-m", "cruxflow.cli", "udcg", "--questions",
                str(tmp_path / "u.json"), "--output", str(tmp_path / mode), "--base-url",
                server.url, "--model", "m", "--max-retries", "0"])
        assert rc == 2 and "Traceback" not in errors[mode], errors[mode]
    assert "an answer longer than 8,388,608 bytes" in errors["huge-undeclared"]
    assert "no logprobs" in errors["ok"]   # the small answer was read, used, and found wanting
    print(f"peak RSS: a 50 MB answer {peaks['huge-undeclared']:.0f} MB, a small one "
          f"{peaks['ok']:.0f} MB")
    assert peaks["huge-undeclared"] - peaks["ok"] < 60, peaks


# --- a full disk: outputs together or not at all --------------------------------------------


@contextlib.contextmanager
def tmpfs(disk: Path, size: str = "64k", options: str = ""):
    """A tmpfs of ``size`` mounted on ``disk`` where this machine lets us mount one (root),
    else None (and with CRUXFLOW_TEST_NO_TMPFS=1, to run the simulated full disk where a tmpfs
    would do); unmounted on exit."""
    disk.mkdir(exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None or \
            os.environ.get("CRUXFLOW_TEST_NO_TMPFS") == "1":
        yield None
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}{options}", "tmpfs",
                              str(disk)], capture_output=True).returncode == 0
    try:
        yield disk if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs where this machine lets us mount one, else None (:func:`tmpfs`)."""
    with tmpfs(tmp_path / "disk") as disk:
        yield disk


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` up to ``leave`` bytes (a file of the rest)."""
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def test_evaluate_on_a_full_disk_writes_neither_file(dataset, small_disk, tmp_path, capsys,
                                                     monkeypatch):
    """Issue 40: a full disk left per_query.tsv without aggregate.tsv and said "nothing was
    replaced". The second file fails (a real tmpfs with one page left, or ENOSPC at the fsync
    of aggregate.tsv); the first, already complete, is not moved into place either."""
    out = (small_disk or tmp_path) / "scores"
    argv = ["evaluate", "--dataset", str(dataset), "--run",
            str(dataset / "judgments/eta3/oracle.run"), "--output", str(out)]
    assert main(argv) == 0
    old = snapshot(out)
    assert sorted(old) == ["aggregate.tsv", "per_query.tsv"]
    assert all(0 < len(data) < 4096 for data in old.values())   # a page of tmpfs each
    if small_disk is not None:
        for f in out.iterdir():
            f.unlink()   # a fresh output folder on a disk that takes one of the two files
        old = snapshot(out)
        _fill(small_disk, 4096)
    else:
        real = os.fsync

        def fsync(fd):
            if ".aggregate.tsv." in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd)
        monkeypatch.setattr(os, "fsync", fsync)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cruxflow: error: {out}/") and "No space left on device" in err, err
    assert len(err.splitlines()) == 1 and "nothing was replaced" in err
    assert snapshot(out) == old   # no new file, no temporary file left


def test_the_llm_cache_on_a_full_disk_says_so(small_disk):
    from cruxflow.llm.base import Completion, Request, Sampling
    from cruxflow.llm.cache import LLMCache

    if small_disk is None:
        pytest.skip("no tmpfs can be mounted here (not root): SQLite writes in C, past any "
                    "monkeypatch")
    cache = LLMCache(small_disk / "cache.sqlite")
    _fill(small_disk, 4096)
    request, answer = Request("x" * 20_000, Sampling()), Completion(text="y" * 20_000)
    with pytest.raises(DataError) as err:
        for i in range(5):
            cache.put_many([(str(i), {}, request, answer)])
    assert str(err.value).startswith(f"{small_disk / 'cache.sqlite'}: cannot write: No space "
                                     "left on device"), err.value
    cache.close()
    (small_disk / "filler").unlink()
    (small_disk / "empty.sqlite").write_bytes(b"")
    _fill(small_disk, 0)   # a 0-byte cache left by a full disk: not "not an LLM cache"
    with pytest.raises(DataError, match="cannot write: No space left on device"):
        LLMCache(small_disk / "empty.sqlite")


def test_init_on_a_full_disk_leaves_no_half_project(small_disk, tmp_path, capsys, monkeypatch):
    target = (small_disk or tmp_path) / "proj"
    if small_disk is not None:
        _fill(small_disk, 8 * 1024)   # the config fits, the example corpus does not
    else:
        import shutil as shutil_module

        real = shutil_module.copy2

        def copy2(src, dst, **kwargs):
            if str(src).endswith("questions.txt"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
            return real(src, dst, **kwargs)
        monkeypatch.setattr(shutil_module, "copy2", copy2)
    capsys.readouterr()
    assert main(["init", str(target), "--example", "--backend", "smollm2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"cruxflow: error: {target}/data: cannot copy the example corpus: No space "
                   "left on device"), err
    assert not target.exists()


# --- init: a resumable project by default ---------------------------------------------------


def test_init_writes_prompt_cache_off_unless_asked(tmp_path, capsys):
    assert main(["init", str(tmp_path / "a"), "--backend", "smollm2"]) == 0
    assert main(["init", str(tmp_path / "b"), "--backend", "smollm2", "--prompt-cache"]) == 0
    for name, want in (("a", False), ("b", True)):
        backends = yaml.safe_load((tmp_path / name / "config.yaml").read_text())["llm"]["backends"]
        assert {n: b.get("prompt_cache") for n, b in backends.items()} == \
            {"served": want, "smollm2": want}
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["init", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--prompt-cache" in help_text and "no longer byte-identical" in help_text


# --- a lock left by a killed run --------------------------------------------------------------


@pytest.mark.workflow
def test_a_stale_lock_gets_one_line_unless_a_snakemake_runs_there(tmp_path):
    from cruxflow.workflow.job import stale_lock_note

    assert stale_lock_note(tmp_path) is None   # no lock
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.output.lock").write_text(str(tmp_path / "x"))
    note = stale_lock_note(tmp_path)
    assert note == (f"cruxflow: {tmp_path}/.snakemake/locks holds the lock of an earlier run "
                    "that was killed (no other Snakemake runs here): run `snakemake --unlock` "
                    "with the same options, then again")
    # a process named snakemake working in that folder holds it: no line
    fake = tmp_path / "bin" / "snakemake"
    fake.parent.mkdir()
    fake.symlink_to(shutil.which("sleep"))
    proc = subprocess.Popen([str(fake), "30"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 10
        while stale_lock_note(tmp_path) is not None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert stale_lock_note(tmp_path) == note


@pytest.mark.workflow
def test_the_workflow_says_so_before_snakemakes_lock_error(tmp_path):
    """The real Snakemake on the workflow: a lock of a run killed with SIGKILL; the next run
    prints the one line, then Snakemake refuses to lock (no job runs)."""
    shutil.copy(REPO / "config.yaml", tmp_path / "config.yaml")
    (tmp_path / "resources").symlink_to(REPO / "resources")
    target = "results/ingested/demo-crux/manifest.json"
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text(target + "\n")   # as the killed run left it
    proc = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "-s",
                           str(REPO / "Snakefile"), "--directory", str(tmp_path), "--cores", "1",
                           target], capture_output=True, text=True, env=ENV, timeout=300)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode != 0
    ours = [line for line in lines if line.startswith("cruxflow: ")]
    assert ours == [f"cruxflow: {locks} holds the lock of an earlier run that was killed (no "
                    "other Snakemake runs here): run `snakemake --unlock` with the same "
                    "options, then again"]
    assert any("cannot be locked" in line for line in lines)
    assert not (tmp_path / "results").exists()


# --- counted, not skipped -----------------------------------------------------------------------


def test_key_points_of_unknown_ids_are_counted(tmp_path, caplog):
    from cruxflow.beyond.kpr.data import read_items

    (tmp_path / "in.jsonl").write_text(json.dumps(
        {"id": "q1", "question": "Why?", "response": "Because.", "key_points": ["A."]}) + "\n")
    (tmp_path / "kp.jsonl").write_text("".join(json.dumps(
        {"id": i, "key_points": ["B."]}) + "\n" for i in ("q1", "q2", "qq")))
    items = read_items(tmp_path / "in.jsonl", key_points=tmp_path / "kp.jsonl")
    assert [it.id for it in items] == ["q1"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"][-1] == (
        f"{tmp_path / 'kp.jsonl'}: 2 key-point records not used (ids not in "
        f"{tmp_path / 'in.jsonl'}): q2, qq")


def test_the_entries_of_a_documents_folder_no_reader_takes_are_counted(tmp_path, capsys):
    own = tmp_path / "own"
    shutil.copytree(REPO / "resources" / "own-data" / "constitution", own)
    (own / "congress" / "minutes.pdf").write_bytes(b"%PDF")
    assert main(["ingest", "--format", "documents", "--input", str(own), "--output",
                 str(tmp_path / "out")]) == 0
    assert (f"note: 2 entries of {own} not read (only topic folders and their .txt files "
            "are): README.md, congress/minutes.pdf") in capsys.readouterr().out


def test_an_unreadable_topic_folder_is_one_line(tmp_path, capsys, monkeypatch):
    """A topic folder of mode 000 (simulated: the tests run as root, which reads anything)."""
    own = tmp_path / "own"
    shutil.copytree(REPO / "resources" / "own-data" / "constitution", own)
    real = os.listdir

    def listdir(path="."):
        if Path(path).name == "congress":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)
    monkeypatch.setattr(os, "listdir", listdir)
    capsys.readouterr()
    assert main(["ingest", "--format", "documents", "--input", str(own), "--output",
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (f"cruxflow: error: {own}/congress: cannot read "
                                               "the folder: permission denied")


# --- the suite's own check: nothing it starts outlives it -------------------------------------


def test_a_detached_process_of_the_session_is_found_by_its_mark():
    from conftest import MARK, marked_processes

    mark = os.environ[MARK]
    # a daemon's way: a new session, its parent gone at once (so it is no child of ours)
    subprocess.run([sys.executable, "-c", "import subprocess, sys; subprocess.Popen("
                    "['sleep', '60'], start_new_session=True)"], env=os.environ, check=True)
    deadline = time.monotonic() + 10
    while not (found := {p: c for p, c in marked_processes(mark).items() if c == "sleep 60"}):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert len(found) == 1
    pid = next(iter(found))
    os.kill(pid, signal.SIGKILL)   # ours, found by the mark: stopped by its id
    deadline = time.monotonic() + 10
    while pid in marked_processes(mark):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_run_in_the_config_that_is_a_folder_is_refused_up_front(tmp_path):
    from cruxflow.data.errors import ConfigError
    from cruxflow.workflow.config import check

    (tmp_path / "runs" / "mine.run").mkdir(parents=True)
    config = {"datasets": {"demo-crux": {"format": "crux", "input": str(DEMO / "crux")}},
              "runs": {"demo-crux": {"mine": "runs/mine.run"}},
              "llm": {"backends": {"srv": {"kind": "openai", "model": "m",
                                           "base_url": "ftp://host/v1"}}}}
    with pytest.raises(ConfigError) as err:
        check(config, tmp_path)
    assert ("runs.demo-crux.mine", "is a folder or a special file, expected a file: "
                                   "runs/mine.run") in err.value.problems
    assert ("llm.backends.srv.base_url", "base URL 'ftp://host/v1': an OpenAI-compatible server "
            "is an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1") in err.value.problems


# --- issue 55, class 3: the annotation app on a full disk ------------------------------------


def test_the_annotation_app_on_a_full_disk_answers_507_with_one_log_line(tmp_path):
    """A real `cruxflow annotate` with its database on a real tmpfs, then filled: each label
    is a 507 saying the disk is full, each page a 507, with one line in the server's log each
    and no traceback (they were 500s with one each); once space is freed, labels are stored
    again, and nothing refused was stored."""
    sys.path.insert(0, str(REPO / "tests"))
    from annotate_helpers import Server, make_dataset, request

    from cruxflow.annotate.store import Store

    make_dataset(tmp_path / "data")
    with tmpfs(tmp_path / "disk", "1m") as disk:
        if disk is None:
            pytest.skip("no tmpfs can be mounted here (not root): SQLite writes in C")
        server = Server("--dataset", str(tmp_path / "data"), "--task", "ratings",
                        "--annotators", "a", "b", "--db", str(disk / "a.sqlite"), cwd=tmp_path)
        try:
            api = server.links["a"] + "api/label"
            assert request(api, {"item": 0, "question": 0, "value": 5})[0] == 200
            _fill(disk, 0)
            refused = [request(api, {"item": 0, "question": 0, "value": v}) for v in (1, 2)]
            try:
                urllib.request.urlopen(server.links["a"] + "item/1", timeout=30)
                page = 200
            except urllib.error.HTTPError as exc:
                page = exc.code
            (disk / "filler").unlink()
            assert request(api, {"item": 0, "question": 0, "value": 4})[0] == 200
        finally:
            server.stop()
        log = server.proc.stderr.read()
        labels = Store(disk / "a.sqlite").labels()
    for status, answer in refused:
        assert status == 507, answer
        assert answer["error"].startswith("the label was not stored: cannot write: No space "
                                          "left on device"), answer
    assert "Traceback" not in log and "Exception" not in log, log
    lines = [line for line in log.splitlines() if line.strip()]
    # one line per refusal, and the one line of SIGTERM (how the test stops the server)
    assert lines[-1] == "cruxflow: terminated; outputs written before stay as they were", log
    assert len(lines) == 2 + (page == 507) + 1, log
    assert all(line.startswith("cruxflow annotate: ") and line.endswith("(507)")
               for line in lines[:-1]), log
    assert page in (200, 507)
    assert [(x.value, x.annotator) for x in labels] == [(4, "a")]


def test_a_new_annotation_database_on_a_full_disk_is_one_line_and_no_file(tmp_path, capsys):
    sys.path.insert(0, str(REPO / "tests"))
    from annotate_helpers import make_dataset

    make_dataset(tmp_path / "data")
    with tmpfs(tmp_path / "disk", "256k") as disk:
        if disk is None:
            pytest.skip("no tmpfs can be mounted here (not root): SQLite writes in C")
        _fill(disk, 0)
        capsys.readouterr()
        rc = main(["annotate", "--dataset", str(tmp_path / "data"), "--task", "ratings",
                   "--annotators", "a", "b", "--db", str(disk / "a.sqlite")])
        err = capsys.readouterr().err.strip()
        left = sorted(p.name for p in disk.iterdir())
    assert rc == 2 and err.startswith(f"cruxflow: error: {disk / 'a.sqlite'}: cannot create "
                                      "the annotation database: cannot write: No space left "
                                      "on device"), err
    assert len(err.splitlines()) == 1 and left == ["filler"]


def test_a_label_past_sqlites_own_limit_is_a_507_and_nothing_is_stored(tmp_path, monkeypatch):
    """SQLite's own SQLITE_FULL ("database or disk is full"), raised by SQLite itself on a
    database capped by PRAGMA max_page_count: the condition a full disk gives, on any
    machine."""
    sys.path.insert(0, str(REPO / "tests"))
    from annotate_helpers import make_dataset

    from cruxflow.annotate import store as store_module
    from cruxflow.annotate.assign import assign, rating_items, rating_pairs
    from cruxflow.annotate.store import LabelError, Span, Store
    from cruxflow.data.model import Dataset

    dataset = Dataset.load(make_dataset(tmp_path / "data"))
    items = rating_items(dataset, rating_pairs(dataset, 3))
    store = Store.create(tmp_path / "a.sqlite", {"task": "ratings", "eta": 3},
                         items, assign(len(items), ["a", "b"], 2))
    store.save("a", 0, 0, value=5)
    real = store_module.connect_sqlite

    def capped(path, **kwargs):
        con, writable = real(path, **kwargs)
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute(f"PRAGMA max_page_count = {pages}")
        return con, writable

    monkeypatch.setattr(store_module, "connect_sqlite", capped)
    text = items[0].text
    with pytest.raises(LabelError) as caught:
        for _ in range(1000):   # events fill the page left, then one needs a new page
            store.save("a", 0, 1, span=Span(0, len(text), text))
    assert caught.value.status == 507
    assert str(caught.value).startswith("the label was not stored: cannot write: No space "
                                        "left on device (SQLite: database or disk is full)")
    n_events = store.n_events()
    monkeypatch.setattr(store_module, "connect_sqlite", real)
    assert store.n_events() == n_events   # the refused label left no event


# --- issue 55, class 7: what a killed command leaves, SIGTERM, a full standard output, and a
# read-only file system --------------------------------------------------------------------


def _dead_pid() -> int:
    """The id of a process that has ended (a temporary named for it is a killed writer's)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_a_killed_ingest_are_removed_by_the_next_ingest(tmp_path):
    """kill -9 of a real `cruxflow ingest` while it writes a dataset over an old one leaves
    its temporary folder beside the output; the next ingest of that output removes it (and a
    folder moved aside by a writer killed between its two renames is put back first)."""
    out = tmp_path / "out"
    ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
    row = json.dumps({"document": "An article about the flood. " * 20 + " ||||| "
                      + "Another article about it. " * 20, "summary": "A summary."})
    (tmp_path / "mn.jsonl").write_text((row + "\n") * 20_000)
    proc = subprocess.Popen([sys.executable, "-m", "cruxflow.cli", "ingest", "--format",
                             "multinews", "--input", str(tmp_path / "mn.jsonl"), "--output",
                             str(out)], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.*.tmp/*")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    left = sorted(p.name for p in tmp_path.glob(".out.*"))
    assert len(left) == 1 and left[0].endswith(".tmp")
    # a writer killed between its renames: the old dataset aside, the output gone
    host = left[0].split(".")[2].rsplit("-", 1)[0]
    aside = tmp_path / f".out.old-{host}-{_dead_pid()}.x1y2"
    aside.mkdir()
    out.rename(aside / "out")
    assert main(["ingest", "--format", "crux", "--input", str(DEMO / "crux"), "--output",
                 str(out), "--max-topics", "2"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mn.jsonl", "out"]
    topics = (out / "topics.jsonl").read_text().splitlines()
    assert len(topics) == 2


def test_a_live_writers_temporaries_are_left_alone_and_a_dead_ones_removed(tmp_path):
    from cruxflow.data.io import write_json
    from cruxflow.data.outputs import remove_stale

    out = tmp_path / "export"
    out.mkdir()
    write_json(out / "summary.json", {"a": 1})
    name = next(iter(out.iterdir())).name
    assert name == "summary.json"
    from cruxflow.data.outputs import owner_tag

    host, pid = owner_tag().rsplit("-", 1)
    mine = out / f".summary.json.{host}-{pid}.abc.tmp"            # this process: alive
    dead = out / f".summary.json.{host}-{_dead_pid()}.abc.tmp"    # a killed writer's
    elsewhere = out / ".summary.json.otherhost-1.abc.tmp"        # another host's
    other_file = out / f".labels.jsonl.{host}-{_dead_pid()}.abc.tmp"   # another output's
    for p in (mine, dead, elsewhere, other_file):
        p.write_text("half")
    assert remove_stale(out / "summary.json") == [dead]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["summary.json", mine.name, elsewhere.name, other_file.name])


def test_sigterm_is_one_line_exit_143_and_the_old_dataset_stays(tmp_path):
    out = tmp_path / "out"
    ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
    row = json.dumps({"document": "An article about the flood. " * 20 + " ||||| "
                      + "Another article about it. " * 20, "summary": "A summary."})
    (tmp_path / "mn.jsonl").write_text((row + "\n") * 20_000)
    before = snapshot(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "cruxflow.cli", "ingest", "--format",
                             "multinews", "--input", str(tmp_path / "mn.jsonl"), "--output",
                             str(out)], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.*.tmp/*")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.01)
    proc.terminate()
    err = proc.communicate(timeout=60)[1].strip()
    assert proc.returncode == 143, err
    assert err == "cruxflow: terminated; outputs written before stay as they were"
    assert snapshot(tmp_path) == before


def test_a_full_standard_output_is_one_line_and_exit_2(dataset):
    """`> /dev/full`: the table cannot be printed; one line naming standard output, exit 2
    (it was exit 1 naming no file)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "cruxflow.cli", "evaluate", "--dataset",
                               str(dataset), "--run", str(dataset / "judgments/eta3/oracle.run")],
                              env=ENV, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("cruxflow: error: standard output: cannot write: No space "
                                   "left on device")


def test_on_a_read_only_file_system_reading_runs_and_writing_says_read_only(
        tmp_path, dataset, capsys, monkeypatch):
    """A real tmpfs remounted read-only: a udcg run that its LLM cache there answers whole
    runs (the cache opened immutable) and writes the same outputs elsewhere, an annotation
    database there exports, and a write there says "Read-only file system" (a database said
    "Permission denied")."""
    sys.path.insert(0, str(REPO / "tests"))
    from annotate_helpers import make_dataset
    from llm_server import Misbehaving

    from cruxflow.annotate.assign import assign, rating_items, rating_pairs
    from cruxflow.annotate.store import Store
    from cruxflow.data.model import Dataset

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    question = {"question": "who wrote it", "answers": ["someone"],
                "passages": [{"doc_id": "d1", "text": "Someone wrote it.", "is_relevant": True}]}
    (tmp_path / "u.json").write_text(json.dumps([question]))
    (tmp_path / "v.json").write_text(json.dumps([{**question, "question": "who read it"}]))
    labelled = Dataset.load(make_dataset(tmp_path / "labels-data"))
    items = rating_items(labelled, rating_pairs(labelled, 3))

    def udcg(out, questions="u.json"):
        return main(["udcg", "--questions", str(tmp_path / questions), "--output",
                     str(tmp_path / out), "--cache", str(disk / "c.sqlite"), "--base-url",
                     server.url, "--model", "m", "--utility", "sampling", "--samples", "2"])

    with tmpfs(tmp_path / "disk", "1m") as disk, Misbehaving("ok") as server:
        if disk is None:
            pytest.skip("no tmpfs can be mounted here (not root)")
        assert udcg("first") == 0 and len(server.hits) == 2
        store = Store.create(disk / "a.sqlite", {"task": "ratings", "eta": 3},
                             items, assign(len(items), ["a", "b"], 2))
        store.save("a", 0, 0, value=4)
        assert subprocess.run(["mount", "-o", "remount,ro", str(disk)]).returncode == 0
        capsys.readouterr()
        assert udcg("second") == 0 and len(server.hits) == 2   # no call: all cached
        assert "LLM (m): 2 requests, 2 from the cache, 0 calls" in capsys.readouterr().out
        for name in ("passages.jsonl", "contexts.tsv"):
            assert (tmp_path / "second" / name).read_bytes() == \
                (tmp_path / "first" / name).read_bytes()
        assert main(["annotate", "--db", str(disk / "a.sqlite"), "--export",
                     str(tmp_path / "labels")]) == 0
        exported = [json.loads(x) for x in
                    (tmp_path / "labels" / "passage_ratings.jsonl").read_text().splitlines()]
        assert [r["rating"] for r in exported] == [4]
        capsys.readouterr()
        # writes there: one line each, saying the file system is read-only
        assert udcg("third", "v.json") == 2   # a new question: its answer cannot be kept
        assert main(["evaluate", "--dataset", str(dataset), "--run",
                     str(dataset / "judgments/eta3/oracle.run"), "--output",
                     str(disk / "scores")]) == 2
        assert main(["annotate", "--dataset", str(tmp_path / "labels-data"), "--task",
                     "ratings", "--annotators", "a", "b", "--db", str(disk / "b.sqlite")]) == 2
        errors = re.findall(r"cruxflow: error: [^\n]*", capsys.readouterr().err)
    assert len(server.hits) == 2   # the new question was refused before its call
    assert len(errors) == 3, errors
    assert "2 of the requests are not in this cache" in errors[0]   # its 2 samples
    assert all("Read-only file system" in line and "ermission denied" not in line
               for line in errors), errors


# --- issue 55, class 5: every count bounded by what it computes --------------------------------


def test_every_integer_flag_is_a_declared_count_and_the_api_says_the_same():
    """Each flag that takes a count has its bounds from cruxflow/data/limits.py (none is a
    plain int), and the public functions refuse what the flag refuses, in the same words."""
    import argparse

    from cruxflow.beyond.kpr.options import KprOptions
    from cruxflow.beyond.support.options import SupportOptions
    from cruxflow.beyond.udcg.options import UdcgOptions
    from cruxflow.cli import vocabulary
    from cruxflow.data.limits import COUNTS
    from cruxflow.metrics.policy import Policy

    counted = {name for name, flag in vocabulary.VOCABULARY.items()
               if getattr(flag.type, "__name__", "").startswith("count(")}
    assert {"resamples", "bootstrap", "attempts", "threads", "sample", "samples", "seed",
            "max-topics", "n-ctx", "logprobs"} <= counted
    assert all(name.replace("-", "_") in COUNTS for name in counted)
    for name, flag in vocabulary.VOCABULARY.items():
        assert flag.type is not int, name
    with pytest.raises(argparse.ArgumentTypeError) as by_flag:
        vocabulary.VOCABULARY["resamples"].type("1000000000")
    with pytest.raises(ValueError) as by_api:
        Policy(resamples=1_000_000_000)
    assert str(by_api.value) == f"resamples {by_flag.value}"
    assert str(by_flag.value) == (
        "must be at most 1,000,000 (a p-value moves in steps of 1/(resamples + 1): a million "
        "resolve 1e-6, below any corrected level; the work is resamples x topics x tests), got "
        "1000000000")
    for options, field, value in ((UdcgOptions, "samples", 10_001), (KprOptions, "rounds", 101),
                                  (SupportOptions, "bootstrap", 100_001),
                                  (UdcgOptions, "logprobs", 21)):
        with pytest.raises(ValueError, match=f"{field} must be at most"):
            options(**{field: value}).check()
    Policy(resamples=1_000_000)   # the bound itself is allowed


def test_a_bootstrap_that_would_not_fit_in_memory_is_refused_before_its_draws():
    """meta-eval's bootstrap asked numpy for 29.8 GiB at 10^9 resamples: the count's bound
    refuses that, and within it the draws' memory (resamples x topics x 8 bytes) is checked
    before they are made."""
    from cruxflow.data.errors import DataError
    from cruxflow.data.limits import bootstrap_bytes, check_bootstrap

    assert bootstrap_bytes(1_000_000_000, 4) == 32_000_000_000   # 29.8 GiB, the issue's
    check_bootstrap(100_000, 2_684)             # 2.0 GiB: allowed
    # 2^31 bytes / (8 x 4,986) = 53,837.9 resamples
    with pytest.raises(DataError, match=r"n_resamples 100,000 of 4,986 topics would draw "
                                        r"3\.7 GiB of indices \(more than 2 GiB\): at most "
                                        r"53,837 here"):
        check_bootstrap(100_000, 4_986, "n_resamples")


def test_long_paired_tests_say_their_estimate_before_they_start(capsys):
    from cruxflow.cli.args import say_paired_work
    from cruxflow.data.limits import paired_test_seconds
    from cruxflow.metrics.policy import Policy

    # 977 blocks x 0.5 ms + 10^6 x 5,000 x (2.5e-8 + 100 x 1.5e-10) s = 0.49 + 200 s
    assert paired_test_seconds(1_000_000, 5000, 100) == pytest.approx(200.49, abs=0.01)
    # exact where 2^topics <= resamples: 2^10 patterns, whatever the resamples
    assert paired_test_seconds(1_000_000, 10, 5) == paired_test_seconds(1024, 10, 5)
    say_paired_work(Policy(resamples=1_000_000), 5000, 100)
    say_paired_work(Policy(resamples=9999), 50, 10)       # short: nothing said
    say_paired_work(Policy(test="t-test"), 5000, 100)     # no resamples: nothing said
    assert capsys.readouterr().err == (
        "cruxflow: note: the paired tests (1,000,000 resamples of 5,000 topics for 100 tests): "
        "about 3 minutes; --resamples sets it\n")

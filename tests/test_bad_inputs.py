"""Bad input across every console command, as a hostile user would give it (issue 21).

Each row of ``CASES`` is (id, command line, setup, expected fragments): the setup builds the
inputs under a fresh directory ``{t}``, the command runs in process through
``cruxflow.cli.main``, and the test asserts exit code 2, exactly one line on stderr that starts
``cruxflow`` and holds every fragment (the file, the record and the field where the input has
them, and the reason), no traceback, and that nothing under ``{t}`` was written, replaced or
had its mode changed.

Besides the table: an ingest into an existing dataset directory leaves no file of the old one,
outputs get the mode the umask says, and the workflow config's checks of names.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from llm_server import Misbehaving

from cruxflow.cli import main
from cruxflow.data.ingest import IngestOptions, ingest_to

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "demo"
OWN = REPO / "resources" / "own-data" / "constitution"
JUDGE_ROW = {"id": "t", "pid": "p", "rating": [3]}   # one rating of a CRUX release's judge


# --- building inputs ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_dataset(tmp_path_factory) -> Path:
    """The demo's CRUX release ingested once (judgments at eta 3 and 5); cases copy it."""
    d = tmp_path_factory.mktemp("demo") / "data"
    ingest_to("crux", DEMO / "crux", d, IngestOptions(prefix="crux"), eta=3)
    five = tmp_path_factory.mktemp("eta5") / "data"
    ingest_to("crux", DEMO / "crux", five, IngestOptions(prefix="crux"), eta=5)
    shutil.copytree(five / "judgments" / "eta5", d / "judgments" / "eta5")
    return d


def lines(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def edit_jsonl(path: Path, lineno: int, change: Callable[[dict], dict]) -> None:
    rows = path.read_text().splitlines()
    rows[lineno - 1] = json.dumps(change(json.loads(rows[lineno - 1])))
    path.write_text("\n".join(rows) + "\n")


def crux(t: Path) -> Path:
    shutil.copytree(DEMO / "crux", t / "crux")
    return t / "crux"


def crux_with(change: Callable[[Path], None]):
    def setup(t, _):
        change(crux(t))
    return setup


def crux_run(*rows: str):
    return crux_with(lambda c: lines(c / "runs" / "r.run", rows))


def duc(t: Path) -> Path:
    shutil.copytree(DEMO / "raw" / "duc2004", t / "duc")
    return t / "duc"


def duc_with(change: Callable[[Path], None]):
    def setup(t, _):
        change(duc(t))
    return setup


def distractors(*rows):
    def setup(t, _):
        duc(t)
        lines(t / "dist.jsonl", rows)
    return setup


def multinews(*rows):
    def setup(t, _):
        lines(t / "mn.jsonl", rows)
    return setup


MN_ROW = {"document": "First article text. ||||| Second article text.", "summary": "A summary."}


def data(t: Path, demo: Path) -> Path:
    shutil.copytree(demo, t / "data")
    return t / "data"


def data_with(change: Callable[[Path, Path], None] = lambda t, d: None):
    def setup(t, demo):
        change(t, data(t, demo))
    return setup


def run_file(*rows: str):
    return data_with(lambda t, d: lines(t / "my.run", rows))


def contexts_file(*rows):
    return data_with(lambda t, d: lines(t / "ctx.jsonl", rows))


def a_file(name: str, text: str = "x\n"):
    def setup(t, demo):
        if demo is not None:
            data(t, demo)
        (t / name).parent.mkdir(parents=True, exist_ok=True)
        (t / name).write_text(text)
    return setup


def udcg_input(*items):
    def setup(t, _):
        (t / "u.json").write_text(json.dumps(list(items)))
    return setup


UDCG_ITEM = {"question": "who wrote it", "answers": ["someone"],
             "passages": [{"doc_id": "d1", "text": "Someone wrote it.", "is_relevant": True}]}


def support_input(*rows):
    def setup(t, _):
        lines(t / "answers.jsonl", rows)
    return setup


SUPPORT_ROW = {"run_id": "r", "topic_id": "t1", "topic": "a question",
               "references": ["p1"], "answer": [{"text": "A sentence.", "citations": [0]}]}


def kpr_input(*rows):
    def setup(t, _):
        lines(t / "q.jsonl", rows)
    return setup


def port_in_use(t, _):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    PORTS.append(sock)
    (t / "port").write_text(str(sock.getsockname()[1]))


PORTS: list = []   # what a case's setup opened (sockets, servers): closed after the case


def llm_server(mode: str, redirect_to: str | None = None):
    """The questions of udcg, an LLM cache for them (so that a failing command writes
    nothing) and a real HTTP server on 127.0.0.1 answering as ``mode`` says
    (tests/llm_server.py), its port in {port}; ``redirect_to``: the host a second server is
    reached by, to which the first one redirects."""
    def setup(t, d):
        from cruxflow.llm import LLMCache

        udcg_input(UDCG_ITEM)(t, d)
        LLMCache(t / "c.sqlite").close()
        location = ""
        if redirect_to:
            other = Misbehaving("ok").__enter__()
            PORTS.append(other)
            location = f"http://{redirect_to}:{other.port}/v1/chat/completions"
            (t / "other").write_text(str(other.port))
        server = Misbehaving(mode, location=location).__enter__()
        PORTS.append(server)
        (t / "port").write_text(str(server.port))
    return setup


class SmallDisk:
    """A 64 KiB tmpfs mounted on ``disk``, filled (``full``) or remounted read-only once
    ``then`` has put files there, unmounted by :meth:`close` (after the case); a machine that
    cannot mount one (not root) skips the case."""

    def __init__(self, disk: Path, full: bool, then=None):
        self.disk = disk
        disk.mkdir()
        if os.geteuid() != 0 or shutil.which("mount") is None or subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                capture_output=True).returncode != 0:
            pytest.skip("no tmpfs can be mounted here (not root)")
        PORTS.append(self)
        if then is not None:
            then(disk)
        if full:
            with open(disk / "filler", "wb") as f:
                f.write(b"\0" * shutil.disk_usage(disk).free)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.disk)], check=False)


def full_disk(then=lambda t, d: None):
    """``then``'s inputs, and a full disk on {t}/disk."""
    def setup(t, d):
        then(t, d)
        SmallDisk(t / "disk", full=True)
    return setup


def read_only_disk(then=lambda t, d: None, on_disk=None):
    """``then``'s inputs, and a read-only disk on {t}/ro (holding what ``on_disk`` put
    there)."""
    def setup(t, d):
        then(t, d)
        SmallDisk(t / "ro", full=False, then=on_disk)
    return setup


UDCG_SERVED = ("udcg --questions {t}/u.json --output {t}/out --cache {t}/c.sqlite --base-url "
               "http://127.0.0.1:{port}/v1 --model m --max-retries 0")
LOCAL = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def nothing(t, _):
    pass


def files(*names: str, link: tuple[str, str] | None = None):
    """Small stand-in inputs (the output check runs before any is read), and a symlink."""
    def setup(t, _):
        for name in names:
            (t / name).parent.mkdir(parents=True, exist_ok=True)
            (t / name).write_text(f"the user's {name}\n")
        if link:
            (t / link[0]).symlink_to(t / link[1])
    return setup


# --- the table ------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    argv: str                    # split on spaces; {t} is the case's directory
    setup: Callable = nothing
    expect: tuple[str, ...] = ()  # fragments of the one error line
    needs_demo: bool = False
    xfail: str | None = None
    env: dict[str, str] | None = None   # environment variables for the command
    stdout: str | None = None    # a file standard output goes to (/dev/full)


INGEST_CRUX = "ingest --format crux --input {t}/crux --output {t}/out"
INGEST_DUC = "ingest --format duc2004 --input {t}/duc --output {t}/out"
INGEST_MN = "ingest --format multinews --input {t}/mn.jsonl --output {t}/out"
EVAL_RUN = "evaluate --dataset {t}/data --run {t}/my.run"
EVAL_ORACLE = "evaluate --dataset {t}/data --run {t}/data/judgments/eta3/oracle.run"
ORACLE = "{t}/data/judgments/eta3/oracle.run"
CRUX_EVAL = "crux-eval --run {t}/r.run --qrel {t}/q.txt --judge {t}/j.jsonl"
CRUX_EVAL_FILES = files("r.run", "q.txt", "j.jsonl")

CASES = [
    # ---- ingest --format crux: records (the reader or the loader's rules before writing)
    Case("crux-topic-not-text", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "topics.jsonl", 1, lambda o: {**o, "topic": 123})),
         ("{t}/crux/topics.jsonl", "line 1", "field 'topic'", "must be a string")),
    Case("crux-topic-bad-json", INGEST_CRUX,
         crux_with(lambda c: (c / "topics.jsonl").write_text('{"qid": "x",\n')),
         ("{t}/crux/topics.jsonl", "line 1", "invalid JSON")),
    Case("crux-topic-missing-qid", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "topics.jsonl", 2,
                                        lambda o: {k: v for k, v in o.items() if k != "qid"})),
         ("{t}/crux/topics.jsonl", "line 2", "field 'qid'", "missing")),
    Case("crux-topic-questions-not-list", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "topics.jsonl", 3,
                                        lambda o: {**o, "questions": "why?"})),
         ("{t}/crux/topics.jsonl", "line 3", "field 'questions'")),
    Case("crux-topics-empty", INGEST_CRUX,
         crux_with(lambda c: (c / "topics.jsonl").write_text("")),
         ("{t}/crux/topics.jsonl", "no topic record")),
    Case("crux-passage-duplicate", INGEST_CRUX,
         crux_with(lambda c: (c / "passages.jsonl").write_text(
             (c / "passages.jsonl").read_text().splitlines()[0] + "\n" +
             (c / "passages.jsonl").read_text())),
         ("{t}/crux/passages.jsonl", "line 2", "field 'id'", "duplicate")),
    Case("crux-passage-empty-contents", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "passages.jsonl", 4,
                                        lambda o: {**o, "contents": " "})),
         ("{t}/crux/passages.jsonl", "line 4", "field 'contents'")),
    Case("crux-rating-out-of-range", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "judgements.jsonl", 5,
                                        lambda o: {**o, "rating": [7] * len(o["rating"])})),
         ("{t}/crux/judgements.jsonl", "line 5", "field 'rating'", "outside 0..5")),
    Case("crux-rating-unknown-passage", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "judgements.jsonl", 6,
                                        lambda o: {**o, "pid": "demo-0:9#999"})),
         ("{t}/crux/judgements.jsonl", "line 6", "field 'pid'", "unknown passage")),
    Case("crux-rating-count", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "judgements.jsonl", 1,
                                        lambda o: {**o, "rating": [1, 2]})),
         ("{t}/crux/judgements.jsonl", "line 1", "field 'rating'", "2 ratings")),
    Case("crux-not-utf8", INGEST_CRUX,
         crux_with(lambda c: (c / "topics.jsonl").write_bytes(b'{"qid": "caf\xe9"}\n')),
         ("{t}/crux/topics.jsonl", "not valid utf-8 at byte 12", "--encoding")),
    Case("crux-no-passages-file", INGEST_CRUX,
         crux_with(lambda c: (c / "passages.jsonl").unlink()),
         ("{t}/crux", "no passages.jsonl or corpus.jsonl")),
    Case("crux-input-missing", INGEST_CRUX, nothing,
         ("{t}/crux", "no such CRUX directory or topics file")),
    # ---- ingest --format crux: the shipped runs/
    Case("crux-run-unknown-topic", INGEST_CRUX, crux_run("nosuch Q0 demo-0:0#0 1 2.0 r"),
         ("{t}/crux/runs/r.run", "query nosuch", "field 'qid'", "unknown topic")),
    # a passage outside the collection is unjudged (a released run searched the whole corpus);
    # --strict-collection refuses it, and an id that is no passage id is always refused
    Case("crux-run-unknown-passage-strict", INGEST_CRUX + " --strict-collection",
         crux_run("demo-0 Q0 demo-0:0#999 1 2.0 r"),
         ("{t}/crux/runs/r.run", "line 1", "field 'docid'", "unknown passage")),
    Case("crux-run-not-a-passage-id", INGEST_CRUX, crux_run("demo-0 Q0 no-such-id 1 2.0 r"),
         ("{t}/crux/runs/r.run", "field 'docid'", "not a passage id")),
    Case("crux-run-nan-score", INGEST_CRUX,
         crux_run("demo-0 Q0 demo-0:0#0 1 2.0 r", "demo-0 Q0 demo-0:0#1 2 nan r"),
         ("{t}/crux/runs/r.run", "line 2", "field 'score'", "NaN")),
    Case("crux-run-columns", INGEST_CRUX, crux_run("demo-0 Q0 demo-0:0#0 1 2.0"),
         ("{t}/crux/runs/r.run", "line 1", "expected 6 columns")),
    Case("crux-run-empty", INGEST_CRUX, crux_run(),
         ("{t}/crux/runs/r.run", "empty run file", "--allow-empty")),
    Case("crux-with-distractors", INGEST_CRUX + " --distractors {t}/crux/topics.jsonl",
         crux_with(lambda c: None), ("{t}/crux/topics.jsonl", "does not apply to the crux")),
    # ---- ingest: where the output goes
    Case("output-is-input", "ingest --format crux --input {t}/crux --output {t}/crux",
         crux_with(lambda c: None), ("{t}/crux", "is the command's input --input")),
    Case("output-inside-input", "ingest --format crux --input {t}/crux --output {t}/crux/out",
         crux_with(lambda c: None), ("{t}/crux/out", "lies inside the input")),
    Case("output-holds-input", "ingest --format crux --input {t}/crux --output {t}",
         crux_with(lambda c: None), ("{t}", "holds or lies inside the input")),
    Case("output-is-a-file", "ingest --format crux --input {t}/crux --output {t}/crux/../f",
         crux_with(lambda c: (c.parent / "f").write_text("mine")),
         ("{t}/crux/../f", "is a file: --output names a directory")),
    Case("output-under-a-file", "ingest --format crux --input {t}/crux --output {t}/f/out",
         crux_with(lambda c: (c.parent / "f").write_text("mine")),
         ("{t}/f", "is a file, not a directory")),
    Case("output-is-someone-elses-directory", INGEST_CRUX,
         crux_with(lambda c: lines(c.parent / "out" / "notes.txt", ["mine"])),
         ("{t}/out", "holds files and no dataset (no manifest.json)", "refusing")),
    # issue 31: a manifest.json of someone else's (a web app, a browser extension) is no dataset
    Case("output-is-a-web-app", "ingest --format crux --input {t}/crux --output {t}/site",
         crux_with(lambda c: (lines(c.parent / "site" / "manifest.json", [{"name": "my app"}]),
                              lines(c.parent / "site" / "src" / "app.py", ["x"]))),
         ("{t}/site", "manifest.json that cruxflow ingest did not write", "refusing")),
    Case("output-holds-only-a-foreign-manifest", "ingest --format crux --input {t}/crux "
         "--output {t}/site",
         crux_with(lambda c: lines(c.parent / "site" / "manifest.json", [{"name": "my app"}])),
         ("{t}/site", "did not write")),
    Case("output-holds-dataset-names-but-no-manifest", INGEST_CRUX,
         crux_with(lambda c: lines(c.parent / "out" / "topics.jsonl", [{"mine": 1}])),
         ("{t}/out", "no dataset (no manifest.json)")),
    Case("output-is-a-dataset-plus-my-notes",
         "ingest --format crux --input {t}/crux --output {t}/data",
         lambda t, demo: (crux(t), data(t, demo), lines(t / "data" / "notes.txt", ["mine"]),
                          lines(t / "data" / "passages" / "index" / "x.bin", ["mine"])),
         ("{t}/data", "is a dataset but also holds 'notes.txt' and 1 more files"),
         needs_demo=True),
    Case("output-is-a-dataset-with-a-symlink",
         "ingest --format crux --input {t}/crux --output {t}/data",
         lambda t, demo: (crux(t), data(t, demo),
                          (t / "data" / "runs").mkdir(exist_ok=True),
                          (t / "data" / "runs" / "mine.run").symlink_to(t / "crux" / "x")),
         ("{t}/data", "also holds 'runs/mine.run'"), needs_demo=True),
    # ---- ingest: argument values
    Case("prefix-with-a-path", INGEST_CRUX + " --prefix a/../b", crux_with(lambda c: None),
         ("argument --prefix", "'a/../b'", "letters, digits")),
    Case("prefix-empty", "ingest --format crux --input {t}/crux --output {t}/out --prefix=",
         crux_with(lambda c: None), ("argument --prefix", "''")),
    Case("max-topics-negative", INGEST_CRUX + " --max-topics -1", crux_with(lambda c: None),
         ("argument --max-topics", "must be at least 1, got -1")),
    Case("max-topics-zero", INGEST_CRUX + " --max-topics 0", crux_with(lambda c: None),
         ("argument --max-topics", "got 0")),
    Case("ingest-eta-out-of-range", INGEST_CRUX + " --eta 9", crux_with(lambda c: None),
         ("argument --eta", "from 1 to 5, got 9")),
    Case("ingest-unknown-encoding", INGEST_CRUX + " --encoding nosuch-enc",
         crux_with(lambda c: None), ("argument --encoding", "unknown encoding 'nosuch-enc'")),
    Case("min-docs-zero", INGEST_DUC + " --min-docs 0", duc_with(lambda d: None),
         ("argument --min-docs", "got 0")),
    Case("unknown-format", "ingest --format trec --input {t}/x --output {t}/out", nothing,
         ("argument --format", "invalid choice: 'trec'")),
    # ---- ingest --format multinews / multinews-src
    Case("multinews-empty-file", INGEST_MN, multinews(),
         ("{t}/mn.jsonl", "no topics read", "--allow-empty")),
    Case("multinews-every-cluster-too-small", INGEST_MN,
         multinews({"document": "Only one article.", "summary": "S."}),
         ("{t}/mn.jsonl", "no topics read (1 clusters, 1 skipped")),
    Case("multinews-summary-missing", INGEST_MN, multinews(MN_ROW, {"document": "a ||||| b"}),
         ("{t}/mn.jsonl", "line 2", "field 'summary'", "missing or not a string")),
    Case("multinews-bad-json", INGEST_MN, multinews(MN_ROW, "{oops"),
         ("{t}/mn.jsonl", "line 2", "invalid JSON")),
    Case("multinews-missing-file", INGEST_MN, nothing, ("{t}/mn.jsonl", "no such file")),
    Case("multinews-corrupt-parquet",
         "ingest --format multinews --input {t}/mn.parquet --output {t}/out",
         a_file("mn.parquet", "not a parquet file\n"), ("{t}/mn.parquet",)),
    Case("multinews-src-without-tgt",
         "ingest --format multinews-src --input {t}/test.src --output {t}/out",
         a_file("test.src", "a story_separator_special_tag b\n"), ("{t}/test", ".tgt")),
    # ---- ingest --format duc2004 and --distractors
    Case("duc-missing-distractors", INGEST_DUC + " --distractors {t}/nope.jsonl",
         duc_with(lambda d: None), ("{t}/nope.jsonl", "no such file")),
    Case("distractor-headline-not-text", INGEST_DUC + " --distractors {t}/dist.jsonl",
         distractors({"docno": "X1", "headline": 42, "text": "Some text."}),
         ("{t}/dist.jsonl", "document X1", "field 'headline'", "expected str, got int")),
    Case("distractor-text-missing", INGEST_DUC + " --distractors {t}/dist.jsonl",
         distractors({"docno": "X1", "text": "t"}, {"docno": "X2"}),
         ("{t}/dist.jsonl", "line 2", "field 'text'")),
    Case("distractor-duplicate-docno", INGEST_DUC + " --distractors {t}/dist.jsonl",
         distractors({"docno": "X1", "text": "a"}, {"docno": "X1", "text": "b"}),
         ("{t}/dist.jsonl", "line 2", "field 'docno'", "duplicate")),
    Case("distractors-empty", INGEST_DUC + " --distractors {t}/dist.jsonl", distractors(),
         ("{t}/dist.jsonl", "no articles", "--allow-empty")),
    Case("duc-cluster-without-summary", INGEST_DUC,
         duc_with(lambda d: [f.unlink() for f in (d / "models").glob("D41002*")]),
         ("{t}/duc/docs/d41002t", "no reference summary D41002.M.100.T.<A-H>")),
    Case("duc-document-without-docno", INGEST_DUC,
         duc_with(lambda d: (d / "docs" / "d41003t" / "NYT20240212.0054").write_text(
             "<DOC>\n<TEXT>\nno number\n</TEXT>\n</DOC>\n")),
         ("{t}/duc/docs/d41003t/NYT20240212.0054", "field 'DOCNO'", "no <DOCNO>")),
    # ---- evaluate
    Case("run-is-a-directory", "evaluate --dataset {t}/data --run {t}/data", data_with(),
         ("{t}/data", "is a directory, expected a file"), needs_demo=True),
    Case("run-missing", "evaluate --dataset {t}/data --run {t}/nope.run", data_with(),
         ("{t}/nope.run", "no such run file"), needs_demo=True),
    Case("run-columns", EVAL_RUN, run_file("demo-0 Q0 demo-0:0#0 1 2.0"),
         ("{t}/my.run", "line 1", "expected 6 columns"), needs_demo=True),
    Case("run-nan-score", EVAL_RUN,
         run_file("demo-0 Q0 demo-0:0#0 1 2.0 r", "demo-0 Q0 demo-0:0#1 2 nan r"),
         ("{t}/my.run", "line 2", "field 'score'", "NaN"), needs_demo=True),
    Case("run-score-not-a-number", EVAL_RUN, run_file("demo-0 Q0 demo-0:0#0 1 high r"),
         ("{t}/my.run", "line 1", "field 'score'", "not a number"), needs_demo=True),
    Case("run-rank-not-an-integer", EVAL_RUN, run_file("demo-0 Q0 demo-0:0#0 first 2.0 r"),
         ("{t}/my.run", "line 1", "field 'rank'"), needs_demo=True),
    Case("run-duplicate-document", EVAL_RUN,
         run_file("demo-0 Q0 demo-0:0#0 1 2.0 r", "demo-0 Q0 demo-0:0#0 2 1.0 r"),
         ("{t}/my.run", "line 2", "field 'docid'", "appears twice"), needs_demo=True),
    Case("run-unknown-topic", EVAL_RUN, run_file("nosuch Q0 demo-0:0#0 1 2.0 r"),
         ("{t}/my.run", "query nosuch", "field 'qid'", "unknown topic"), needs_demo=True),
    Case("run-unknown-passage-strict", EVAL_RUN + " --strict-collection",
         run_file("demo-0 Q0 demo-0:0#999 1 2.0 r"),
         ("{t}/my.run", "line 1", "field 'docid'", "unknown passage"), needs_demo=True),
    Case("run-not-a-passage-id", EVAL_RUN, run_file("demo-0 Q0 no-such-id 1 2.0 r"),
         ("{t}/my.run", "field 'docid'", "not a passage id"), needs_demo=True),
    Case("run-empty", EVAL_RUN, run_file(),
         ("{t}/my.run", "no ranked list", "--allow-empty"), needs_demo=True),
    Case("contexts-empty", "evaluate --dataset {t}/data --contexts {t}/ctx.jsonl",
         contexts_file(), ("{t}/ctx.jsonl", "no ranked list", "--allow-empty"),
         needs_demo=True),
    Case("contexts-unknown-topic", "evaluate --dataset {t}/data --contexts {t}/ctx.jsonl",
         contexts_file({"topic_id": "nosuch", "passages": []}),
         ("{t}/ctx.jsonl", "line 1", "field 'topic_id'", "unknown topic"), needs_demo=True),
    Case("contexts-passages-not-a-list", "evaluate --dataset {t}/data --contexts {t}/ctx.jsonl",
         contexts_file({"topic_id": "demo-0", "passages": "demo-0:0#0"}),
         ("{t}/ctx.jsonl", "line 1", "field 'passages'", "expected a list"), needs_demo=True),
    Case("evaluate-eta-negative", EVAL_ORACLE + " --eta -1", data_with(),
         ("argument --eta", "from 1 to 5, got -1"), needs_demo=True),
    Case("evaluate-alpha-out-of-range", EVAL_ORACLE + " --alpha 2", data_with(),
         ("argument --alpha", "must lie in 0..1"), needs_demo=True),
    Case("evaluate-k-zero", EVAL_ORACLE + " --k 0", data_with(),
         ("argument --k", "positive integer, got '0'"), needs_demo=True),
    Case("judgments-of-another-eta",
         EVAL_ORACLE + " --judgments {t}/data/judgments/eta5/judgments.jsonl", data_with(),
         ("{t}/data/judgments/eta5/judgments.jsonl", "line 1", "field 'eta'",
          "derived with eta=5, used with eta=3"), needs_demo=True),
    Case("judgments-unknown-topic", EVAL_ORACLE + " --judgments {t}/j.jsonl",
         data_with(lambda t, d: lines(t / "j.jsonl", [
             {"topic_id": "nosuch", "n_questions": 1, "kept": [], "relevant": [],
              "required": [], "eta": 3}])),
         ("{t}/j.jsonl", "line 1", "field 'topic_id'", "unknown topic"), needs_demo=True),
    Case("evaluate-output-is-a-file", EVAL_ORACLE + " --output {t}/f", a_file("f"),
         ("{t}/f", "is a file: --output names a directory"), needs_demo=True),
    Case("evaluate-output-under-a-file", EVAL_ORACLE + " --output {t}/f/out", a_file("f"),
         ("{t}/f", "is a file, not a directory"), needs_demo=True),
    Case("tokenizer-missing", EVAL_ORACLE + " --tokenizer {t}/tok", data_with(),
         ("{t}/tok", "no tokenizer.json"), needs_demo=True),
    Case("dataset-not-a-dataset", "evaluate --dataset {t} --run {t}/r.run", a_file("r.run"),
         ("{t}", "not a cruxflow dataset directory")),
    Case("dataset-bad-topic-record", EVAL_ORACLE,
         data_with(lambda t, d: edit_jsonl(d / "topics.jsonl", 2,
                                           lambda o: {**o, "reference": 7})),
         ("{t}/data/topics.jsonl", "line 2", "field 'reference'", "expected str"),
         needs_demo=True),
    Case("collection-missing", EVAL_ORACLE + " --collection {t}/coll.jsonl", data_with(),
         ("{t}/coll.jsonl", "no such passage collection"), needs_demo=True),
    # ---- udcg, support, kpr: their inputs, and the shared LLM options
    Case("udcg-input-missing", "udcg --questions {t}/u.json --output {t}/out", nothing,
         ("{t}/u.json",)),
    Case("udcg-question-missing", "udcg --questions {t}/u.json --output {t}/out",
         udcg_input(UDCG_ITEM, {k: v for k, v in UDCG_ITEM.items() if k != "question"}),
         ("{t}/u.json", "item 2", "field 'question'")),
    Case("udcg-missing-model", "udcg --questions {t}/u.json --output {t}/out --model {t}/m.gguf",
         udcg_input(UDCG_ITEM), ("{t}/m.gguf does not exist",)),
    Case("udcg-server-option-on-local-model",
         "udcg --questions {t}/u.json --output {t}/out --constrain vllm", udcg_input(UDCG_ITEM),
         ("--constrain applies to an OpenAI-compatible server",)),
    Case("udcg-gamma-not-a-number", "udcg --questions {t}/u.json --output {t}/out --gamma lots",
         udcg_input(UDCG_ITEM), ("argument --gamma", "'lots'")),
    Case("llm-timeout-zero", "udcg --questions {t}/u.json --output {t}/out --base-url "
         "http://127.0.0.1:9/v1 --model m --timeout 0", udcg_input(UDCG_ITEM),
         ("argument --timeout", "more than 0")),
    Case("llm-max-retries-negative",
         "udcg --questions {t}/u.json --output {t}/out --max-retries -2",
         udcg_input(UDCG_ITEM), ("argument --max-retries", "at least 0")),
    Case("support-input-missing", "support --answers {t}/answers.jsonl --output {t}/out",
         nothing, ("{t}/answers.jsonl",)),
    Case("support-citation-out-of-range", "support --answers {t}/answers.jsonl --output {t}/out",
         support_input({**SUPPORT_ROW, "answer": [{"text": "A.", "citations": [3]}]}),
         ("{t}/answers.jsonl", "line 1", "citations")),
    Case("kpr-input-missing", "kpr --questions {t}/q.jsonl --output {t}/out", nothing,
         ("{t}/q.jsonl",)),
    Case("kpr-question-missing", "kpr --questions {t}/q.jsonl --output {t}/out",
         kpr_input({"id": "q1", "documents": [{"id": "d", "text": "t"}]}),
         ("{t}/q.jsonl", "line 1", "question")),
    # ---- issue 31: no command writes over one of its inputs (checked before any work)
    # --output names a directory in every command: a file (an input, a link to one) is refused
    # by the argument itself; an input where the command writes its own file is refused too
    Case("crux-eval-output-is-the-run", CRUX_EVAL + " --output {t}/r.run", CRUX_EVAL_FILES,
         ("{t}/r.run", "is a file: --output names a directory")),
    Case("crux-eval-output-is-a-link-to-the-run", CRUX_EVAL + " --output {t}/link",
         files("r.run", "q.txt", "j.jsonl", link=("link", "r.run")),
         ("{t}/link", "--output names a directory")),
    Case("crux-eval-output-would-overwrite-the-judge-file",
         "crux-eval --run {t}/r.run --qrel {t}/q.txt --judge {t}/out/crux_eval.json "
         "--output {t}/out", files("r.run", "q.txt", "out/crux_eval.json"),
         ("{t}/out", "input --judge")),
    Case("evaluate-output-is-the-dataset", "evaluate --dataset {t}/data --run {t}/r.run "
         "--output {t}/data", files("data/topics.jsonl", "r.run"), ("{t}/data", "--dataset")),
    Case("evaluate-output-would-overwrite-the-run", "evaluate --dataset {t}/data --run "
         "{t}/out/per_query.tsv --output {t}/out",
         files("data/topics.jsonl", "out/per_query.tsv"), ("{t}/out", "input --run")),
    Case("kpr-output-is-the-input", "kpr --questions {t}/q.jsonl --output {t}/q.jsonl",
         files("q.jsonl"), ("{t}/q.jsonl", "--output names a directory")),
    Case("kpr-output-would-overwrite-the-input", "kpr --questions {t}/out/judgments.jsonl "
         "--output {t}/out", files("out/judgments.jsonl"), ("{t}/out", "input --questions")),
    Case("udcg-cache-is-the-input",
         "udcg --questions {t}/u.json --output {t}/out --cache {t}/u.json",
         files("u.json"), ("{t}/u.json", "input --questions", "--cache")),
    Case("support-output-would-overwrite-the-labels", "support --answers {t}/a.jsonl --output "
         "{t}/out --labels {t}/out/labels.jsonl", files("a.jsonl", "out/labels.jsonl"),
         ("{t}/out", "input --labels")),
    Case("agreement-output-is-a-label-folder", "agreement --human-reports ann={t}/labels --output "
         "{t}/labels", files("labels/a.jsonl"), ("{t}/labels", "input --human-reports")),
    Case("annotate-export-is-the-dataset", "annotate --db {t}/a.sqlite --dataset {t}/data "
         "--export {t}/data", files("a.sqlite", "data/topics.jsonl"), ("{t}/data", "--dataset")),
    Case("plan-output-would-overwrite-the-config", "plan --config {t}/plan.json --output {t}",
         files("plan.json"), ("{t}/plan.json", "input --config", "--output")),
    # ---- issue 31: more inputs that gave a traceback
    Case("input-symlinked-to-itself", INGEST_MN,
         lambda t, d: (t / "mn.jsonl").symlink_to(t / "mn.jsonl"),
         ("{t}/mn.jsonl", "cannot read", "symbolic links")),
    Case("run-symlinked-to-itself", EVAL_RUN,
         data_with(lambda t, d: (t / "my.run").symlink_to(t / "my.run")),
         ("{t}/my.run",), needs_demo=True),
    Case("jsonl-line-nested-100000-deep", INGEST_MN,
         multinews(MN_ROW, "[" * 100_000 + "]" * 100_000),
         ("{t}/mn.jsonl", "line 2", "nested too deeply")),
    Case("contexts-nested-100000-deep", "evaluate --dataset {t}/data --contexts {t}/ctx.jsonl",
         contexts_file('{"topic_id": ' + "[" * 100_000 + "]" * 100_000 + "}"),
         ("{t}/ctx.jsonl", "line 1", "nested too deeply"), needs_demo=True),
    Case("udcg-cache-is-a-folder", "udcg --questions {t}/u.json --output {t}/out --cache {t}/dir",
         lambda t, d: (udcg_input(UDCG_ITEM)(t, d), (t / "dir").mkdir()),
         ("{t}/dir", "is a directory", "--cache")),
    Case("udcg-cache-is-not-sqlite", "udcg --questions {t}/u.json --output {t}/out "
         "--cache {t}/notes.txt",
         lambda t, d: (udcg_input(UDCG_ITEM)(t, d), (t / "notes.txt").write_text("mine\n" * 50)),
         ("{t}/notes.txt", "not an LLM cache")),
    Case("udcg-config-missing", "udcg --questions {t}/u.json --output {t}/out --config "
         "{t}/nonexistent.yaml", udcg_input(UDCG_ITEM), ("{t}/nonexistent.yaml", "no such file")),
    Case("plan-config-tab-indented", "plan --config {t}/c.yaml",
         a_file("c.yaml", "datasets:\n\tdemo: {format: crux}\n"),
         ("{t}/c.yaml", "line 2, column 1", "indent with spaces")),
    Case("plan-config-alias-bomb", "plan --config {t}/c.yaml",
         a_file("c.yaml", "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
                                  for i in range(1, 10)).replace("[*l0", "[0").replace(
                                      "*l0", "0")),
         ("{t}/c.yaml", "alias bomb")),
    Case("annotate-db-is-not-a-database", "annotate --db {t}/notes.txt --export {t}/out",
         a_file("notes.txt", "my notes\n"), ("{t}/notes.txt", "not an annotation database")),
    # ---- issue 31: values that were taken silently, or gave a traceback
    Case("crux-rating-nan", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "judgements.jsonl", 2,
                                        lambda o: {**o, "rating": [math.nan] * 10})),
         ("{t}/crux/judgements.jsonl", "line 2", "field 'rating'", "(nan) is not an integer")),
    Case("crux-rating-infinity", INGEST_CRUX,
         crux_with(lambda c: edit_jsonl(c / "judgements.jsonl", 3,
                                        lambda o: {**o, "rating": [math.inf] * 10})),
         ("{t}/crux/judgements.jsonl", "line 3", "(inf) is not an integer")),
    Case("crux-eval-judge-nan", "crux-eval --run " + ORACLE + " --qrel "
         "{t}/data/judgments/eta3/qrels.relevance.txt --judge {t}/j.jsonl",
         data_with(lambda t, d: (shutil.copy(DEMO / "crux" / "judgements.jsonl", t / "j.jsonl"),
                                 edit_jsonl(t / "j.jsonl", 4,
                                            lambda o: {**o, "rating": [math.nan] * 10}))),
         ("{t}/j.jsonl", "line 4", "field 'rating'", "(nan)"), needs_demo=True),
    Case("crux-passages-empty", INGEST_CRUX,
         crux_with(lambda c: (c / "passages.jsonl").write_text("")),
         ("{t}/crux/passages.jsonl", "no passage in the passages file")),
    Case("judgments-missing-a-topic", EVAL_ORACLE + " --judgments {t}/j.jsonl",
         data_with(lambda t, d: lines(t / "j.jsonl", (d / "judgments" / "eta3" /
                                                       "judgments.jsonl").read_text()
                                      .splitlines()[:1])),
         ("{t}/j.jsonl", "no record for 9 of the dataset's 10 topics"), needs_demo=True),
    Case("judgments-eta-a-string", EVAL_ORACLE + " --judgments {t}/j.jsonl",
         data_with(lambda t, d: (shutil.copy(d / "judgments" / "eta3" / "judgments.jsonl",
                                             t / "j.jsonl"),
                                 edit_jsonl(t / "j.jsonl", 1, lambda o: {**o, "eta": "3"}))),
         ("{t}/j.jsonl", "line 1", "field 'eta'", "'3' is not an integer"), needs_demo=True),
    Case("agreement-no-arguments", "agreement", nothing, ("give label sets", "--human-reports")),
    Case("agreement-eta-7", "agreement --eta 7", nothing, ("argument --eta", "got 7")),
    Case("support-citation-a-string", "support --answers {t}/answers.jsonl --output {t}/out",
         support_input({**SUPPORT_ROW, "answer": [{"text": "A.", "citations": ["0"]}]}),
         ("{t}/answers.jsonl", "line 1", "citations[0]", "is a number (0, not '0')")),
    Case("support-passages-not-an-index", "support --answers {t}/answers.jsonl --output {t}/out "
         "--passages {t}/folder --judge-pairs all",
         lambda t, d: (support_input(SUPPORT_ROW)(t, d), lines(t / "folder" / "a.txt", ["x"])),
         ("{t}/folder", "not a Lucene index")),
    Case("plan-tokenizer-missing", f"plan --config {REPO}/config.yaml --workdir {REPO} "
         "--tokenizer {t}/nonexistent", nothing, ("{t}/nonexistent", "no tokenizer.json")),
    Case("annotate-overlap-above-the-annotators", "annotate --dataset {t}/data --task ratings "
         "--annotators a b --overlap 5 --db {t}/a.sqlite", data_with(),
         ("overlap 5 must lie in 1..2",), needs_demo=True),
    Case("annotate-reports-task-without-reports", "annotate --dataset {t}/data --task reports "
         "--annotators a b --db {t}/a.sqlite", data_with(), ("needs --reports",),
         needs_demo=True),
    Case("duc-folder-inside-a-cluster", INGEST_DUC,
         duc_with(lambda d: lines(d / "docs" / "d41002t" / "more" / "APW1.txt", ["x"])),
         ("{t}/duc/docs/d41002t/more", "a folder inside a cluster directory")),
    Case("duc-symlink-loop-inside-a-cluster", INGEST_DUC,
         duc_with(lambda d: (d / "docs" / "d41002t" / "loop").symlink_to(
             d / "docs" / "d41002t" / "loop")),
         ("{t}/duc/docs/d41002t/loop", "not a readable document file")),
    # ---- issue 40, item 3: a file a reader recognises is read or refused, never skipped
    Case("crux-judgements-symlinked-to-itself", INGEST_CRUX,
         crux_with(lambda c: ((c / "judgements.jsonl").unlink(),
                              (c / "judgements.jsonl").symlink_to(c / "judgements.jsonl"))),
         ("{t}/crux/judgements.jsonl", "not a readable file", "refused rather than skipped")),
    Case("crux-judgements-is-a-folder", INGEST_CRUX,
         crux_with(lambda c: ((c / "judgements.jsonl").unlink(),
                              lines(c / "judgements.jsonl" / "x.jsonl", ["{}"]))),
         ("{t}/crux/judgements.jsonl", "not a readable file")),
    Case("crux-run-is-a-folder", INGEST_CRUX,
         crux_with(lambda c: lines(c / "runs" / "r.run" / "x", ["x"])),
         ("{t}/crux/runs/r.run", "not a readable file")),
    Case("paper-era-folder-with-a-broken-link", "ingest --format crux --input {t}/lab "
         "--output {t}/out",
         lambda t, d: (shutil.copytree(REPO / "tests" / "data" / "crux" / "labeling_release",
                                       t / "lab"),
                       (t / "lab" / "judgements.jsonl").symlink_to(t / "lab" / "gone")),
         ("{t}/lab/judgements.jsonl", "not a readable file")),
    Case("crux-eval-judge-folder-with-a-broken-link",
         "crux-eval --run {t}/r.run --qrel {t}/q.txt --judge {t}/judge",
         lambda t, d: (files("r.run", "judge/a.jsonl")(t, d), lines(t / "q.txt", ["t 0 p 1"]),
                       (t / "judge" / "b.jsonl").symlink_to(t / "judge" / "b.jsonl")),
         ("{t}/judge/b.jsonl", "not a readable file")),
    Case("ingest-collection-folder-with-a-broken-link", INGEST_CRUX + " --collection {t}/coll",
         lambda t, d: (crux(t), lines(t / "coll" / "a.jsonl", ['{"id": "x", "contents": "y"}']),
                       (t / "coll" / "b.jsonl").symlink_to(t / "coll" / "gone")),
         ("{t}/coll/b.jsonl", "not a readable file")),
    Case("nuggets-folder-without-assignments", "ingest --format nuggets --input {t}/n "
         "--output {t}/out",
         lambda t, d: lines(t / "n" / "nuggets.jsonl",
                            [{"qid": "q", "query": "a", "nuggets": [{"text": "b"}]}]),
         ("{t}/n", "holds nuggets.jsonl but no assignments.jsonl")),
    Case("nuggets-assignments-is-a-folder", "ingest --format nuggets --input {t}/n "
         "--output {t}/out",
         lambda t, d: (lines(t / "n" / "nuggets.jsonl",
                             [{"qid": "q", "query": "a", "nuggets": [{"text": "b"}]}]),
                       lines(t / "n" / "assignments.jsonl" / "x", ["x"])),
         ("{t}/n/assignments.jsonl", "not a readable file")),
    Case("ingest-an-option-the-format-does-not-read", INGEST_CRUX + " --number-like {t}/p.jsonl",
         lambda t, d: (crux(t), lines(t / "p.jsonl", ["{}"])),
         ("{t}/p.jsonl", "--number-like does not apply to the crux format")),
    # ---- issue 40, item 2: one bound on a record, in every reader of text
    # (CRUXFLOW_MAX_RECORD_BYTES=20000 and a line of 30,000 bytes; /dev/zero has no newline)
    *[Case(f"record-bound-{name}", argv, setup, ("{t}/" + file, "a line longer than 20,000 bytes",
                                                 "CRUXFLOW_MAX_RECORD_BYTES"),
           needs_demo=demo, env={"CRUXFLOW_MAX_RECORD_BYTES": "20000"})
      for name, argv, setup, file, demo in [
          ("run", EVAL_RUN, run_file("demo-0 Q0 demo-0:0#0 1 2.0 r" + " " * 30000), "my.run",
           True),
          ("block-reader-run", "crux-eval --run {t}/r.run --qrel {t}/q.txt --judge {t}/j.jsonl",
           lambda t, d: (lines(t / "r.run", ["t Q0 p 1 2.0 " + "r" * 30000]),
                         lines(t / "q.txt", ["t 0 p 1"]), lines(t / "j.jsonl", [JUDGE_ROW])),
           "r.run", False),
          ("qrels", "crux-eval --run {t}/r.run --qrel {t}/q.txt --judge {t}/j.jsonl",
           lambda t, d: (lines(t / "r.run", ["t Q0 p 1 2.0 r"]),
                         lines(t / "q.txt", ["t 0 p 1" + " " * 30000]),
                         lines(t / "j.jsonl", [JUDGE_ROW])), "q.txt", False),
          ("jsonl", INGEST_MN, multinews(MN_ROW, {**MN_ROW, "summary": "x" * 30000}),
           "mn.jsonl", False),
          ("json", "udcg --questions {t}/u.json --output {t}/out",
           udcg_input(UDCG_ITEM, {**UDCG_ITEM, "question": "x" * 30000}), "u.json", False),
          ("tsv", "support --answers {t}/answers.jsonl --output {t}/out --labels {t}/l.tsv",
           lambda t, d: (support_input(SUPPORT_ROW)(t, d),
                         lines(t / "l.tsv", ["t1\tr\t0\tp1\t" + "FS" * 15000])), "l.tsv", False),
          ("yaml", "plan --config {t}/c.yaml", a_file("c.yaml", "a: " + "x" * 30000 + "\n"),
           "c.yaml", False),
      ]],
    Case("run-is-dev-zero", "evaluate --dataset {t}/data --run /dev/zero", data_with(),
         ("/dev/zero", "a line longer than 33,554,432 bytes (from byte 0)"), needs_demo=True),
    Case("crux-eval-run-is-dev-zero", "crux-eval --run /dev/zero --qrel {t}/q.txt --judge "
         "{t}/j.jsonl",
         lambda t, d: (lines(t / "q.txt", ["t 0 p 1"]), lines(t / "j.jsonl", [JUDGE_ROW])),
         ("/dev/zero", "a line longer than")),
    Case("record-bound-not-a-number", EVAL_ORACLE, data_with(),
         ("$CRUXFLOW_MAX_RECORD_BYTES is 'lots'", "a positive number of bytes"), needs_demo=True,
         env={"CRUXFLOW_MAX_RECORD_BYTES": "lots"}),
    # ---- issue 40, item 3: what a reader recognises is read or refused, never skipped
    Case("documents-txt-is-a-folder", "ingest --format documents --input {t}/own --output {t}/out",
         lambda t, d: (shutil.copytree(OWN, t / "own"),
                       (t / "own" / "congress" / "extra.txt").mkdir()),
         ("{t}/own/congress/extra.txt", "not a readable file", "refused rather than skipped")),
    Case("documents-txt-linked-to-itself", "ingest --format documents --input {t}/own "
         "--output {t}/out",
         lambda t, d: (shutil.copytree(OWN, t / "own"),
                       (t / "own" / "congress" / "loop.txt").symlink_to(
                           t / "own" / "congress" / "loop.txt")),
         ("{t}/own/congress/loop.txt", "not a readable file")),
    Case("documents-reference-is-a-folder", "ingest --format documents --input {t}/own "
         "--output {t}/out",
         lambda t, d: (shutil.copytree(OWN, t / "own"),
                       (t / "own" / "congress" / "reference.txt").mkdir()),
         ("{t}/own/congress/reference.txt", "not a readable file")),
    Case("support-passages-without-the-judge", "support --answers {t}/answers.jsonl --output "
         "{t}/out --passages {t}/p.jsonl",
         lambda t, d: (support_input(SUPPORT_ROW)(t, d), lines(t / "p.jsonl", ["{oops"])),
         ("{t}/p.jsonl", "only the LLM judge reads passage texts", "--judge-pairs")),
    Case("support-passages-invalid-json", "support --answers {t}/answers.jsonl --output {t}/out "
         "--passages {t}/p.jsonl --judge-pairs",
         lambda t, d: (support_input(SUPPORT_ROW)(t, d), lines(t / "p.jsonl", ["{oops"])),
         ("{t}/p.jsonl", "line 1", "invalid JSON")),
    Case("export-collection-is-a-path", "export --format nuggetbank --dataset {t}/data "
         "--output {t}/out --collection-name {t}/coll.jsonl", data_with(),
         ("argument --collection-name", "letters, digits"), needs_demo=True),
    # ---- issue 40, item 4: what gave a traceback
    Case("multinews-lone-surrogate", INGEST_MN,
         multinews(MN_ROW, '{"document": "a \\ud800 b ||||| c", "summary": "s"}'),
         ("{t}/mn.jsonl", "line 2", "'\\ud800', half of a UTF-16 surrogate pair")),
    Case("init-over-a-file", "init {t}/proj", a_file("proj"),
         ("{t}/proj", "is a file, not a directory")),
    # ---- issue 40, item 6: where outputs may go
    Case("evaluate-output-inside-the-dataset", EVAL_ORACLE + " --output {t}/data/results",
         data_with(), ("{t}/data/results", "lies inside the dataset --dataset {t}/data"),
         needs_demo=True),
    Case("crux-eval-output-inside-an-ingested-dataset", "crux-eval --run " + ORACLE
         + " --qrel {t}/data/judgments/eta3/qrels.relevance.txt --judge {t}/data/answerability"
         ".jsonl --output {t}/data/scores", data_with(),
         ("{t}/data/scores", "lies inside the dataset"), needs_demo=True),
    Case("plan-config-without-datasets", "plan --config {t}/c.yaml", a_file("c.yaml", "llm: {}\n"),
         ("{t}/c.yaml", "datasets: missing")),
    Case("documents-topic-id-is-a-path", "ingest --format documents --input {t}/d.jsonl "
         "--output {t}/out",
         lambda t, d: lines(t / "d.jsonl", [{"topic_id": "../../etc",
                                             "documents": [{"doc_id": "a", "text": "x"}]}]),
         ("{t}/d.jsonl", "line 1", "field 'topic_id'", "'../../etc'", "letters, digits")),
    # ---- issue 40, item 8: every value checked where it enters
    Case("plan-price-negative", f"plan --config {REPO}/config.yaml --workdir {REPO} "
         "--price-per-million -1 2", nothing, ("argument --price-per-million", "at least 0")),
    Case("plan-tokens-per-second-zero", f"plan --config {REPO}/config.yaml --workdir {REPO} "
         "--tokens-per-second 0", nothing, ("argument --tokens-per-second", "more than 0")),
    Case("plan-config-base-url-not-http", "plan --config {t}/c.yaml --workdir " + str(REPO),
         a_file("c.yaml", "datasets: {d: {format: crux, input: resources/demo/crux}}\nllm:\n"
                          "  backend: srv\n  backends:\n    srv: {kind: openai, model: m, "
                          "base_url: 'ftp://host/v1'}\n"),
         ("llm.backends.srv.base_url", "'ftp://host/v1'", "http:// or https://")),
    Case("udcg-base-url-not-http", "udcg --questions {t}/u.json --output {t}/out --base-url "
         "ftp://host/v1 --model m", udcg_input(UDCG_ITEM),
         ("argument --base-url", "http:// or https://")),
    Case("udcg-seed-negative", "udcg --questions {t}/u.json --output {t}/out --seed -1",
         udcg_input(UDCG_ITEM), ("argument --seed", "at least 0")),
    Case("init-input-missing", "init {t}/proj --input {t}/nope", nothing,
         ("{t}/nope", "no such file or folder")),
    # ---- issue 40, item 9: messages that say what is there
    Case("multinews-input-is-a-folder", "ingest --format multinews --input {t}/mn "
         "--output {t}/out", lambda t, d: (t / "mn").mkdir(),
         ("{t}/mn", "is a folder, expected a Multi-News .jsonl or .parquet file")),
    Case("documents-input-is-dev-null", "ingest --format documents --input /dev/null "
         "--output {t}/out", nothing, ("/dev/null", "is a special file (a pipe or a device)")),
    Case("multinews-input-is-a-fifo", "ingest --format multinews --input {t}/fifo "
         "--output {t}/out", lambda t, d: os.mkfifo(t / "fifo"),
         ("{t}/fifo", "is a special file (a pipe or a device)")),
    # ---- issue 55, class 1: a bound on every LLM answer, before it is parsed or cached
    *[Case(f"llm-answer-{mode}", UDCG_SERVED, llm_server(mode),
           ("LLM server http://127.0.0.1:{port}/v1", *expect), env=LOCAL)
      for mode, expect in [
          ("huge", ("an answer longer than 8,388,608 bytes", "CRUXFLOW_MAX_ANSWER_BYTES",
                    "it declares 50,000,243")),
          ("huge-undeclared", ("an answer longer than 8,388,608 bytes",)),
          ("not-utf8", ("an answer that is not valid UTF-8 (byte 186",)),
          ("deep", ("an answer nested more than 64 deep",)),
          ("surrogate", ("half of a UTF-16 surrogate pair",)),
      ]],
    Case("llm-answer-bound-not-a-number", UDCG_SERVED, llm_server("ok"),
         ("$CRUXFLOW_MAX_ANSWER_BYTES is 'lots'", "a positive number of bytes"),
         env={**LOCAL, "CRUXFLOW_MAX_ANSWER_BYTES": "lots"}),
    # ---- issue 55, class 8: no redirect followed (the prompt stays where it was sent)
    Case("llm-redirect-to-another-host", UDCG_SERVED, llm_server("redirect", "localhost"),
         ("HTTP 307 redirect from http://127.0.0.1:{port}/v1/chat/completions to "
          "http://localhost:{other}/v1/chat/completions: not followed",), env=LOCAL),
    Case("llm-redirect-on-the-same-host", UDCG_SERVED, llm_server("redirect", "127.0.0.1"),
         ("HTTP 307 redirect from http://127.0.0.1:{port}/v1/chat/completions to "
          "http://127.0.0.1:{other}/v1/chat/completions: not followed",), env=LOCAL),
    # ---- issue 55, class 2: configs read strictly
    Case("plan-config-duplicate-key", "plan --config {t}/c.yaml",
         a_file("c.yaml", "datasets: {d: {format: crux}}\nmetrics: {eta: 3, eta: 5}\n"),
         ("{t}/c.yaml", "line 2", "key 'eta' is given twice (on line 2)")),
    Case("plan-config-dataset-defined-twice", "plan --config {t}/c.yaml",
         a_file("c.yaml", "datasets:\n  d: {format: crux, input: a}\n"
                          "  d: {format: crux, input: b}\n"),
         ("{t}/c.yaml", "line 3", "key 'd' is given twice (lines 2 and 3)")),
    Case("plan-config-dataset-named-yes", "plan --config {t}/c.yaml",
         a_file("c.yaml", "datasets:\n  yes: {format: crux, input: crux}\n"),
         ("{t}/c.yaml", "line 2", "key 'yes' is read by YAML as a boolean",
          "quote it ('yes')")),
    Case("plan-config-run-named-1.0", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nruns:\n  d:\n    1.0: r.run\n")),
         ("{t}/c.yaml", "line 5", "key '1.0' is read by YAML as a number", "quote it")),
    Case("plan-config-backend-named-on", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nllm:\n  backend: on\n")),
         ("{t}/c.yaml", "llm.backend: True is not of type 'string'", "quote a name: 'yes'")),
    Case("plan-config-nested-5000-deep", "plan --config {t}/c.yaml",
         a_file("c.yaml", "datasets: {d: {format: crux}}\nx: " + "[" * 5000 + "]" * 5000
                + "\n"), ("{t}/c.yaml", "line 2", "nested more than 100 deep")),
    Case("plan-config-cache-is-a-dataset-file", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nllm:\n  cache: crux/topics.jsonl"
             "\n")),
         ("{t}/c.yaml", "llm.cache: crux/topics.jsonl lies inside the input datasets.d.input")),
    Case("plan-config-cache-is-a-run", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: ((c.parent / "r.run").write_text("q Q0 d 1 1 r\n"),
                              (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nruns: {d: {mine: r.run}}\n"
             "llm:\n  cache: r.run\n"))),
         ("{t}/c.yaml", "llm.cache: r.run is the input runs.d.mine")),
    Case("plan-config-cache-is-not-sqlite", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: ((c.parent / "notes.txt").write_text("my notes\n"),
                              (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nllm:\n  cache: notes.txt\n"))),
         ("{t}/c.yaml", "llm.cache: is not an SQLite database (an LLM cache): notes.txt")),
    Case("plan-config-cache-is-a-folder", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: ((c.parent / "cache").mkdir(), (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nllm:\n  cache: cache\n"))),
         ("{t}/c.yaml", "llm.cache: is a folder, expected an SQLite file")),
    # ---- issue 55, class 3: the annotation app on a full disk (its labels: 507, in
    # tests/test_reliability.py, with a real server)
    Case("annotate-new-database-on-a-full-disk", "annotate --dataset {t}/data --task ratings "
         "--annotators a b --db {t}/disk/a.sqlite",
         full_disk(lambda t, d: data(t, d)),
         ("{t}/disk/a.sqlite", "cannot create the annotation database", "cannot write: No "
          "space left on device"), needs_demo=True),
    # ---- issue 55, class 7: a full standard output, a read-only file system
    Case("evaluate-standard-output-full", EVAL_ORACLE, data_with(),
         ("standard output: cannot write: No space left on device",), needs_demo=True,
         stdout="/dev/full"),
    Case("crux-eval-standard-output-full", "crux-eval --run " + ORACLE + " --qrel "
         "{t}/data/judgments/eta3/qrels.relevance.txt --judge {t}/data/answerability.jsonl",
         data_with(), ("standard output: cannot write: No space left on device",),
         needs_demo=True, stdout="/dev/full"),
    Case("evaluate-output-on-a-read-only-disk", EVAL_ORACLE + " --output {t}/ro/scores",
         read_only_disk(lambda t, d: data(t, d)),
         ("{t}/ro/scores", "cannot write: Read-only file system"), needs_demo=True),
    Case("udcg-new-cache-on-a-read-only-disk", "udcg --questions {t}/u.json --output "
         "{t}/out --cache {t}/ro/c.sqlite", read_only_disk(udcg_input(UDCG_ITEM)),
         ("{t}/ro/c.sqlite", "cannot write: Read-only file system")),
    Case("annotate-new-database-on-a-read-only-disk", "annotate --dataset {t}/data --task "
         "ratings --annotators a b --db {t}/ro/a.sqlite", read_only_disk(lambda t, d: data(t, d)),
         ("{t}/ro/a.sqlite", "cannot create the annotation database: cannot write: Read-only "
          "file system"), needs_demo=True),
    # ---- issue 55, class 5: every count bounded by what it computes
    Case("evaluate-resamples-a-billion", EVAL_ORACLE + " --run " + ORACLE + " --resamples "
         "1000000000", data_with(), ("argument --resamples", "must be at most 1,000,000",
                                     "got 1000000000"), needs_demo=True),
    Case("crux-eval-resamples-two-to-the-64-plus-1", CRUX_EVAL + " --run-b {t}/r.run "
         "--resamples 18446744073709551617", CRUX_EVAL_FILES,
         ("argument --resamples", "at most 1,000,000", "got 18446744073709551617")),
    Case("meta-eval-bootstrap-a-billion", "meta-eval --judge {t}/j.jsonl --human {t}/h.jsonl "
         "--bootstrap 1000000000", files("j.jsonl", "h.jsonl"),
         ("argument --bootstrap", "must be at most 100,000", "resamples x topics x 8 bytes")),
    Case("support-bootstrap-a-billion", "support --answers {t}/answers.jsonl --output {t}/out "
         "--bootstrap 1000000000", support_input(SUPPORT_ROW),
         ("argument --bootstrap", "at most 100,000")),
    Case("udcg-attempts-a-million", "udcg --questions {t}/u.json --output {t}/out --attempts "
         "1000000", udcg_input(UDCG_ITEM), ("argument --attempts", "at most 100")),
    Case("udcg-threads-a-million", "udcg --questions {t}/u.json --output {t}/out --threads "
         "1000000", udcg_input(UDCG_ITEM), ("argument --threads", "at most 1,024")),
    Case("udcg-logprobs-past-the-api", "udcg --questions {t}/u.json --output {t}/out "
         "--logprobs 21", udcg_input(UDCG_ITEM), ("argument --logprobs", "at most 20")),
    Case("kpr-rounds-a-thousand", "kpr --questions {t}/q.jsonl --output {t}/out --rounds 1000",
         files("q.jsonl"), ("argument --rounds", "at most 100")),
    Case("annotate-sample-past-any-round", "annotate --dataset {t}/data --task ratings "
         "--annotators a b --sample 99999999999 --db {t}/a.sqlite", data_with(),
         ("argument --sample", "at most 10,000,000"), needs_demo=True),
    Case("ingest-max-topics-past-the-bound", INGEST_CRUX + " --max-topics 999999999999",
         crux_with(lambda c: None), ("argument --max-topics", "at most 100,000,000")),
    Case("plan-calibrate-requests-a-million", f"plan --config {REPO}/config.yaml --workdir "
         f"{REPO} --calibrate-requests 1000000", nothing,
         ("argument --calibrate-requests", "at most 10,000")),
    Case("plan-config-bootstrap-a-billion", "plan --config {t}/c.yaml --workdir {t}",
         crux_with(lambda c: (c.parent / "c.yaml").write_text(
             "datasets:\n  d: {format: crux, input: crux}\nrag:\n  bootstrap: 1000000000\n")),
         ("rag.bootstrap: must be at most 100,000",)),
    # ---- llm-serve
    Case("llm-serve-port-in-use", "llm-serve --port {port}", port_in_use,
         ("port {port} on 127.0.0.1 is in use", "--port")),
    Case("llm-serve-port-out-of-range", "llm-serve --port 70000", nothing,
         ("argument --port", "0 to 65535")),
    Case("llm-serve-missing-model", "llm-serve --model {t}/nope.gguf --port 1", nothing,
         ("{t}/nope.gguf",)),
]


PROGRESS = re.compile(r"(\r[^\r]*\|[^\r]*)+")


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file and directory under ``root`` with its mode and content hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() else None
            out[str(p.relative_to(root))] = (oct(st.st_mode), digest)
    return out


def test_the_table_is_large_enough():
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
    commands = {c.argv.split()[0] for c in CASES}
    assert commands == {"ingest", "evaluate", "crux-eval", "agreement", "annotate", "udcg",
                        "support", "kpr", "plan", "llm-serve", "init", "export", "meta-eval"}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(
    reason=c.xfail, strict=False)] if c.xfail else []) for c in CASES])
def test_bad_input_is_one_clean_error_and_writes_nothing(case, tmp_path, capsys, request,
                                                          monkeypatch):
    for name, value in (case.env or {}).items():
        monkeypatch.setenv(name, value)
    t = tmp_path / "case"
    t.mkdir()
    demo = request.getfixturevalue("demo_dataset") if case.needs_demo else None
    try:
        _run_case(case, t, tmp_path, demo, capsys)
    finally:   # what the setup opened (a socket, a server, a mounted disk)
        while PORTS:
            PORTS.pop().close()


def _run_case(case: Case, t: Path, tmp_path: Path, demo, capsys) -> None:
    case.setup(t, demo)
    port = (t / "port").read_text() if (t / "port").exists() else ""
    other = (t / "other").read_text() if (t / "other").exists() else ""
    fill = lambda s: s.replace("{t}", str(t)).replace("{port}", port).replace(  # noqa: E731
        "{other}", other)
    before = snapshot(tmp_path)
    capsys.readouterr()
    stdout = sys.stdout
    try:
        if case.stdout:
            sys.stdout = open(case.stdout, "w")   # noqa: SIM115 (closed below)
        rc = main(fill(case.argv).split())
    except SystemExit as exc:   # argparse
        rc = exc.code
    finally:
        if case.stdout:
            with contextlib.suppress(OSError):
                sys.stdout.close()
            sys.stdout = stdout
    # a progress bar (redrawn after a carriage return) is no line of the error
    err = "\n".join(line for line in capsys.readouterr().err.split("\n")
                    if not PROGRESS.fullmatch(line))
    assert rc == 2, err
    assert "Traceback" not in err
    error = err.strip()
    assert len(error.splitlines()) == 1, err
    assert error.startswith("cruxflow")
    for fragment in map(fill, case.expect):
        assert fragment in error
    assert snapshot(tmp_path) == before


# --- replacing a dataset, and the modes of outputs ------------------------------------------


def test_reingest_replaces_the_old_dataset_as_a_whole(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["ingest", "--format", "crux", "--input", str(DEMO / "crux"),
                 "--output", str(out), "--eta", "5"]) == 0
    (out / "runs").mkdir()
    (out / "runs" / "old.run").write_text("demo-0 Q0 demo-0:0#0 1 1.0 old\n")
    old = set(snapshot(out))
    assert "judgments/eta5/judgments.jsonl" in old
    src = tmp_path / "mn.jsonl"
    shutil.copy(DEMO / "raw" / "multinews" / "demo.jsonl", src)
    assert main(["ingest", "--format", "multinews", "--input", str(src),
                 "--output", str(out), "--prefix", "mn", "--max-topics", "2"]) == 0
    new = set(snapshot(out))
    # only the dataset's own files, all rewritten: no judgments/eta5 or runs/
    assert new == {"topics.jsonl", "documents.jsonl", "passages", "passages/passages.jsonl",
                   "answerability.jsonl", "reference_ratings.jsonl", "manifest.json"}
    assert [json.loads(x)["topic_id"] for x in (out / "topics.jsonl").read_text().splitlines()] \
        == ["mn-0", "mn-1"]
    assert not list(tmp_path.glob(".out.*"))  # no temporary directory left beside it
    capsys.readouterr()


def test_a_failed_reingest_leaves_the_old_dataset_untouched(tmp_path, capsys):
    out = tmp_path / "out"
    ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
    before = snapshot(out)
    bad = tmp_path / "crux"
    shutil.copytree(DEMO / "crux", bad)
    edit_jsonl(bad / "judgements.jsonl", 3, lambda o: {**o, "rating": [9] * len(o["rating"])})
    assert main(["ingest", "--format", "crux", "--input", str(bad), "--output", str(out)]) == 2
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crux", "out"]
    capsys.readouterr()


def test_ingest_fills_a_directory_of_empty_folders(tmp_path):
    # what Snakemake leaves before rule ingest runs: the outputs' folders, no file
    out = tmp_path / "ingested" / "demo"
    (out / "passages").mkdir(parents=True)
    summary = ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"), eta=None)
    assert summary["topics"] == 10 and (out / "passages" / "passages.jsonl").is_file()


def test_atomic_directory_keeps_the_old_one_when_the_writing_fails(tmp_path):
    from cruxflow.data.outputs import atomic_directory

    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "old.txt").write_text("old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_directory(out) as tmp:
            (tmp / "new.txt").write_text("half")
            raise RuntimeError("disk full")
    assert sorted(snapshot(tmp_path)) == ["out", "out/sub", "out/sub/old.txt"]  # no temp left
    assert (out / "sub" / "old.txt").read_text() == "old"
    with atomic_directory(out) as tmp:
        (tmp / "new.txt").write_text("whole")
    assert sorted(snapshot(tmp_path)) == ["out", "out/new.txt"]


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755),
                                                        (0o027, 0o640, 0o750),
                                                        (0o077, 0o600, 0o700)])
def test_outputs_get_the_mode_the_umask_says(tmp_path, umask, file_mode, dir_mode, capsys):
    old = os.umask(umask)
    try:
        out = tmp_path / "out"
        assert main(["ingest", "--format", "crux", "--input", str(DEMO / "crux"),
                     "--output", str(out)]) == 0
        assert main(["evaluate", "--dataset", str(out), "--run",
                     str(out / "judgments" / "eta3" / "oracle.run"),
                     "--output", str(tmp_path / "scores")]) == 0
    finally:
        os.umask(old)
    modes = {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777
             for p in tmp_path.rglob("*")}
    assert "out/judgments/eta3/qrels.diversity.txt" in modes
    # out/ with 6 files, passages/, judgments/eta3/ with 5 files; scores/ with 2 files
    assert "scores/aggregate.tsv" in modes and len(modes) == (1 + 6 + 1 + 2 + 5) + (1 + 2)
    for name, mode in modes.items():
        want = dir_mode if (tmp_path / name).is_dir() else file_mode
        assert mode == want, (name, oct(mode), oct(want))
    capsys.readouterr()


def test_a_rewritten_file_keeps_its_mode(tmp_path):
    from cruxflow.data.io import write_json

    target = tmp_path / "x.json"
    write_json(target, {"a": 1})
    target.chmod(0o604)
    write_json(target, {"a": 2})
    assert target.stat().st_mode & 0o777 == 0o604 and json.loads(target.read_text()) == {"a": 2}


# --- the workflow config's names ------------------------------------------------------------


@pytest.mark.parametrize("section, key", [
    ({"beyond": {"udcg": {"a b": {"input": "u.json"}}}}, "beyond.udcg"),
    ({"beyond": {"kpr": {"x/y": {"input": "q.jsonl"}}}}, "beyond.kpr"),
    ({"runs": {"demo-crx": {"bm25": "r.run"}}}, "runs.demo-crx"),
    ({"beyond": {"backend": "nosuch", "udcg": {"u": {"questions": "u.json"}}}}, "beyond.backend"),
])
def test_config_names_that_would_fail_later_are_refused_up_front(section, key):
    from cruxflow.workflow.config import ConfigError, resolve, with_defaults

    config = {"datasets": {"demo-crux": {"format": "crux", "input": "crux"}}, **section}
    with pytest.raises(ConfigError) as err:
        resolve(with_defaults(config))
    assert key in err.value.keys


# --- outputs never replace inputs, whatever writes them (issue 31) --------------------------


def test_every_writer_refuses_a_protected_input(tmp_path):
    from cruxflow.data.errors import DataError
    from cruxflow.data.io import write_json
    from cruxflow.data.outputs import atomic_directory, inputs_protected
    from cruxflow.llm.cache import LLMCache

    run = tmp_path / "my.run"
    run.write_text("the user's run\n")
    folder = tmp_path / "crux"
    folder.mkdir()
    (tmp_path / "alias").symlink_to(run)
    with inputs_protected([(run, "--run"), (folder, "--input")]):
        for write in (lambda: write_json(tmp_path / "alias", {}),
                      lambda: LLMCache(run).close(),
                      lambda: atomic_directory(folder).__enter__()):
            with pytest.raises(DataError, match="is the command's input"):
                write()
    assert run.read_text() == "the user's run\n" and list(folder.iterdir()) == []
    write_json(tmp_path / "alias", {"a": 1})  # outside a command: an ordinary path again
    assert json.loads((tmp_path / "alias").read_text()) == {"a": 1}


# --- a full disk, a read-only file system, Ctrl-C (issue 31) --------------------------------


def _refusing_replace(code: int):
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith((".tsv", ".jsonl", ".json", ".txt", ".run")):
            raise OSError(code, os.strerror(code), str(dst))
        return real(src, dst, *args, **kwargs)
    return replace


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
@pytest.mark.parametrize("command", ["ingest", "evaluate"])
def test_a_full_or_read_only_disk_is_one_line_and_replaces_nothing(
        command, code, tmp_path, demo_dataset, capsys, monkeypatch):
    out = tmp_path / "out"
    if command == "ingest":
        ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
        argv = ["ingest", "--format", "crux", "--input", str(DEMO / "crux"), "--output", str(out),
                "--eta", "5"]
    else:
        shutil.copytree(demo_dataset, tmp_path / "data")
        argv = ["evaluate", "--dataset", str(tmp_path / "data"), "--run",
                str(tmp_path / "data" / "judgments" / "eta3" / "oracle.run"),
                "--output", str(out)]
        assert main(argv) == 0
        (out / "aggregate.tsv").write_text("the earlier result\n")
    before = snapshot(tmp_path)
    capsys.readouterr()
    monkeypatch.setattr(os, "replace", _refusing_replace(code))
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"cruxflow: error: {out}/") and os.strerror(code) in err
    assert "nothing was replaced" in err
    assert snapshot(tmp_path) == before   # no temporary file left, the old output whole


def test_ctrl_c_during_ingest_is_one_line_exit_130_and_the_old_dataset_stays(
        tmp_path, capsys, monkeypatch):
    from cruxflow.data.model import Dataset

    out = tmp_path / "out"
    ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
    before = snapshot(tmp_path)
    real_save = Dataset.save

    def save_then_interrupt(self, directory, **kwargs):   # Ctrl-C with half the files written
        real_save(self, directory, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Dataset, "save", save_then_interrupt)
    capsys.readouterr()
    rc = main(["ingest", "--format", "crux", "--input", str(DEMO / "crux"),
               "--output", str(out), "--max-topics", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 130 and err == "cruxflow: interrupted; outputs written before stay as they were"
    assert snapshot(tmp_path) == before


def test_ctrl_c_in_a_real_process_exits_130_and_keeps_the_old_dataset(tmp_path):
    """SIGINT to a real `cruxflow ingest` while it writes the new dataset over an old one."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    ingest_to("crux", DEMO / "crux", out, IngestOptions(prefix="crux"))
    row = json.dumps({"document": "An article about the flood. " * 20 + " ||||| "
                      + "Another article about it. " * 20, "summary": "A summary."})
    (tmp_path / "mn.jsonl").write_text((row + "\n") * 20_000)   # a few seconds to write out
    before = snapshot(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # Ctrl-C as a terminal delivers it, whatever this process ignores: a suite started as a
    # background job (`nohup bash scripts/test.sh &`) ignores SIGINT, the command would inherit
    # that across exec and run to its end (exit 0). A handler, unlike SIG_IGN, is reset there.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "cruxflow.cli", "ingest", "--format",
                                 "multinews", "--input", str(tmp_path / "mn.jsonl"), "--output",
                                 str(out)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.*.tmp/*")):   # writing the new dataset beside the old
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1].strip()
    assert proc.returncode == 130, err
    assert err == "cruxflow: interrupted; outputs written before stay as they were"
    assert snapshot(tmp_path) == before


def test_hidden_files_of_a_duc_folder_are_reported(tmp_path, capsys):
    d = duc(tmp_path)
    (d / "docs" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (d / "docs" / "d41002t" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    capsys.readouterr()
    assert main(["ingest", "--format", "duc2004", "--input", str(d), "--output",
                 str(tmp_path / "out")]) == 0
    assert "note: 2 hidden files skipped (.DS_Store)" in capsys.readouterr().out


def test_the_ingest_prefix_rule_is_the_config_schemas():
    """One name rule (cruxflow/data/names.py): the config schema's pattern for a prefix is its
    pattern, and the schema and the flags refuse and accept the same names."""
    import jsonschema

    from cruxflow.cli.args import name
    from cruxflow.data.names import NAME_PATTERN
    from cruxflow.workflow.config import config_schema

    schema = config_schema()
    dataset = schema["properties"]["datasets"]["additionalProperties"]["properties"]
    assert dataset["prefix"]["pattern"] == NAME_PATTERN
    for text, ok in ((".", False), ("..", False), ("a/b", False), ("", False), ("a:b", False),
                     ("...", True), (".a", True), ("duc04-testb", True), ("x_1.2", True)):
        try:
            name(text)
            flag_ok = True
        except argparse.ArgumentTypeError:
            flag_ok = False
        schema_ok = jsonschema.Draft202012Validator(dataset["prefix"]).is_valid(text)
        assert flag_ok is schema_ok is ok, text


@pytest.mark.parametrize("value,message", [
    ("a b", "contains whitespace"), ("  ", "is empty"), ("", "is empty"), (5, "expected str"),
    (True, "expected str"), (None, "missing"), ("t:0#1", None), ("\u00e9t\u00e9", None),
])
def test_identifiers_checked_at_a_glance_or_in_full(value, message):
    """_ident and _text take a plain string at a glance and send everything else through
    the full checks, whose errors name the field and record."""
    from cruxflow.data.errors import DataError
    from cruxflow.data.model import _ident, _text

    where = {"path": "x.jsonl", "record": "line 3"}
    obj = {} if value is None else {"id": value}
    if message is None:
        assert _ident(obj, "id", where) == value and _text(obj, "id", where) == value
        return
    with pytest.raises(DataError, match=message) as error:
        _ident(obj, "id", where)
    assert "x.jsonl" in str(error.value) and "line 3" in str(error.value)
    if message != "contains whitespace":
        with pytest.raises(DataError, match=message):
            _text(obj, "id", where)
    assert _text({"t": "  "}, "t", where, allow_empty=True) == "  "


def test_a_failed_read_leaves_the_garbage_collector_on(tmp_path):
    import gc

    from cruxflow.data.errors import DataError
    from cruxflow.data.model import Dataset

    (tmp_path / "topics.jsonl").write_text('{"topic_id": "a b", "doc_ids": []}\n')
    assert gc.isenabled()
    with pytest.raises(DataError, match="whitespace"):
        Dataset.load(tmp_path)
    assert gc.isenabled()


# --- issue 55, class 6: text from the inputs is shown escaped, never sent ----------------------

RAW = "\x1b]0;pwned\x07\x1b[31mred\u202e"   # sets the terminal's title, rings, turns it red
SHOWN = "\\x1b]0;pwned\\x07\\x1b[31mred\\u202e"


def _no_control(text: str) -> bool:
    return not any(c in text for c in "\x1b\x07\u202e")


def test_a_run_name_holding_esc_and_bel_is_shown_escaped(tmp_path, demo_dataset, capsys):
    """A run file whose name holds ESC and BEL (its name is the run's name in every table):
    the printed tables, the warnings and the TSV outputs show ``\\x1b``, never the byte; the
    run name given with --run-name alike; crux-eval's table too."""
    oracle = demo_dataset / "judgments" / "eta3" / "oracle.run"
    evil = tmp_path / f"{RAW}.run"
    shutil.copy(oracle, evil)
    other = tmp_path / "mine.run"
    rows = oracle.read_text().splitlines()
    other.write_text("\n".join(rows[::2]) + "\n")   # another run: half of the oracle's lines
    capsys.readouterr()
    assert main(["evaluate", "--dataset", str(demo_dataset), "--run", str(evil), str(other),
                 "--output", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr()
    assert _no_control(printed.out + printed.err)
    assert f"| {SHOWN} " in printed.out   # the table's row, aligned on the shown name
    for name in ("per_query.tsv", "aggregate.tsv", "paired.tsv"):
        text = (tmp_path / "out" / name).read_text()
        assert _no_control(text) and SHOWN in text, name
    assert main(["evaluate", "--dataset", str(demo_dataset), "--run", str(oracle),
                 "--run-name", RAW]) == 0
    printed = capsys.readouterr()
    assert _no_control(printed.out + printed.err) and SHOWN in printed.out
    assert main(["crux-eval", "--run", str(evil), str(other), "--qrel",
                 str(demo_dataset / "judgments" / "eta3" / "qrels.relevance.txt"),
                 "--judge", str(demo_dataset / "answerability.jsonl")]) == 0
    printed = capsys.readouterr()
    assert _no_control(printed.out + printed.err) and SHOWN in printed.out


def test_an_error_naming_a_control_character_is_one_escaped_line(tmp_path, capsys):
    bad = tmp_path / f"{RAW}\nsecond line.run"
    bad.write_text("q Q0 d 1 1.0\n")   # 5 columns: refused, naming the file
    assert main(["crux-eval", "--run", str(bad), "--qrel", str(bad), "--judge", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and _no_control(err), err
    assert f"{SHOWN}\\nsecond line.run" in err


def test_log_lines_show_control_characters_escaped(tmp_path):
    """The workflow's log lines (cruxflow.workflow.job.setup_logging): a name from the inputs
    is escaped, a traceback keeps its lines."""
    import logging
    from types import SimpleNamespace

    from cruxflow.workflow.job import setup_logging

    log_file = tmp_path / "rule.log"
    before = logging.getLogger().handlers[:]
    logging.getLogger().handlers[:] = []   # pytest's own handlers are not basicConfig's to close
    try:
        log = setup_logging(SimpleNamespace(log=[str(log_file)], rule="r"))
        log.info("scored run %s", RAW)
        try:
            raise ValueError("x")
        except ValueError:
            log.exception("with its traceback")
    finally:
        for handler in logging.getLogger().handlers:
            handler.close()
        logging.getLogger().handlers[:] = before
        sys.excepthook = sys.__excepthook__
    text = log_file.read_text()
    assert _no_control(text) and f"scored run {SHOWN}" in text
    assert "Traceback (most recent call last):\n" in text


# --- issue 55, class 4: the API as strict as the command line ----------------------------------

API_RUN = [("q1", "d1", 2.0), ("q1", "d2", 1.0)]
API_RATINGS = {"q1": {"d1": [3, 0], "d2": [0, 3]}}


def _frame_with(column: str, value):
    import pandas as pd

    frame = pd.DataFrame(API_RUN, columns=["query_id", "doc_id", "score"]).astype(object)
    frame.loc[1, column] = value
    return frame


@pytest.mark.parametrize("column", ["query_id", "doc_id"])
@pytest.mark.parametrize("value", [None, math.nan, "pandas-NA", "  "], ids=repr)
def test_a_missing_id_in_a_run_frame_is_refused_naming_row_and_field(column, value):
    """A NaN query_id was scored as the topic 'nan' and a None doc_id as an unjudged passage
    'None': each is now the project's error naming the row and the field."""
    import pandas as pd

    import cruxflow
    from cruxflow.data.errors import DataError

    value = pd.NA if value == "pandas-NA" else value
    with pytest.raises(DataError) as raised:
        cruxflow.evaluate(_frame_with(column, value), API_RATINGS, ["Cov@10"])
    assert str(raised.value).startswith(f"row 2: field '{column}': ")
    assert "is no id (1 of 2 rows)" in str(raised.value)


@pytest.mark.parametrize("judgments, field", [
    ({"q1": {"d1": [3, 0], None: [0, 3]}}, "doc_id"),                  # ratings
    ({"q1": {"d1": 1, math.nan: 1}}, "doc_id"),                         # relevance qrels
    ({None: {"d1": [3, 0]}}, "query_id"),
])
def test_a_missing_id_in_the_judgments_is_refused(judgments, field):
    import cruxflow
    from cruxflow.data.errors import DataError

    with pytest.raises(DataError, match=f"field '{field}': .* is no id"):
        cruxflow.evaluate({"q1": {"d1": 2.0}}, judgments, ["nDCG@10"])


def test_generators_numpy_scalars_and_rows_read_as_lists_would_be():
    """A generator of 3-tuples or ScoredDoc is the list it yields; numpy scalars are numbers;
    a numpy row of ratings is its list."""
    import ir_measures
    import numpy as np

    import cruxflow

    want = cruxflow.evaluate({"q1": {"d1": 2.0, "d2": 1.0}}, API_RATINGS, ["Cov@1", "Cov@2"])
    assert want.loc["q1"].tolist() == [0.5, 1.0]       # d1 answers question 1, d2 question 2
    for run in ((row for row in API_RUN),
                (ir_measures.ScoredDoc(*row) for row in API_RUN),
                {np.str_("q1"): {"d1": np.float32(2.0), "d2": np.int64(1)}}):
        got = cruxflow.evaluate(run, {"q1": {p: np.array(r) for p, r in
                                             API_RATINGS["q1"].items()}}, ["Cov@1", "Cov@2"])
        assert got.equals(want)


@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 1.5}, "alpha must lie strictly between 0 and 1, got 1.5"),
    ({"alpha": math.nan}, "alpha must be a finite number, got nan"),
    ({"alpha": 0}, "alpha must lie strictly between 0 and 1, got 0"),
    ({"resamples": 0}, "resamples must be at least 1, got 0"),
    ({"resamples": 2.5}, "resamples must be an integer from 1 to 1,000,000, got 2.5"),
])
def test_compare_refuses_what_the_command_line_refuses(kwargs, message, capsys):
    """The same words as the command line's: --confidence's and --resamples'."""
    import cruxflow
    from cruxflow.data.errors import DataError

    runs = {"a": {"q1": {"d1": 2.0}}, "b": {"q1": {"d2": 2.0}}}
    with pytest.raises(DataError) as raised:
        cruxflow.compare(runs, API_RATINGS, ["Cov@1"], **kwargs)
    assert str(raised.value) == message
    flag = "--confidence" if "alpha" in kwargs else "--resamples"
    value = str(next(iter(kwargs.values())))
    if value == "2.5":    # the command line reads text: its words are "not an integer: '2.5'"
        return
    command = ["agreement", "--confidence", value] if flag == "--confidence" else [
        "evaluate", "--resamples", value]
    with pytest.raises(SystemExit):
        main(command)
    err = capsys.readouterr().err
    assert message.split(" ", 1)[1] in err, err


def test_the_bootstrap_and_ppi_check_their_levels():
    from cruxflow.data.errors import DataError
    from cruxflow.metrics.stats import mean_interval
    from cruxflow.paper.ppi import ppi_mean

    with pytest.raises(DataError, match="confidence must lie strictly between 0 and 1, got 1"):
        mean_interval([0.1, 0.5, 0.9], confidence=1)
    with pytest.raises(DataError, match="n_resamples must be at most 100,000"):
        mean_interval([0.1, 0.5, 0.9], n_resamples=10 ** 9)
    with pytest.raises(DataError, match="alpha must be a finite number, got nan"):
        ppi_mean({"a": 1.0}, {"a": 1.0}, alpha=math.nan)

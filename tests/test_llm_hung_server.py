"""A hung OpenAI-compatible server does not stall a run in silence: a real ``cruxflow
llm-serve`` (the packaged SmolLM2) is paused with SIGSTOP in the middle of a ``cruxflow udcg``
run; with ``--timeout 5 --max-retries 1`` the command logs its retry, fails within seconds
naming the server and what it cached, and a re-run after SIGCONT makes only the missing calls.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from llm_server import free_port, wait_until_healthy

REPO = Path(__file__).resolve().parents[1]
CRUXFLOW = [sys.executable, "-m", "cruxflow.cli"]
QUESTIONS, PASSAGES = 8, 10   # 80 first-token calls, about 0.4 s each on 2 busy cores


@pytest.fixture
def env():
    return {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "PYTHONPATH": str(REPO)}


@pytest.fixture
def server(env):
    port = free_port()
    proc = subprocess.Popen([*CRUXFLOW, "llm-serve", "--port", str(port), "--threads", "1"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(proc, url)
        yield proc, f"{url}/v1"
    finally:
        os.kill(proc.pid, signal.SIGCONT)   # a stopped process cannot act on SIGTERM
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cached_calls(db: Path) -> int:
    try:
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:  # not created yet
        return 0


@pytest.mark.server
def test_a_paused_server_fails_fast_and_a_rerun_makes_only_the_missing_calls(
        tmp_path, server, env):
    proc, base_url = server
    items = [{"example_id": f"q{q}", "question": f"What is fact number {q}?",
              "answers": [f"answer {q}"],
              "passages": [{"doc_id": f"d{q}-{i}", "is_relevant": i == 0,
                            "text": f"Passage {i} about topic {q}: the number {q * 13 + i}."}
                           for i in range(PASSAGES)]} for q in range(QUESTIONS)]
    (tmp_path / "in.json").write_text(json.dumps(items))
    # one request at a time, so a 5 s timeout never catches a request queued behind others
    (tmp_path / "llm.yaml").write_text(yaml.safe_dump({"llm": {"backend": "srv", "backends": {
        "srv": {"kind": "openai", "base_url": base_url, "model": "smollm2",
                "concurrency": 1}}}}))
    out = tmp_path / "out"
    argv = [*CRUXFLOW, "udcg", "--questions", str(tmp_path / "in.json"), "--output", str(out),
            "--config", str(tmp_path / "llm.yaml"), "--timeout", "5", "--max-retries", "1"]
    run = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    db = out / "llm_cache.sqlite"
    try:
        deadline = time.monotonic() + 120
        while cached_calls(db) < 10:
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "fewer than 10 calls in 120 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        _, stderr = run.communicate(timeout=60)
        failed_after = time.monotonic() - paused
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        os.kill(proc.pid, signal.SIGCONT)
    cached = cached_calls(db)
    total = QUESTIONS * PASSAGES
    assert run.returncode == 2
    # one request in flight: 5 s, a logged wait of 0.5 s at most, 5 s again; then it gives up
    assert 9.5 < failed_after < 20, failed_after
    assert re.search(rf"LLM server {re.escape(base_url)}: no whole answer within 5 s \(timeout\) "
                     r"\(attempt 1 of 2\); retrying in 0\.\d s", stderr)
    error = stderr.strip().splitlines()[-1]
    assert error.startswith(f"cruxflow: error: LLM server {base_url}: APITimeoutError: ")
    assert f"(gave up after 2 attempts: max_retries 1); {cached} of these {total} requests " \
           f"are answered and cached in {db} (0 found there, {cached} new calls this run): a " \
           f"re-run asks only for the {total - cached} missing" in error
    assert 10 <= cached < total
    assert not (out / "summary.json").exists()

    rerun = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert (f"LLM (smollm2): {total} requests, {cached} from the cache, {total - cached} calls"
            in rerun.stdout)
    assert cached_calls(db) == total

"""A server that answers 200 with a body that is not the API's JSON (a proxy's page, a server
still starting) is a failed attempt: retried with the reason logged, then one error line, no
traceback (issue 31). A real HTTP server on 127.0.0.1 plays the server; the real `cruxflow
udcg` runs against it."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from llm_server import Misbehaving

REPO = Path(__file__).resolve().parents[1]
UDCG_ITEM = {"question": "who wrote it", "answers": ["someone"],
             "passages": [{"doc_id": "d1", "text": "Someone wrote it.", "is_relevant": True}]}


@pytest.fixture
def not_json_server():
    """Answers every POST with 200 and an HTML page, under either content type; counts them."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hits.append(self.path)
            body = b"<html><body>502 Bad Gateway (the proxy)</body></html>"
            self.send_response(200)
            kind = "application/json" if len(hits) % 2 else "text/html"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1", hits
    server.shutdown()
    server.server_close()


def test_a_200_that_is_not_json_is_retried_then_one_line(not_json_server, tmp_path):
    url, hits = not_json_server
    (tmp_path / "u.json").write_text(json.dumps([UDCG_ITEM]))
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1",
           "no_proxy": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-m", "cruxflow.cli", "udcg", "--questions",
                           str(tmp_path / "u.json"), "--output", str(tmp_path / "out"),
                           "--base-url", url, "--model", "m", "--max-retries", "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    err = proc.stderr
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert len(hits) == 3   # one request and its 2 retries
    retries = [line for line in err.splitlines() if "retrying in" in line]
    assert len(retries) == 2 and all("body is not JSON" in line for line in retries), err
    last = err.strip().splitlines()[-1]
    assert last.startswith("cruxflow: error: ") and url in last
    assert "not JSON" in last and "gave up after 3 attempts" in last
    assert "<html><body>502 Bad Gateway" in last   # what the server sent, so it can be found


@pytest.mark.parametrize("argv, expect", [
    (["--base-url", "ftp://127.0.0.1/v1", "--model", "m"], "an http:// or https:// URL"),
    (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env",
      "CRUXFLOW_TEST_UNSET_KEY"], "CRUXFLOW_TEST_UNSET_KEY (api key) is not set"),
])
def test_server_options_that_cannot_work_fail_at_once(argv, expect, tmp_path, capsys,
                                                      monkeypatch):
    from cruxflow.cli import main

    monkeypatch.delenv("CRUXFLOW_TEST_UNSET_KEY", raising=False)
    (tmp_path / "u.json").write_text(json.dumps([UDCG_ITEM]))
    try:
        rc = main(["udcg", "--questions", str(tmp_path / "u.json"), "--output",
                   str(tmp_path / "out"), *argv])
    except SystemExit as exc:   # refused by the argument's type, before the command runs
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and expect in err, err
    assert "Traceback" not in err


# --- issue 40: a deadline on every call, and answers that are not the API's shape ------------

def _udcg(tmp_path, url, *options) -> tuple[int, float]:
    """`cruxflow udcg` in this process against ``url``: exit status and seconds."""
    from cruxflow.cli import main

    (tmp_path / "u.json").write_text(json.dumps([UDCG_ITEM]))
    start = time.monotonic()
    rc = main(["udcg", "--questions", str(tmp_path / "u.json"), "--output", str(tmp_path / "out"),
               "--base-url", url, "--model", "m", *options])
    return rc, time.monotonic() - start


@pytest.fixture
def no_proxy(monkeypatch):
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1")


@pytest.mark.parametrize("mode", ["drip", "drip-head"])
def test_a_dripping_server_is_cut_at_the_attempts_timeout(mode, tmp_path, capsys, no_proxy):
    """The answer (or its headers) arrives one byte per 0.1 s: some 30 s for the body, 40 s for
    the headers. Each of the 2 attempts is cut at 1 s, whatever the per-read timeout says."""
    with Misbehaving(mode) as server:
        rc, seconds = _udcg(tmp_path, server.url, "--timeout", "1", "--max-retries", "1")
        assert len(server.hits) == 2
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert 2.0 < seconds < 4.5, seconds   # 1 s, a backoff of at most 0.5 s, 1 s
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"cruxflow: error: LLM server {server.url}: APITimeoutError: no "
                           "whole answer within 1 s (timeout) (gave up after 2 attempts: "
                           "max_retries 1)"), last


def test_the_calls_deadline_bounds_attempts_and_waits_together(tmp_path, capsys, no_proxy):
    with Misbehaving("drip") as server:
        rc, seconds = _udcg(tmp_path, server.url, "--timeout", "5", "--max-retries", "5",
                            "--deadline", "1.5")
        assert len(server.hits) == 1
    err = capsys.readouterr().err
    assert rc == 2 and 1.4 < seconds < 3.0, seconds
    last = err.strip().splitlines()[-1]
    assert ("APITimeoutError: the call's deadline of 1.5 s passed (deadline: connecting, "
            "answers, retries and waits together) (attempt 1 of 6)") in last, last


def test_a_retry_after_past_the_deadline_gives_up_at_once(tmp_path, capsys, no_proxy):
    with Misbehaving("retry-after") as server:
        rc, seconds = _udcg(tmp_path, server.url, "--timeout", "5", "--max-retries", "5")
        assert len(server.hits) == 1
    err = capsys.readouterr().err
    assert rc == 2 and seconds < 3, seconds
    last = err.strip().splitlines()[-1]
    assert "HTTP 503: come back tomorrow (the call's deadline of 51.5 s leaves " in last, last
    assert "no time to wait 100000 s for attempt 2)" in last, last


@pytest.mark.parametrize("mode, expect", [
    ("short", "the connection broke during the exchange"),
    ("logprobs-string", "HTTP 200 but the answer is not in the API's shape: "
                        "logprobs.content: expected list, got str 'not a list'"),
])
def test_a_broken_answer_is_one_line_that_says_what_broke(mode, expect, tmp_path, capsys,
                                                         no_proxy):
    with Misbehaving(mode) as server:
        rc, _ = _udcg(tmp_path, server.url, "--max-retries", "0")
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "Warning" not in err, err
    error = err.strip().splitlines()[-1]
    assert error.startswith(f"cruxflow: error: LLM server {server.url}: ") and expect in error
    assert "cannot connect" not in error


def test_every_connection_pool_of_the_client_is_bounded():
    """The deadline lives in the HTTP library's network backend (a private attribute): a
    release of the library that moves it fails here rather than silently unbounded."""
    from cruxflow.llm.openai_compat import OpenAIBackend

    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    assert backend.bounded_pools >= 1 and backend.bounded_transports >= 1
    backend.close()


# --- issue 55: a bound on every answer, and no redirect followed --------------------------------


@pytest.mark.parametrize("mode, expect", [
    ("huge", "an answer longer than 8,388,608 bytes (the bound on an LLM answer; raise it "
             "with CRUXFLOW_MAX_ANSWER_BYTES) (it declares 50,000,243)"),
    ("huge-undeclared", "an answer longer than 8,388,608 bytes (the bound on an LLM answer"),
    ("not-utf8", "an answer that is not valid UTF-8 (byte 186: b'\\xff\\xfe\"}}], ')"),
    ("deep", "an answer nested more than 64 deep"),
    ("surrogate", "an answer holding '\\ud800', half of a UTF-16 surrogate pair"),
    ("gzip", "an answer compressed as 'gzip', though cruxflow asks for none"),
])
def test_an_answer_past_the_bound_is_a_failed_attempt_then_one_line(mode, expect, tmp_path,
                                                                    capsys, caplog, no_proxy):
    """Issue 55: a 50 MB answer (its length declared, or not), content that is not UTF-8 or
    holds half a surrogate pair, JSON nested 200,000 deep: each attempt fails naming the bound
    (retried with the reason logged), the last ends the command in one line, and nothing is
    stored in the cache."""
    import sqlite3

    from cruxflow.llm import LLMCache

    cache = tmp_path / "c.sqlite"
    LLMCache(cache).close()
    with Misbehaving(mode) as server:
        rc, seconds = _udcg(tmp_path, server.url, "--max-retries", "1", "--cache", str(cache))
        assert len(server.hits) == 2
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    retries = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(retries) == 1 and expect in retries[0] and "(attempt 1 of 2)" in retries[0], \
        retries
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"cruxflow: error: LLM server {server.url}: ") and expect in last
    assert "(gave up after 2 attempts: max_retries 1)" in last, last
    assert sqlite3.connect(cache).execute("SELECT COUNT(*) FROM calls").fetchone() == (0,)
    assert seconds < 10, seconds   # 50 MB are not read: stopped at the bound


def test_the_bound_is_the_environments_and_a_bad_one_is_one_line(tmp_path, capsys, no_proxy,
                                                                 monkeypatch):
    monkeypatch.setenv("CRUXFLOW_MAX_ANSWER_BYTES", "100")
    with Misbehaving("ok") as server:   # 230 bytes: past a bound of 100
        rc, _ = _udcg(tmp_path, server.url, "--max-retries", "0")
    assert rc == 2
    assert "an answer longer than 100 bytes" in capsys.readouterr().err.strip().splitlines()[-1]
    monkeypatch.setenv("CRUXFLOW_MAX_ANSWER_BYTES", "lots")
    with Misbehaving("ok") as server:
        rc, _ = _udcg(tmp_path, server.url, "--max-retries", "0")
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2 and "$CRUXFLOW_MAX_ANSWER_BYTES is 'lots'" in last, last


@pytest.mark.parametrize("target", ["localhost", "127.0.0.1"])
def test_a_redirect_is_not_followed_and_named(target, tmp_path, capsys, no_proxy):
    """Issue 55: a 307 to another host (localhost on another port) or to another port of the
    same one: the prompt goes nowhere but where the user sent it (the other server is asked
    nothing), the redirect is not retried, and the error names its status, from and to."""
    with Misbehaving("ok") as other:
        to = f"http://{target}:{other.port}/v1/chat/completions"
        with Misbehaving("redirect", location=to) as server:
            rc, _ = _udcg(tmp_path, server.url, "--max-retries", "3")
            assert len(server.hits) == 1
        assert other.hits == []
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "retrying" not in err, err
    last = err.strip().splitlines()[-1]
    assert (f"HTTP 307 redirect from {server.url}/chat/completions to {to}: not followed (a "
            "redirect would send the prompt there)") in last, last


@pytest.mark.parametrize("text, expect", [
    ("x" * 101, "an answer longer than 100 bytes"),
    ("\u00e9" * 51, "an answer longer than 100 bytes"),     # 102 bytes in UTF-8
    ("a \\ud800 b", "an answer holding .\\\\ud800., half of a UTF-16 surrogate pair"),
])
def test_the_runner_neither_uses_nor_stores_an_answer_past_the_bound(text, expect, tmp_path,
                                                                     monkeypatch):
    """What an in-process backend (llama.cpp, vLLM) returns is held to the same bound before
    a stage parses it or the cache stores it."""
    from cruxflow.llm import Backend, Completion, LLMCache, LLMError, LLMRunner, Request

    monkeypatch.setenv("CRUXFLOW_MAX_ANSWER_BYTES", "100")
    answer = json.loads(f'"{text}"')

    class Verbose(Backend):
        kind = "fake"

        def generate(self, requests):
            return [Completion(answer) for _ in requests]

    runner = LLMRunner(Verbose("m"), LLMCache(tmp_path / "c.sqlite"))
    with pytest.raises(LLMError, match=f"LLM fake m: {expect}"):
        runner.generate([Request("p")])
    assert len(runner.cache) == 0 and runner.stats.calls == 0
    runner.close()

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
from pathlib import Path

import pytest

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
    rc = main(["udcg", "--questions", str(tmp_path / "u.json"), "--output", str(tmp_path / "out"),
               *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and expect in err, err
    assert "Traceback" not in err

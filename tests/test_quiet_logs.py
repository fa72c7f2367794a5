"""Quiet, useful logs: no line per HTTP request (a real llama.cpp server answering the openai
backend), and the JVM's INFO lines in the rule's log file, not on the console (a real Lucene
index built in a job-like process)."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llm_server import free_port, wait_until_healthy

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
       "PYTHONPATH": str(REPO)}


@pytest.fixture
def served():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "cruxflow.cli", "llm-serve", "--port",
                             str(port), "--threads", "1"], cwd=REPO, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(proc, url)
        yield f"{url}/v1"
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.server
def test_no_line_per_http_request(served, monkeypatch):
    from cruxflow.llm import Request, Sampling, make_backend

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_API_KEY", "none")
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)      # as a rule's setup_logging has it
    try:
        backend = make_backend({"kind": "openai", "model": "smollm2", "base_url": served})
        outs = [o for _, o in backend.generate_iter(
            [Request(f"Say {w}.", Sampling(max_tokens=4)) for w in ("yes", "no", "maybe")])]
        backend.close()
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    assert len(outs) == 3 and all(o.text is not None for o in outs)
    assert "HTTP Request" not in buffer.getvalue()
    assert logging.getLogger("httpx2").getEffectiveLevel() == logging.WARNING


@pytest.mark.jvm
def test_java_lines_go_to_the_rule_log_not_the_console(tmp_path):
    collection = tmp_path / "collection"
    collection.mkdir()
    (collection / "docs.jsonl").write_text(
        json.dumps({"id": "a", "contents": "the river rose"}) + "\n"
        + json.dumps({"id": "b", "contents": "roads were shut"}) + "\n")
    log = tmp_path / "rule.log"
    code = textwrap.dedent(f"""
        import logging
        from types import SimpleNamespace
        from cruxflow.workflow.job import setup_logging
        setup_logging(SimpleNamespace(log=[{str(log)!r}], rule="index"))
        logging.getLogger("job").info("before the index")
        from cruxflow.retrieval.bm25 import build_index, search
        build_index({str(collection)!r}, {str(tmp_path / "index")!r})
        hits = search({str(tmp_path / "index")!r}, {{"q": "river"}}, k=2)
        print("hits", [d for d, _ in hits["q"]], flush=True)
        logging.getLogger("job").warning("a warning for the console")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    console = proc.stdout + proc.stderr
    written = log.read_text()
    # Anserini's indexer reports through log4j: in the log file, none of it on the console
    assert "AbstractIndexer" in written and "AbstractIndexer" not in console
    assert "INFO" not in console
    # Python's own output still reaches the console, and the log keeps the job's records
    assert "hits ['a']" in proc.stdout and "a warning for the console" in proc.stderr
    assert "before the index" in written and "a warning for the console" in written

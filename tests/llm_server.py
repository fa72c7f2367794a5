"""A real `cruxflow llm-serve` (llama.cpp's OpenAI-compatible server, the packaged SmolLM2) on a
free port of 127.0.0.1, for the tests that talk to a served backend."""

from __future__ import annotations

import json
import socket
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_healthy(proc, url: str, seconds: float = 60) -> None:
    """Poll ``url``/health (no proxy) until the server says ok; fail if ``proc`` exits or
    ``seconds`` pass."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, "llm-serve exited"
        try:
            with opener.open(f"{url}/health", timeout=2) as resp:
                if json.loads(resp.read()) == {"status": "ok"}:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"llm-serve did not come up in {seconds:.0f} s"
        time.sleep(0.1)

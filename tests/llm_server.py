"""A real `cruxflow llm-serve` (llama.cpp's OpenAI-compatible server, the packaged SmolLM2) on a
free port of 127.0.0.1, for the tests that talk to a served backend; and a real HTTP server on
127.0.0.1 that answers the way a broken server does (:class:`Misbehaving`)."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import sys
import threading
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


# --- a server that misbehaves on purpose (tests/test_llm_bad_server.py, the bad-input table) ---

ANSWER = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                     "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                  "message": {"role": "assistant", "content": "yes"}}],
                     "usage": {"prompt_tokens": 7, "completion_tokens": 1}}).encode()


def answer_with_content(content: str) -> bytes:
    """:data:`ANSWER` with ``content`` (JSON source text, quotes included) as the message."""
    return ANSWER.replace(b'"yes"', content.encode("utf-8", "surrogatepass"))


class Misbehaving:
    """A real HTTP server on 127.0.0.1 that answers every POST the way ``mode`` says: ``drip``
    (a valid answer, one byte every 0.1 s), ``drip-head`` (the status line and headers just as
    slowly), ``retry-after`` (503 asking for 100,000 s), ``short`` (declares 1,000 bytes, sends
    10 and hangs up), ``logprobs-string`` (a 200 whose logprobs.content is a string),
    ``huge`` (a valid answer whose content is ``size`` bytes, its length declared), ``huge-
    undeclared`` (the same without a length: read until the server hangs up), ``not-utf8``
    (content holding the bytes ff fe), ``deep`` (``choices`` nested 200,000 deep),
    ``surrogate`` (content "\\ud800"), ``gzip`` (a valid answer compressed though not asked
    for), ``redirect`` (307 to ``location``), ``ok`` (a valid answer). ``hits`` counts the
    POSTs. Everything it starts stops on exit: the serving thread, and every dripping or
    streaming handler (it stops at the next piece once the server is closing)."""

    def __init__(self, mode: str, *, size: int = 50 * 1000 * 1000, location: str = ""):
        self.mode, self.hits, self.closing = mode, [], threading.Event()
        self.size, self.location = size, location
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def drip(self, data: bytes) -> None:
                for i in range(len(data)):
                    if outer.closing.wait(0.1):
                        return
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.hits.append(self.path)
                try:
                    self.answer()
                except OSError:  # the client gave up: what the bounds are for
                    pass

            def huge(self, declared: bool) -> None:
                head, tail = ANSWER.split(b'"yes"')
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declared:
                    self.send_header("Content-Length", str(len(head) + outer.size + 2
                                                           + len(tail)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(head + b'"')
                piece, left = b"x" * (1 << 20), outer.size
                while left > 0 and not outer.closing.is_set():
                    self.wfile.write(piece[:left])
                    left -= len(piece)
                self.wfile.write(b'"' + tail)

            def answer(self):
                mode, body = outer.mode, ANSWER
                if mode == "drip-head":
                    self.drip(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              + b"X-Padding: " + b"x" * 400 + b"\r\n")
                    return
                if mode in ("huge", "huge-undeclared"):
                    self.huge(declared=mode == "huge")
                    return
                if mode == "redirect":
                    self.send_response(307)
                    self.send_header("Location", outer.location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "retry-after":
                    self.send_response(503)
                    self.send_header("Retry-After", "100000")
                    body = b'{"error": {"message": "come back tomorrow"}}'
                else:
                    self.send_response(200)
                if mode == "logprobs-string":
                    answer = json.loads(ANSWER)
                    answer["choices"][0]["logprobs"] = {"content": "not a list"}
                    body = json.dumps(answer).encode()
                elif mode == "not-utf8":
                    body = ANSWER.replace(b'"yes"', b'"caf\xff\xfe"')
                elif mode == "deep":
                    body = b'{"choices": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
                elif mode == "surrogate":
                    body = answer_with_content('"a \\ud800 b"')
                elif mode == "gzip":
                    body = gzip.compress(ANSWER)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Type", "application/json")
                if mode == "short":
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(body[:10])
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "drip":
                    self.drip(body)
                else:
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = _ClientMayHangUp(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self.thread = threading.Thread(target=self.server.serve_forever)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class _ClientMayHangUp(http.server.ThreadingHTTPServer):
    """The client refusing an answer (past a bound) closes the connection while this server
    still reads or writes: that is the test working, not a traceback for its stderr."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

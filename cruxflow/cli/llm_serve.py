"""``cruxflow llm-serve``: serve a GGUF model with llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading

from cruxflow.cli import args as types
from cruxflow.llm import LLMError
from cruxflow.weights import DEFAULT_GGUF


def check_port_free(host: str, port: int) -> None:
    """Fail with the port's name before loading the model: llama.cpp's server only says
    "Failed to init server" when its port is taken."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise LLMError(f"--host {host}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # as the server does: a port left in TIME_WAIT by an earlier server is free to take
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise LLMError(f"port {port} on {host} is in use (another server?); pick "
                               "another with --port") from None
            raise LLMError(f"cannot listen on {host}:{port}: {e.strerror}") from None


def _cmd_llm_serve(args) -> int:
    from cruxflow.llm.llamacpp import gguf_path, serve

    gguf_path(args.model)
    check_port_free(args.host, args.port)
    try:
        server = serve(args.model, host=args.host, port=args.port, n_ctx=args.n_ctx,
                       threads=args.threads, n_parallel=args.parallel, verbose=args.verbose)
    except RuntimeError as e:  # xllamacpp's only word on a failed start
        raise LLMError(f"llama.cpp's server did not start on {args.host}:{args.port} ({e}); "
                       "run with --verbose to see why") from None
    print(f"serving {args.model} at {server.listening_address}/v1 (Ctrl-C stops)", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow llm-serve`` to the CLI's subparsers."""
    p = subparsers.add_parser("llm-serve",
                       help="serve a GGUF model with llama.cpp's OpenAI-compatible server")
    p.add_argument("--model", default=DEFAULT_GGUF,
                   help=f"GGUF path or package:<module>/<file> (default {DEFAULT_GGUF})")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=types.port, default=8080)
    p.add_argument("--n-ctx", type=types.positive_int, default=4096,
                   help="context window per slot")
    p.add_argument("--threads", type=types.positive_int, default=os.cpu_count() or 1)
    p.add_argument("--parallel", type=types.positive_int, default=1,
                   help="requests served at once")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=_cmd_llm_serve)

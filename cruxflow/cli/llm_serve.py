"""``cruxflow llm-serve``: serve a GGUF model with llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import errno
import signal
import socket
import threading
from functools import partial

from cruxflow.cli import vocabulary
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

    if args.port == 0:
        raise LLMError("--port 0: llm-serve needs a fixed port (1-65535), one its clients know")
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
    p = vocabulary.command(
        subparsers, "llm-serve",
        description="Serve a GGUF model (the packaged SmolLM2 by default) with llama.cpp's "
                    "OpenAI-compatible server at http://HOST:PORT/v1, for the workflow's "
                    "'served' backend and the commands' --base-url, until Ctrl-C. See "
                    "docs/llm.md.")
    add = partial(vocabulary.add, p)
    add("model", default=DEFAULT_GGUF)
    add("host")
    add("port", default=8080, detail="a fixed one (1-65535): the clients must know it")
    add("n-ctx")
    add("threads")
    add("parallel")
    add("verbose")
    p.set_defaults(func=_cmd_llm_serve)

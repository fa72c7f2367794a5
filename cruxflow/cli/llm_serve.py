"""``cruxflow llm-serve``: serve a GGUF model with llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import os
import signal
import threading

from cruxflow.weights import DEFAULT_GGUF


def _cmd_llm_serve(args) -> int:
    from cruxflow.llm.llamacpp import serve

    server = serve(args.model, host=args.host, port=args.port, n_ctx=args.n_ctx,
                   threads=args.threads, n_parallel=args.parallel, verbose=args.verbose)
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
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--n-ctx", type=int, default=4096, help="context window per slot")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--parallel", type=int, default=1, help="requests served at once")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=_cmd_llm_serve)

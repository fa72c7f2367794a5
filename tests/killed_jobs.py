"""Kill a real LLM job with SIGKILL once its call cache holds enough answers: the crash that
resume tests recover from (tests/test_llm.py, tests/test_llm_resume.py)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path


def cached_calls(path: Path) -> int:
    """Rows of the LLM cache's ``calls`` table, read only (0 before the file exists)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:  # not created yet
        return 0


def kill_after(proc: subprocess.Popen, cache: Path, calls: int, seconds: float) -> None:
    """SIGKILL ``proc`` as soon as ``cache`` holds ``calls`` answers; fail if it exits first or
    ``seconds`` pass."""
    try:
        deadline = time.monotonic() + seconds
        while cached_calls(cache) < calls:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, f"fewer than {calls} calls in {seconds:.0f} s"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

"""Which GPUs a job uses: Snakemake counts GPUs (``--resources gpu=N``) but does not assign
them, so without this every concurrent job that asks for one would run on the first.

A job claims as many of the machine's visible GPUs as its ``gpu`` resource with an exclusive
``flock`` on one file per GPU (node-local, released when the process ends, also when it is
killed) and narrows ``CUDA_VISIBLE_DEVICES`` to them before CUDA starts. Under SLURM the job
sees only its allocation and takes it without a lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

_held: list = []      # the open lock files of this process's claim; closed at exit


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else nvidia-smi's."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"cruxflow-gpus-{os.getuid()}"


def claim_gpus(n: int, *, lock_dir: Path | None = None, timeout_s: float = 3600,
               poll_s: float = 2.0) -> list[str]:
    """Claim ``n`` visible GPUs for the rest of this process and make them the only visible
    ones; the claimed ids. Idempotent within a process. Waits (up to ``timeout_s``) while
    other jobs hold them; raises if the machine has fewer than ``n``."""
    if n <= 0:
        return []
    if _held:
        return os.environ["CUDA_VISIBLE_DEVICES"].split(",")
    gpus = visible_gpus()
    if len(gpus) < n:
        raise RuntimeError(f"the job asks for {n} GPU(s) and {len(gpus)} are visible "
                           f"({','.join(gpus) or 'none'}); lower the rule's gpu resource")
    if os.environ.get("SLURM_JOB_ID"):
        # SLURM gave this job its own GPUs (and may number every job's from 0 on a shared
        # node): take them, no lock.
        claimed = gpus[:n]
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(claimed)
        return claimed
    lock_dir = Path(lock_dir or default_lock_dir())
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while True:
        got = []
        for gpu in gpus:
            f = open(lock_dir / f"gpu-{gpu}.lock", "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            got.append((gpu, f))
            if len(got) == n:
                break
        if len(got) == n:
            break
        for _, f in got:   # release a partial claim so two jobs cannot deadlock
            f.close()
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {n} free GPU(s) among {','.join(gpus)} within {timeout_s} s")
        log.info("waiting for %d free GPU(s) among %s", n, ",".join(gpus))
        time.sleep(poll_s)
    _held.extend(f for _, f in got)
    claimed = [gpu for gpu, _ in got]
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(claimed)
    log.info("GPUs %s claimed", ",".join(claimed))
    return claimed


def release_gpus() -> None:
    """Give the claim back (a process's claim otherwise lasts until it exits)."""
    while _held:
        _held.pop().close()

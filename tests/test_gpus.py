"""GPU claims: concurrent jobs on one machine get different GPUs (cruxflow.workflow.gpus)."""

import subprocess
import sys
from types import SimpleNamespace

import pytest

from cruxflow.workflow import gpus
from cruxflow.workflow.job import job_device


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """Three visible GPUs and a private lock directory; the claim is given back afterwards."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(gpus, "default_lock_dir", lambda: tmp_path)
    yield tmp_path
    gpus.release_gpus()


def claim_in_other_process(lock_dir, n, timeout_s=0.5):
    code = ("import os, sys; from cruxflow.workflow.gpus import claim_gpus\n"
            f"try: print(','.join(claim_gpus({n}, lock_dir={str(lock_dir)!r}, "
            f"timeout_s={timeout_s}, poll_s=0.1)), os.environ['CUDA_VISIBLE_DEVICES'])\n"
            "except TimeoutError as e: print('timeout', e)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"CUDA_VISIBLE_DEVICES": "0,1,2", "PATH": ""},
                          check=True).stdout.split()


def test_a_claim_narrows_the_visible_gpus(machine):
    assert gpus.claim_gpus(2) == ["0", "1"]
    assert gpus.visible_gpus() == ["0", "1"]
    assert gpus.claim_gpus(2) == ["0", "1"]          # idempotent in a process


def test_concurrent_jobs_get_different_gpus(machine):
    gpus.claim_gpus(2)
    assert claim_in_other_process(machine, 1) == ["2", "2"]
    assert claim_in_other_process(machine, 2)[0] == "timeout"   # only GPU 2 is free
    gpus.release_gpus()
    assert claim_in_other_process(machine, 3) == ["0,1,2", "0,1,2"]


def test_asking_for_more_gpus_than_visible_fails(machine):
    with pytest.raises(RuntimeError, match="asks for 4 GPU.* 3 are visible"):
        gpus.claim_gpus(4)


def test_job_device_follows_the_jobs_gpu_resource(machine):
    def job(**resources):
        return SimpleNamespace(resources=SimpleNamespace(**resources))

    assert job_device(job(gpu=0)) == "cpu"
    assert job_device(job()) == "cpu"
    assert gpus.visible_gpus() == ["0", "1", "2"]     # a CPU job claims nothing
    assert job_device(job(gpu=1)) == "cuda"
    assert gpus.visible_gpus() == ["0"]


def test_a_slurm_job_takes_its_allocation_without_a_lock(machine, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")    # SLURM numbers each job's GPUs from 0
    assert gpus.claim_gpus(1) == ["0"]
    assert not list(machine.iterdir())
    assert claim_in_other_process(machine, 1) == ["0", "0"]   # another job on the node

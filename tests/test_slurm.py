"""The SLURM profile against a real SLURM: a single-node cluster on this host (Debian's
slurm-wlm with slurmdbd, started by scripts/slurm_cluster.sh; needs root), a slice of the demo
workflow submitted through `--profile profiles/slurm`, SLURM's accounting records of the jobs,
and the results compared with a local run's.

The slice: ingestion (ingest, prepare, judgments), the knowledge corpus, BM25 indexing and search,
dense encoding in 2 shards as a GPU rule on a CPU-only cluster (config gpus: 1, overridden
with --set-resources), the dense gather and search, and the context metrics of both runs.
About 2 minutes, most of it the executor's polling.

It installs packages and starts daemons as root, so it runs only with CRUXFLOW_INVASIVE_TESTS=1
(tests/conftest.py), which scripts/test.sh sets: CI runs it, a plain `pytest` skips it.
CRUXFLOW_SLURM=skip skips it even then, where SLURM cannot be installed (no root).
"""

from __future__ import annotations

import atexit
import filecmp
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import slurm_environment

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
pytestmark = [pytest.mark.workflow, pytest.mark.invasive]

TARGETS = [f"results/metrics/demo-crux/eta3/per_query/{s}.tsv" for s in ("bm25", "dense")]
SHARDS = 2
EXPECTED_JOBS = Counter(ingest=1, prepare=1, judgments=1, corpus=1, bm25_index=1,
                        bm25_search=1, dense_encode=SHARDS, dense_index=1, dense_search=1,
                        context_metrics=2)
# A GPU rule on a CPU-only cluster: no GPU, and one CPU instead of the profile's GPU-job CPUs.
CPU_OVERRIDE = ["dense_encode:gpu=0", "dense_encode:cpus_per_task=1"]


def checkout_copy(dest: Path) -> Path:
    """The repository's files as a user's checkout has them (tracked and new, not ignored)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["datasets"] = {"demo-crux": config["datasets"]["demo-crux"]}
    retrieval = config["retrieval"]
    retrieval.update(retrievers=["bm25", "dense"], rerankers={}, encoding_shards=SHARDS)
    retrieval["dense"]["gpus"] = 1          # as on a GPU cluster
    config["rag"]["datasets"] = []
    config["beyond"] = {}
    (dest / "config.yaml").write_text(yaml.safe_dump(config))
    return dest


def run(cmd: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=slurm_environment())
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


DAEMONS = ("munged", "slurmdbd", "slurmctld", "slurmd", "mysqld_safe", "mariadbd")


def daemons_running() -> list[str]:
    """The cluster's daemons alive on this machine (by their command names in /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        names = {Path(part.decode(errors="replace")).name for part in command[:2]}
        found += [name for name in DAEMONS if name in names]
    return sorted(found)


def stop_cluster() -> None:
    subprocess.run(["bash", str(REPO / "scripts/slurm_cluster.sh"), "stop"], timeout=120,
                   capture_output=True, env=slurm_environment())


@pytest.fixture(scope="module")
def cluster():
    """A running cluster; one this fixture started is stopped again, every daemon of it, when
    the tests end, pass or fail (and, should pytest be interrupted, when Python exits)."""
    if os.environ.get("CRUXFLOW_SLURM") == "skip":
        pytest.skip("CRUXFLOW_SLURM=skip: no SLURM cluster on this machine")
    # the machine's SLURM configuration (the suite's other processes read one without a
    # cluster: tests/conftest.py, NO_CLUSTER)
    proc = subprocess.run(["bash", str(REPO / "scripts/slurm_cluster.sh")], capture_output=True,
                          text=True, timeout=600, env=slurm_environment())
    assert proc.returncode == 0, f"could not start SLURM:\n{proc.stdout}\n{proc.stderr}"
    started = "already up" not in proc.stdout   # a cluster someone else runs stays up
    if started:
        atexit.register(stop_cluster)
    try:
        yield
    finally:
        if started:
            stop_cluster()
            atexit.unregister(stop_cluster)
            assert daemons_running() == [], "slurm_cluster.sh stop left daemons running"


@pytest.fixture(scope="module")
def local_started(tmp_path_factory):
    """The same slice run locally, started before the cluster: it runs while SLURM starts and
    while the executor polls (most of the SLURM run's time), instead of after it. Stopped at
    the module's end if a failure left it running."""
    work = checkout_copy(tmp_path_factory.mktemp("local"))
    log = (work.parent / "local.log").open("w+")
    proc = subprocess.Popen([str(SNAKEMAKE), "--cores", "2", *TARGETS], cwd=work, text=True,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        yield work, proc, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def slurm_run(local_started, cluster, tmp_path_factory):
    work = checkout_copy(tmp_path_factory.mktemp("slurm"))
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
    proc = run([str(SNAKEMAKE), "--profile", "profiles/slurm", *TARGETS,
                "--set-resources", *CPU_OVERRIDE,
                # poll every few seconds instead of the profile's cluster-friendly 40 s
                "--slurm-init-seconds-before-status-checks", "3"], work, timeout=1200)
    out = proc.stdout + proc.stderr
    submitted = dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", out))
    fields = "JobID,JobName%80,Comment%200,State,ExitCode,Partition,Account,AllocTRES%120"
    sacct = subprocess.run(["sacct", "-X", "-n", "-P", "-S", since, "-o", fields],
                           capture_output=True, text=True, check=True,
                           env=slurm_environment()).stdout
    records = {}
    for line in sacct.splitlines():
        job_id, name, comment, state, exit_code, partition, account, tres = line.split("|")
        if job_id in submitted.values():
            records[job_id] = dict(name=name, comment=comment, state=state, exit_code=exit_code,
                                   partition=partition, account=account, tres=tres)
    return work, out, submitted, records


@pytest.fixture(scope="module")
def local_run(local_started):
    work, proc, log = local_started
    code = proc.wait(timeout=1200)
    log.seek(0)
    assert code == 0, log.read()[-8000:]
    return work


def test_every_job_ran_under_slurm(slurm_run):
    """SLURM's accounting database holds one completed job per workflow job, of each rule."""
    _, out, submitted, records = slurm_run
    steps = re.findall(r"(\d+) of (\d+) steps \(100%\) done", out)
    assert steps and steps[-1][0] == steps[-1][1] == str(sum(EXPECTED_JOBS.values()))
    assert len(submitted) == sum(EXPECTED_JOBS.values())
    assert set(records) == set(submitted.values()), "jobs missing from sacct"
    rules = Counter(re.match(r"rule_(\w+?)_wildcards", r["comment"]).group(1)
                    for r in records.values())
    assert rules == EXPECTED_JOBS
    for job_id, r in records.items():
        assert (r["state"], r["exit_code"]) == ("COMPLETED", "0:0"), (job_id, r)
        assert r["name"].startswith("cruxflow_")          # the profile's job name prefix
        assert r["partition"] == "cpu"                    # chosen by profiles/slurm/partitions.yaml
        assert r["account"] == "cruxflow"                 # found by the plugin with sacctmgr


def test_resources_reach_slurm(slurm_run):
    """Rule resources become the allocation; the GPU rule's override gave it one CPU, no GPU."""
    _, _, _, records = slurm_run
    by_rule = {}
    for r in records.values():
        by_rule.setdefault(r["comment"].split("_wildcards")[0][5:], []).append(r["tres"])
    # dense_encode declares threads 2, mem_mb 8000 and the config's gpu 1; the profile gives
    # GPU rules 8 CPUs, and the override takes the GPU and all but one CPU away
    assert len(by_rule["dense_encode"]) == SHARDS
    for tres in by_rule["dense_encode"]:
        assert "gpu" not in tres and "cpu=1," in tres and "mem=8000M" in tres
    assert by_rule["ingest"] == ["billing=1,cpu=1,mem=2000M,node=1"]
    assert by_rule["prepare"] == ["billing=1,cpu=1,mem=4000M,node=1"]


def test_results_equal_a_local_run(slurm_run, local_run):
    work, *_ = slurm_run
    compared = 0
    for path in sorted((local_run / "results").rglob("*")):
        rel = path.relative_to(local_run)
        # Lucene writes random segment ids and the FAISS index is compared through the runs
        if path.is_dir() or rel.parts[1] == "indexes" and rel.parts[3] in ("bm25", "dense"):
            continue
        assert (work / rel).is_file(), f"{rel} missing from the SLURM run"
        assert filecmp.cmp(path, work / rel, shallow=False), f"{rel} differs"
        compared += 1
    for name in ("bm25.run", "dense.run", "bm25.tsv", "dense.tsv",
                 f"shard0-of{SHARDS}.npz", f"shard1-of{SHARDS}.npz"):
        assert any(p.name == name for p in (local_run / "results").rglob(name)), name
    assert compared >= 15

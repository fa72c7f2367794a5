#!/usr/bin/env bash
# One command: set up .venv and run the whole test suite (unit tests, workflow runs, lint).
#   bash scripts/test.sh           the full suite, as CI runs it
#   bash scripts/test.sh --fast    the fast tier: every test that loads no model and starts no
#                                  JVM, server or workflow (pyproject's markers; tests/conftest.py
#                                  fails a test that starts one unmarked), with ruff; no setup
#                                  when .venv is there
# Further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Two pytest-xdist workers (CRUXFLOW_TEST_WORKERS=N for another number, 0 for none): the tests
# that share a finished workflow run or a port run in one worker (tests/conftest.py, XDIST_GROUPS).
WORKERS=${CRUXFLOW_TEST_WORKERS:-2}
if [ "${1:-}" = "--fast" ]; then
  shift
  [ -x .venv/bin/pytest ] || bash scripts/setup.sh
  .venv/bin/ruff check cruxflow workflow_scripts tests benchmarks resources/demo/build_demo.py
  if [ "$WORKERS" -gt 0 ]; then
    set -- -n "$WORKERS" --dist loadgroup "$@"
  fi
  exec .venv/bin/python -m pytest --fast "$@"
fi
bash scripts/setup.sh
# Tests that install system packages or start daemons (tests/test_slurm.py: SLURM as root) run
# here and in CI, not in a plain `pytest`. CRUXFLOW_INVASIVE_TESTS=0 bash scripts/test.sh skips them.
export CRUXFLOW_INVASIVE_TESTS=${CRUXFLOW_INVASIVE_TESTS:-1}
.venv/bin/ruff check cruxflow workflow_scripts tests benchmarks resources/demo/build_demo.py
# SLURM's client of this machine is not asked for a controller that may be down (9 s: see
# docs/gpu-and-slurm.md; pytest's processes get the same from tests/conftest.py)
SLURM_CONF=tests/data/slurm/no_cluster.conf .venv/bin/snakemake --lint
.venv/bin/snakefmt --check Snakefile rules
if [ "$WORKERS" -gt 0 ]; then
  set -- -n "$WORKERS" --dist loadgroup "$@"
fi
.venv/bin/python -m pytest "$@"

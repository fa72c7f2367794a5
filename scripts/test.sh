#!/usr/bin/env bash
# One command: set up .venv and run the whole test suite (unit tests, workflow runs, lint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Tests that install system packages or start daemons (tests/test_slurm.py: SLURM as root) run
# here and in CI, not in a plain `pytest`. CRUXFLOW_INVASIVE_TESTS=0 bash scripts/test.sh skips them.
export CRUXFLOW_INVASIVE_TESTS=${CRUXFLOW_INVASIVE_TESTS:-1}
.venv/bin/ruff check cruxflow workflow_scripts tests benchmarks resources/demo/build_demo.py
.venv/bin/snakemake --lint
.venv/bin/snakefmt --check Snakefile rules
.venv/bin/python -m pytest "$@"

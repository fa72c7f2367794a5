#!/usr/bin/env bash
# One command: set up .venv and run the whole test suite (unit tests, workflow runs, lint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check cruxflow workflow_scripts tests benchmarks resources/demo/build_demo.py
.venv/bin/snakemake --lint
.venv/bin/snakefmt --check Snakefile rules
.venv/bin/python -m pytest "$@"

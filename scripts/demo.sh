#!/usr/bin/env bash
# One command: set up .venv and run the main workflow on the embedded demo corpus (CPU, offline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# A lock left by a killed run (kill -9, lost power) stops Snakemake; say what to do about it.
if [ -n "$(ls -A .snakemake/locks 2>/dev/null)" ]; then
  echo "demo.sh: .snakemake/locks/ holds a lock. If no other snakemake runs in $PWD (an" \
       "earlier run was killed), clear it with: .venv/bin/snakemake --unlock; then run" \
       "scripts/demo.sh again (finished jobs and cached LLM calls are kept)." >&2
fi
.venv/bin/snakemake --cores "${CORES:-2}" --profile profiles/default "$@"
# The HTML report (every table and figure with its caption), then what was made and where.
mkdir -p logs
.venv/bin/snakemake --cores 1 --profile profiles/default "$@" --report results/report.html \
  > logs/report.log 2>&1 || echo "demo.sh: the HTML report failed: see logs/report.log" >&2
echo
.venv/bin/python -m cruxflow.paper.summary

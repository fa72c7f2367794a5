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
# On 2 cores a job of 2 threads (the encoders, the rerankers) starts only when no LLM job (1
# thread) runs, and one nearly always does: they were left to the end, one at a time (2 min of
# the demo's 10 on 2026-11-27). One thread each packs them beside the LLM stages.
if [ "${CORES:-2}" -le 2 ]; then set -- --max-threads 1 "$@"; fi
.venv/bin/snakemake --cores "${CORES:-2}" --profile profiles/default "$@"
# The HTML report (every table and figure with its caption), then what was made and where.
mkdir -p logs
.venv/bin/snakemake --cores 1 --profile profiles/default "$@" --report results/report.html \
  > logs/report.log 2>&1 || echo "demo.sh: the HTML report failed: see logs/report.log" >&2
echo
.venv/bin/python -m cruxflow.paper.summary

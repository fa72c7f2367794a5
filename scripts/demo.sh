#!/usr/bin/env bash
# One command: set up .venv and run the main workflow on the embedded demo corpus (CPU, offline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/snakemake --cores "${CORES:-2}" --profile profiles/default "$@"

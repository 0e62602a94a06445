#!/usr/bin/env bash
# Create .venv and install the project (with dev tools when given "dev"). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if [ "${1:-}" = "dev" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
else
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
fi

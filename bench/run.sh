#!/usr/bin/env bash
# Set up .venv with the bench extras (profilers) on first use, then run the benchmarks.
#   bench/run.sh            10k, 100k and 1M events (about 5 minutes on 2 cores)
#   bench/run.sh --quick    10k and 100k
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -c "import ledger, pyinstrument, uvicorn" 2>/dev/null && [ -x .venv/bin/py-spy ] \
  || .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[bench]'
exec .venv/bin/python -m bench "$@"

#!/usr/bin/env bash
# Set up .venv with the bench extras (profilers, the eventsourcing peer) on first use, then run the benchmarks.
#   bench/run.sh            10k, 100k and 1M events, SQLite and PostgreSQL
#   bench/run.sh --quick    10k and 100k
#   bench/run.sh --backend sqlite|postgresql|both    (default both)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -c "import ledger, pyinstrument, uvicorn, eventsourcing, psycopg_pool" 2>/dev/null && [ -x .venv/bin/py-spy ] \
  || .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[bench]'
# the PostgreSQL column's client; without it (offline, say) that column says why it is empty
.venv/bin/python -c "import psycopg" 2>/dev/null \
  || .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[bench,postgresql]' \
  || echo "bench/run.sh: psycopg not installed; the PostgreSQL column will say so" >&2
exec .venv/bin/python -m bench "$@"

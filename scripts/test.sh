#!/usr/bin/env bash
# Set up (first time), then lint, type-check, run the whole test suite and the public conformance check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
scripts/system-deps.sh || echo "warning: Chromium or PostgreSQL unavailable; their tests will skip" >&2
.venv/bin/ruff check ledger projections service api cli entry tests bench reliability
.venv/bin/ruff format --check ledger projections service api cli entry
.venv/bin/mypy
.venv/bin/lint-imports --no-cache  # the floors (pyproject.toml [tool.importlinter])
# the whole suite on SQLite (tests/contract/ runs on both backends here), then again on PostgreSQL
.venv/bin/python -m pytest "$@"
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || [ -n "${LEDGER_TEST_PG_URL:-}" ]; then
  LEDGER_TEST_BACKEND=postgresql .venv/bin/python -m pytest --ignore=tests/contract "$@"
elif [ -n "${CI:-}" ]; then
  echo "error: no PostgreSQL for the second pass of the suite" >&2
  exit 1
else
  echo "warning: no PostgreSQL server binaries: the suite ran on SQLite only" >&2
fi
if [ -x ../shared/tools/conformance ]; then
  ../shared/tools/conformance .venv/bin/ledger
fi

#!/usr/bin/env bash
# Set up (first time), then lint, type-check, hold the import contracts, run the whole test suite on
# SQLite and on PostgreSQL, and the public conformance check.
# `scripts/test.sh --fast`: the same checks, then only the tests that start no process, on SQLite.
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=
args=()
for a in "$@"; do
  if [ "$a" = "--fast" ]; then fast=1; else args+=("$a"); fi
done
start=$SECONDS
scripts/setup.sh dev
if [ -z "$fast" ]; then
  echo "installing what the browser and PostgreSQL tests need (apt-get: chromium, postgresql) if missing" >&2
  scripts/system-deps.sh  # fails naming what it could not install, and the way to do without
fi
.venv/bin/ruff check ledger projections service api cli entry tests bench reliability
.venv/bin/ruff format --check ledger projections service api cli entry
.venv/bin/mypy
.venv/bin/lint-imports --no-cache  # the floors (pyproject.toml [tool.importlinter])
if [ -n "$fast" ]; then
  LEDGER_TEST_FAST=1 .venv/bin/python -m pytest -m "not process" ${args[@]+"${args[@]}"}
  echo "fast checks and tests: $((SECONDS - start)) s (the full run: scripts/test.sh)" >&2
  exit 0
fi
# the whole suite on SQLite (tests/contract/ runs on both backends here), then again on PostgreSQL
.venv/bin/python -m pytest ${args[@]+"${args[@]}"}
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || [ -n "${LEDGER_TEST_PG_URL:-}" ]; then
  LEDGER_TEST_BACKEND=postgresql .venv/bin/python -m pytest --ignore=tests/contract ${args[@]+"${args[@]}"}
elif [ -n "${CI:-}" ]; then
  echo "error: no PostgreSQL for the second pass of the suite" >&2
  exit 1
else
  echo "warning: no PostgreSQL server binaries: the suite ran on SQLite only" >&2
fi
if [ -x ../shared/tools/conformance ]; then
  ../shared/tools/conformance .venv/bin/ledger
else
  echo "conformance check skipped: ../shared/tools/conformance is not beside this checkout (it comes with the project's shared folder, not with a clone)" >&2
fi
echo "all checks and tests: $((SECONDS - start)) s" >&2

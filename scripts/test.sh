#!/usr/bin/env bash
# Set up (first time), then lint, type-check, run the whole test suite and the public conformance check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
scripts/system-deps.sh || echo "warning: Chromium or PostgreSQL unavailable; their tests will skip" >&2
.venv/bin/ruff check ledger projections api tests bench reliability
.venv/bin/ruff format --check ledger projections api
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
if [ -x ../shared/tools/conformance ]; then
  ../shared/tools/conformance .venv/bin/ledger
fi

#!/usr/bin/env bash
# Create .venv and install the project (with dev tools when given "dev"), only when pyproject.toml (the
# dependencies, the packages, the `ledger` script) changed since the last install: a stamp in .venv
# holds its hash. `rm .venv/.installed-*` installs again anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
mode=${1:-run}
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
# a dev install holds everything a plain one does
for done in ".venv/.installed-$mode" .venv/.installed-dev; do
  if [ -x .venv/bin/ledger ] && [ -f "$done" ] && [ "$(cat "$done")" = "$want" ]; then
    exit 0
  fi
done
if [ "$mode" = "dev" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
else
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
fi
echo "$want" > ".venv/.installed-$mode"

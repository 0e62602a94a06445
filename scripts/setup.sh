#!/usr/bin/env bash
# Create .venv and install into it the pinned, hash-checked packages of locks/run.txt (or, given "dev",
# locks/dev.txt: the test and lint tools too), then the project itself. Only when pyproject.toml or a
# lock changed since the last install: a stamp in .venv holds their hash. `rm .venv/.installed-*`
# installs again anyway. scripts/lock.sh writes the locks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
mode=${1:-run}
case $mode in run | dev) ;; *) echo "usage: scripts/setup.sh [run|dev]" >&2; exit 2 ;; esac
want=$(cat pyproject.toml locks/run.txt locks/dev.txt | sha256sum | cut -d' ' -f1)
# a dev install holds everything a plain one does
for done in ".venv/.installed-$mode" .venv/.installed-dev; do
  if [ -x .venv/bin/ledger ] && [ -f "$done" ] && [ "$(cat "$done")" = "$want" ]; then
    exit 0
  fi
done
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
"${pip[@]}" --require-hashes -r "locks/$mode.txt"
# the project's own dependencies are all in the lock above
"${pip[@]}" --no-deps -e .
echo "$want" > ".venv/.installed-$mode"

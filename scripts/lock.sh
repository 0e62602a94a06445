#!/usr/bin/env bash
# Write locks/dev.txt and locks/run.txt: every package scripts/setup.sh installs, pinned to one version,
# with the sha256 of every file PyPI has for that version (so pip installs them with --require-hashes
# on any platform). pyproject.toml keeps the ranges, which `pip install .` still resolves anew.
#   scripts/lock.sh                        after editing pyproject.toml: keeps the pins that still fit
#   scripts/lock.sh --upgrade              the newest versions the ranges allow
#   scripts/lock.sh --upgrade-package X    X alone (repeatable)
# The resolver is uv (from PyPI, pinned below); it asks PyPI only.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.8
PY=${PYTHON:-python3}
tool=.venv/tools/uv-$UV_VERSION
if [ ! -x "$tool/bin/uv" ]; then
  "$PY" -m venv "$tool"
  "$tool/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
# one lock for every platform and every Python the project allows (3.11 up), each pin with its markers
common=(--universal --python-version 3.11 --generate-hashes --custom-compile-command scripts/lock.sh
  --quiet)
mkdir -p locks
# dev: what scripts/test.sh installs (the test suite, the linters, both optional backends' extras)
"$tool/bin/uv" pip compile pyproject.toml --extra dev --extra postgresql --extra replicate \
  "${common[@]}" -o locks/dev.txt "$@"
# run: what scripts/run.sh installs (the dependencies with the postgresql and replicate extras), at the
# dev lock's versions so the tests run what serves
"$tool/bin/uv" pip compile pyproject.toml --extra postgresql --extra replicate -c locks/dev.txt \
  "${common[@]}" -o locks/run.txt
echo "locks/dev.txt: $(grep -c '^[a-z0-9]' locks/dev.txt) packages; locks/run.txt: $(grep -c '^[a-z0-9]' locks/run.txt)" >&2

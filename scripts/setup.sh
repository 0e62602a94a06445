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
# PyICU (person names checked as Unicode TR39 says) builds against the system's ICU: its headers,
# pkg-config and a C++ compiler. Installed with apt-get when missing and possible; else named.
if ! pkg-config --exists icu-uc 2>/dev/null || ! command -v c++ >/dev/null 2>&1; then
  need=(libicu-dev pkg-config g++)
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "apt-get install -y ${need[*]} (PyICU builds against them)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "error: PyICU builds against ICU; install ${need[*]} (Debian's names) first" >&2
    exit 1
  fi
fi
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
"${pip[@]}" --require-hashes -r "locks/$mode.txt"
# the project's own dependencies are all in the lock above
"${pip[@]}" --no-deps -e .
echo "$want" > ".venv/.installed-$mode"

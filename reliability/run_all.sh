#!/usr/bin/env bash
# Every full run behind RELIABILITY.md, one after another; figures on stdout and in OUT_DIR.
# Usage: reliability/run_all.sh [OUT_DIR]   (default /tmp/ledger-reliability; ~45 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/ledger-reliability}"
mkdir -p "$out"
py=.venv/bin/python
run() { local name="$1"; shift; echo "== $name: $*"; "$@" 2>&1 | tee "$out/$name.txt"; }
run concurrency "$py" -m reliability.concurrency --events 10000
run crash "$py" -m reliability.crash --rounds 12
run import-kill "$py" -m reliability.import_kill --lines 400000 --kills 10 --backend sqlite
run backup "$py" -m reliability.backup_load --events 20000
run bombs "$py" -m reliability.bombs
run soak "$py" -m reliability.soak --duration 600 --out "$out/soak.json"
run fuzz env RELIABILITY_FULL=1 "$py" -m pytest -q -s -p no:cacheprovider --hypothesis-show-statistics \
  tests/api/test_reliability_fuzz.py tests/api/test_reliability_schemathesis.py
run limits-security "$py" -m pytest -q -s -p no:cacheprovider \
  tests/api/test_reliability_limits.py tests/api/test_security.py tests/service/ops/test_backup.py
run schemathesis-cli reliability/fuzz.sh 100

#!/usr/bin/env bash
# Schemathesis (CLI) against a real `ledger serve --workers 2` holding the sample record, with a write
# token, every built-in check plus reliability/st_hooks.py's two; then `ledger verify` on the result.
# Usage: reliability/fuzz.sh [MAX_EXAMPLES]   (default 100 per operation; the coverage phase always runs)
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-100}"
py=.venv/bin/python
st=.venv/bin/schemathesis
if ! "$st" --version >/dev/null 2>&1; then
  # schemathesis is a dev extra; without it, a venv of its own so the project's stays as it is
  [ -x .venv-fuzz/bin/schemathesis ] || { python3 -m venv .venv-fuzz && .venv-fuzz/bin/pip install -q schemathesis; }
  st=.venv-fuzz/bin/schemathesis
fi
work="$(mktemp -d)"
port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
token="fuzz-$RANDOM$RANDOM"
LEDGER_TOKENS="$token" "$py" -c 'from entry.main import main; main()' serve --db "$work/ledger.db" \
  --port "$port" --workers 2 >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
export LEDGER_FUZZ_BASE="http://127.0.0.1:$port" SCHEMATHESIS_HOOKS=reliability.st_hooks PYTHONPATH="$PWD"
status=0
"$st" --config-file reliability/schemathesis.toml run "$LEDGER_FUZZ_BASE/openapi.json" \
  -H "Authorization: Bearer $token" --checks all --exclude-path /evidence/stream \
  --max-examples "$examples" --workers 1 --seed 20261129 || status=$?
"$py" -c 'from entry.main import main; main()' verify --db "$work/ledger.db" || status=$?
grep -c '" 500 ' "$work/server.log" | sed 's/^/server 500 answers: /' || true
exit "$status"

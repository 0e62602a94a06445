#!/usr/bin/env bash
# What the tests need beyond PyPI, from Debian's packages: headless Chromium (tests/e2e/test_browser.py)
# and PostgreSQL's server binaries (the suite's second pass, tests/contract/, which start a throwaway
# cluster). Installs what is missing with apt-get, saying so; fails naming it when it cannot.
# LEDGER_TEST_SKIP_BROWSER=1 does without Chromium (the browser tests skip, saying why);
# LEDGER_TEST_PG_URL (an existing server) or LEDGER_TEST_SKIP_POSTGRESQL=1 does without PostgreSQL's.
set -euo pipefail
missing=()
if [ -z "${LEDGER_TEST_SKIP_BROWSER:-}" ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
fi
if [ -z "${LEDGER_TEST_PG_URL:-}" ] && [ -z "${LEDGER_TEST_SKIP_POSTGRESQL:-}" ]; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
fail() {
  echo "error: the tests need ${missing[*]} (Debian packages), and $1." >&2
  echo "  Install them: sudo apt-get install -y ${missing[*]}" >&2
  echo "  Or do without: LEDGER_TEST_SKIP_BROWSER=1 (the browser tests skip), LEDGER_TEST_PG_URL=postgresql://..." \
    "(an existing server) or LEDGER_TEST_SKIP_POSTGRESQL=1 (the suite runs on SQLite only)" >&2
  exit 1
}
[ "$(id -u)" = "0" ] || fail "only root can apt-get them"
command -v apt-get >/dev/null 2>&1 || fail "this machine has no apt-get"
echo "apt-get install -y ${missing[*]}" >&2
apt-get update -qq >/dev/null || fail "apt-get update failed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || fail "apt-get install failed"

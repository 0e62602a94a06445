#!/usr/bin/env bash
# What the tests need beyond PyPI, from Debian's packages: headless Chromium (tests/test_browser.py)
# and PostgreSQL (tests/contract/, which start a throwaway cluster), plus Playwright's Python driver.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing ${missing[*]} and this user cannot apt-get them; those tests will skip" >&2
    exit 1
  fi
fi
.venv/bin/python -m pip install -q --disable-pip-version-check playwright

#!/usr/bin/env bash
# Headless Chromium (Debian's package) and Playwright's Python driver, for tests/test_browser.py.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is not installed and this user cannot apt-get it" >&2
    exit 1
  fi
fi
.venv/bin/python -m pip install -q --disable-pip-version-check playwright

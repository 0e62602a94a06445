#!/usr/bin/env bash
# Set up (first time) and serve the ledger on ./ledger.db; an empty ledger gets the sample record.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/ledger serve "$@"

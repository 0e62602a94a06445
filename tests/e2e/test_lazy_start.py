"""The `ledger` command starts lazily: importing its commands loads neither the resolver nor the HTTP
server; each command imports what it runs when it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT

# what only `ledger resolve` and `ledger serve` need, and what costs every other command's start-up
HEAVY = ("rapidfuzz", "icu", "service.resolver", "fastapi", "uvicorn", "api.app")


@pytest.mark.process
@pytest.mark.parametrize("module", ["cli.main", "entry.main"])
def test_starting_the_command_line_loads_no_resolver_and_no_server(module: str):
    probe = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.split() == []

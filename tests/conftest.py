"""Shared fixtures: a fresh ledger per test and the real record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.service import Ledger

DATA = Path(__file__).parent / "data"
FIXTURE_PATH = DATA / "2509.02480.record.json"
FIXTURE_ID = "2509.02480"


@pytest.fixture
def fresh_ledger(tmp_path: Path) -> Ledger:
    """An empty ledger in its own temporary file."""
    return Ledger(tmp_path / "ledger.db")


@pytest.fixture
def fixture_bytes() -> bytes:
    """The real record, exactly as served."""
    return FIXTURE_PATH.read_bytes()


@pytest.fixture
def fixture_record(fixture_bytes: bytes) -> dict[str, Any]:
    """The real record, parsed."""
    return json.loads(fixture_bytes)


@pytest.fixture
def imported_ledger(fresh_ledger: Ledger, fixture_bytes: bytes) -> Ledger:
    """A ledger holding the real record's events."""
    fresh_ledger.import_bytes(fixture_bytes)
    return fresh_ledger

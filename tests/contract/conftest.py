"""Fixtures of the per-backend contract tests: `store_url` is SQLite always, PostgreSQL when one starts."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.pg_harness import PgCluster

BASE_US = 1_788_220_800_000_000  # 2026-09-01: after every fixture event (the ledgers' clock: their "now")


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh empty PostgreSQL database."""
    return pg_cluster.create_db()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty ledger on each backend: a file path or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    url: str = request.getfixturevalue("pg_url")
    return url


class FixedClock:
    """recorded_at from a counter (1 ms per append), restartable so two backends see the same times."""

    def __init__(self) -> None:
        self.ticks = itertools.count()

    def restart(self) -> None:
        """Start again from BASE_US."""
        self.ticks = itertools.count()

    def now_us(self) -> int:
        """The next tick."""
        return BASE_US + 1000 * next(self.ticks)


@pytest.fixture
def fixed_clock() -> FixedClock:
    """A clock for the ledgers compared, so hashes (which cover recorded_at) can be compared across
    backends."""
    return FixedClock()

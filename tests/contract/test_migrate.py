"""`ledger migrate`: a ledger copied between backends event for event, then verified."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.backend import copy_ledger
from ledger.cli_backends import migrate
from ledger.errors import ChainBroken, Conflict
from ledger.instants import parse_as_of
from ledger.service import Ledger
from tests.contract.scenario import replay

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"


@pytest.fixture
def source(tmp_path: Path) -> Ledger:
    """A SQLite ledger with the scenario (real clock: recorded_at as it happened)."""
    ledger = Ledger(tmp_path / "source.db")
    replay(ledger, FIXTURE.read_bytes())
    return ledger


def test_round_trip_through_another_backend(source: Ledger, store_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(migrate, ["--from", str(source.path), "--to", store_url, "--batch", "50"])
    assert out.exit_code == 0, out.output
    assert f"OK: {source.head().seq} events verified in the target" in out.output
    middle = Ledger(store_url)
    assert middle.store.read_log() == source.store.read_log()  # same seq, recorded_at, bytes and hashes
    assert list(middle.store.iter_check_works()) == list(source.store.iter_check_works())
    back = tmp_path / "back.db"
    out = runner.invoke(migrate, ["--from", store_url, "--to", str(back)])
    assert out.exit_code == 0, out.output
    again = Ledger(back)
    assert again.store.read_log() == source.store.read_log()
    t = parse_as_of("2026-06-01")
    assert again.record_bytes("2101.00001", t) == source.record_bytes("2101.00001", t)
    assert again.verify().ok


def test_refuses_a_non_empty_target(source: Ledger, store_url: str) -> None:
    target = Ledger(store_url)
    target.import_bytes(FIXTURE.read_bytes())
    with pytest.raises(Conflict, match="empty ledger only"):
        copy_ledger(source.store, target.store)
    out = CliRunner().invoke(migrate, ["--from", str(source.path), "--to", store_url])
    assert out.exit_code == 1 and "empty ledger only" in out.output
    assert target.head().seq == 132


def test_refuses_a_broken_source(source: Ledger, store_url: str) -> None:
    with sqlite3.connect(source.path) as conn:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("UPDATE events SET data = replace(data, 'MLP-Offload', 'MLP-Onload') WHERE seq = 1")
    with pytest.raises(ChainBroken, match="seq 1: in the source"):
        copy_ledger(source.store, Ledger(store_url).store)
    assert Ledger(store_url).head().seq == 0

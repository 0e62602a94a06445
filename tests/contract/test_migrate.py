"""`ledger migrate`: a ledger copied between backends event for event, then verified."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.backends import migrate
from ledger.model.errors import ChainBroken, Conflict
from ledger.model.instants import parse_as_of
from ledger.storage.backend import copy_ledger
from ledger.storage.projector import READ_BY_RECORDS
from service.ledger import Ledger
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
    # the standing checks' rows are a projection: the copy projected its own, the source is brought up
    source.ops.project(READ_BY_RECORDS)
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


def test_backup_of_any_backend_is_a_verified_sqlite_file(
    source: Ledger, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ledger backup` of a PostgreSQL ledger writes a new SQLite file, with key and last checkpoint."""
    from cli.ops import backup_command
    from ledger.tlog.checkpoint import Checkpointer

    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(migrate, ["--from", str(source.path), "--to", store_url]).exit_code == 0
    live = Ledger(store_url)
    signed = Checkpointer.for_db(live.store).latest()
    dest = tmp_path / "backup.db"
    out = runner.invoke(backup_command, [str(dest), "--db", store_url])
    assert out.exit_code == 0, out.output
    assert f"head seq {source.head().seq}" in out.output and "verify: OK" in out.output
    copy = Ledger(dest)
    assert copy.store.read_log() == source.store.read_log()
    assert (tmp_path / "backup.db.checkpoint").read_text() == signed.note
    assert (tmp_path / "backup.db.key").stat().st_mode & 0o777 == 0o600
    # the copy signs with the same key, consistently with the checkpoint the live ledger signed
    assert Checkpointer.for_db(copy.store).latest().note == signed.note
    again = runner.invoke(backup_command, [str(dest), "--db", store_url])
    assert again.exit_code == 1 and "already exists" in again.output


def test_migrate_carries_key_tokens_and_last_checkpoint(
    source: Ledger, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target signs with the same key, after the checkpoint the source signed, and accepts its tokens."""
    from ledger.tlog.checkpoint import Checkpointer

    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "state").mkdir()
    signed = Checkpointer.for_db(source.store).latest()
    source.store.tree.side_file(".tokens").write_text("ab" * 32 + "\n")
    out = CliRunner().invoke(migrate, ["--from", str(source.path), "--to", store_url])
    assert out.exit_code == 0, out.output
    assert "carried over:" in out.output and "the last signed checkpoint" in out.output
    target = Ledger(store_url)
    assert target.store.tree.last_checkpoint() == signed.note
    assert target.store.tree.side_file(".tokens").read_text() == "ab" * 32 + "\n"
    assert target.store.tree.side_file(".key").stat().st_mode & 0o777 == 0o600
    assert Checkpointer.for_db(target.store).latest().note == signed.note  # same key, same tree
    assert target.verify().ok

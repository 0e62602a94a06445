"""`ledger backup DEST`: an online copy while a writer goes on; the copy verifies, serves the same records,
keeps the signing identity, and restores as docs/operations.md documents.

On PostgreSQL `ledger backup` copies the ledger, event for event, into a new SQLite file
(docs/deployment.md); the same properties are checked there, except what belongs to SQLite's online
backup API (page steps, restarts) and the restore of docs/operations.md, which copies the file back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from api.app import create_app
from api.settings import Settings
from cli.main import main
from ledger.model.errors import ChainBroken
from ledger.storage.backend import is_pg_url
from ledger.tlog.checkpoint import Checkpointer
from service.ledger import Ledger
from service.ops.backup import BackupError, backup
from tests.paths import ROOT
from tests.waiting import poll

if TYPE_CHECKING:
    from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

SAMPLE = ROOT / "tests" / "data" / "2509.02480.record.json"
PAPER, AS_OF = "2509.02480", "2026-08-08T08:47:00Z"


def _source(new_db: NewDb) -> str:
    db = new_db("live.db")
    ledger = Ledger(db)
    ledger.import_bytes(SAMPLE.read_bytes())
    Checkpointer.for_db(ledger.store).latest()  # a signed checkpoint and a key next to it
    ledger.close()
    return db


def _writer(db: str, out: Path, events: int) -> subprocess.Popen[str]:
    """A separate process appending `events` events in small batches (reliability/workload.py)."""
    cmd = [sys.executable, "-m", "reliability.workload", "0", str(events), str(out), "--db", str(db)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([*cmd, "--max-batch", "5"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def _get(db: str | Path, url: str) -> bytes:
    client = TestClient(create_app(Settings(db=str(db))))
    r = client.get(url)
    assert r.status_code == 200, r.text
    return r.content


def test_backup_while_another_process_writes(new_db: NewDb, tmp_path: Path) -> None:
    src, dest = _source(new_db), tmp_path / "copy.db"
    live = Ledger(src)
    writer = _writer(src, tmp_path / "writer.json", 4000)
    try:
        poll(lambda: live.head().seq >= 300, 30, every=0.02)  # the writer is well under way
        before = live.head().seq
        # small steps with a pause: the copy spans many of the writer's commits
        report = backup(src, dest, step_pages=2, pause=0.01)
        after = live.head().seq
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    print(
        f"backup: {report.pages} pages, {report.steps} steps, {report.seconds:.2f} s; "
        f"the writer went from seq {before} to {after}"
    )
    if not is_pg_url(src):  # SQLite's online backup API: page steps, with a pause after each
        assert after > before + 20, "the writer was held up while the backup ran"
        assert report.steps > 10 and report.restarts == 0  # one snapshot across all steps: never restarted
    assert report.verify is not None and report.verify.ok, report.verify
    assert before <= report.head.seq <= after
    assert report.verify.events_checked == report.head.seq
    assert sorted(report.side_files) == [".checkpoint", ".key"]
    # the same events, byte for byte, up to the copy's head; the same records and the same key
    n = report.head.seq
    assert Ledger(dest).store.read_log(0, n) == Ledger(src).store.read_log(0, n)
    record = f"/paper/{PAPER}/citation-record.json?as_of={AS_OF}"
    assert _get(dest, record) == _get(src, record)
    assert _get(dest, "/checkpoint/key") == _get(src, "/checkpoint/key")
    assert Ledger(src).verify().ok


def test_backup_files_are_private_and_never_overwritten(new_db: NewDb, tmp_path: Path) -> None:
    src, dest = _source(new_db), tmp_path / "copy.db"
    backup(src, dest)
    for name in ("copy.db", "copy.db.key", "copy.db.checkpoint"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name
    with pytest.raises(BackupError, match="already exists"):
        backup(src, dest)
    with pytest.raises(BackupError, match="no ledger"):
        backup(tmp_path / "missing.db", tmp_path / "other.db")


@pytest.mark.sqlite_only(
    "docs/operations.md's restore copies the backup file (and its side files) over the SQLite ledger file; "
    "a PostgreSQL ledger is restored by its DBA (pg_restore, or `ledger migrate` from the SQLite copy)"
)
def test_restore_as_documented(new_db: NewDb, tmp_path: Path) -> None:
    """Stop, copy the backup (and its side files) over the ledger, delete -wal/-shm, start."""
    src, dest = _source(new_db), tmp_path / "copy.db"
    backup(src, dest)
    later = Ledger(src)
    later.import_bytes(
        b'{"type":"measurement.observed","observed_at":"2026-09-01T00:00:00Z","data":'
        b'{"arxiv_id":"2509.02480","source":"openalex","metric":"cited_by_count","value":3,'
        b'"source_release":null,"query_url":null}}'
    )
    Checkpointer.for_db(later.store).latest()  # a checkpoint of 133 events, after the backup
    later.close()
    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(dest, restored / "ledger.db")
    ledger = Ledger(restored / "ledger.db")
    assert ledger.verify().ok and ledger.head().seq == 132
    # without the backup's checkpoint next to it, a later one (133 events) is refused: the rollback shows
    shutil.copy(str(src) + ".key", restored / "ledger.db.key")
    shutil.copy(str(src) + ".checkpoint", restored / "ledger.db.checkpoint")
    with pytest.raises(ChainBroken, match="refusing to sign"):
        Checkpointer.for_db(ledger.store).latest()
    # with the backup's own checkpoint, the restored ledger signs again under the same key
    shutil.copy(str(dest) + ".checkpoint", restored / "ledger.db.checkpoint")
    signed = Checkpointer.for_db(ledger.store).latest()
    assert signed.checkpoint.size == 132


def test_ledger_backup_command(new_db: NewDb, tmp_path: Path) -> None:
    src = _source(new_db)
    runner = CliRunner()
    result = runner.invoke(main, ["backup", str(tmp_path / "b.db"), "--db", str(src)])
    assert result.exit_code == 0, result.output
    assert "head seq 132" in result.output and "verify: OK: 132 events verified" in result.output
    again = runner.invoke(main, ["backup", str(tmp_path / "b.db"), "--db", str(src)])
    assert again.exit_code == 1 and "already exists" in again.output

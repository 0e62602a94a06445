"""bench/floor_ratios.py: the floor replays exactly the rows an import and its projector wrote, and the
verify floor recomputes the real chain, so each floor is the work any implementation must do and not a
smaller one."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from bench.floor_ratios import Statements, replay, verify_floor
from bench.intake import make_file
from bench.intake_rows import capture
from service.intake.load import import_file

_LINES = 3_000
# the tables the import's appends and its projector write (the others hold settings and cursors)
_WRITTEN = ("events", "event_keys_", "check_works_", "inbound_", "screen_")


def _tables(db: Path) -> dict[str, list[str]]:
    """Every row of every table the import writes, as text, sorted."""
    conn = sqlite3.connect(db)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            n: sorted(repr(row) for row in conn.execute(f"SELECT * FROM {n}"))  # noqa: S608
            for n in names
            if n.startswith(_WRITTEN)
        }
    finally:
        conn.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Statements]:
    """A file of synthetic papers, a ledger its import wrote, and the statements that import ran (the
    appends', then the projector's until the head)."""
    work = tmp_path_factory.mktemp("floor")
    path = work / "lines.ndjson"
    make_file(path, _LINES)
    db = work / "recorded.db"
    projected: Statements = []
    recorded, events = capture(
        db, lambda ledger: import_file(ledger, str(path), walk=False).appended, projected
    )
    assert events > 0
    return path, db, [*recorded, *projected]


def test_the_replay_writes_exactly_the_rows_the_import_wrote(
    imported: tuple[Path, Path, Statements], tmp_path: Path
) -> None:
    _, db, statements = imported
    got = replay(statements, tmp_path / "replayed.db")
    assert got["commits"] > 1
    want = _tables(db)
    assert want["events"] and any(want[n] for n in want if n.startswith("inbound_"))
    assert _tables(tmp_path / "replayed.db") == want


def test_the_verify_floor_recomputes_the_stored_chain(
    imported: tuple[Path, Path, Statements], tmp_path: Path
) -> None:
    _, db, _ = imported
    floor = verify_floor(db)
    assert floor["mismatched"] == 0
    assert floor["events"] == len(_tables(db)["events"])
    # one stored hash changed (the append-only triggers dropped in a copy): the floor sees it
    copy = tmp_path / "tampered.db"
    shutil.copyfile(db, copy)
    conn = sqlite3.connect(copy)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE events SET hash = ? WHERE seq = 7", ("0" * 64,))
    conn.commit()
    conn.close()
    assert verify_floor(copy)["mismatched"] == 1

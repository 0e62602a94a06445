"""verify (ledger/verify.py, `ledger verify`): each kind of damage is named at its first bad seq."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger.cli import main
from ledger.service import Ledger
from ledger.verify import TRUNCATION_NOTE

FIXTURE = Path(__file__).parent / "data" / "2509.02480.record.json"
TITLE = b"MLP-Offload"
N = 132  # events of the imported fixture; 131 and 132 are its two standing checks
TRIGGERS = ["events_no_update", "events_no_delete", "check_works_no_update", "check_works_no_delete"]


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The imported fixture, checkpointed so the db FILE holds every event (the WAL is empty)."""
    path = tmp_path_factory.mktemp("verify") / "ledger.db"
    ledger_ = Ledger(path)
    ledger_.import_bytes(FIXTURE.read_bytes())
    busy, _, _ = ledger_.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0
    ledger_.store.close()
    return path


@pytest.fixture
def copy(base_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "tampered.db"
    shutil.copy(base_db, target)
    return target


def cli_verify(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["verify", "--db", str(db), *args])


def edit(path: Path, *statements: str, params: tuple[object, ...] = ()) -> None:
    """Edit a copy with sqlite3 as an attacker would: drop the triggers, then change rows."""
    conn = sqlite3.connect(path, isolation_level=None)
    for name in TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for sql in statements:
        conn.execute(sql, params if "?" in sql else ())
    conn.close()


def one(path: Path, sql: str, params: tuple[object, ...] = ()) -> object:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, params).fetchone()[0]


# -- tamper vectors: each returns the seq verify must name first ----------------------------------


def flipped_bit_data(path: Path) -> int:
    """Flip one bit of the title inside the db file's bytes (as ../shared/tools/conformance does)."""
    blob = bytearray(path.read_bytes())
    at = blob.find(TITLE)
    while at >= 0:  # the first copy in the file may be a stale one in free space: flip a live one
        blob[at] ^= 0x01
        path.write_bytes(bytes(blob))
        seq = one(path, "SELECT min(seq) FROM events WHERE instr(data, 'LLP-Offload') > 0")
        if seq is not None:
            return int(seq)  # type: ignore[call-overload]
        blob[at] ^= 0x01
        at = blob.find(TITLE, at + 1)
    raise AssertionError("the title is not in the db file")


def flipped_bit_hash(path: Path) -> int:
    stored = str(one(path, "SELECT hash FROM events WHERE seq = 40"))
    raw = bytearray(bytes.fromhex(stored))
    raw[7] ^= 0x10
    edit(path, "UPDATE events SET hash = ? WHERE seq = 40", params=(raw.hex(),))
    return 40


def reordered(path: Path) -> int:
    edit(
        path,
        "UPDATE events SET seq = -1 WHERE seq = 10",
        "UPDATE events SET seq = 10 WHERE seq = 11",
        "UPDATE events SET seq = 11 WHERE seq = -1",
    )
    return 10


def removed_middle(path: Path) -> int:
    edit(path, "DELETE FROM events WHERE seq = 60")
    return 61  # the first stored seq that breaks the sequence: 61 follows 59


def edited_observed_us(path: Path) -> int:
    edit(path, "UPDATE events SET observed_us = observed_us + 1 WHERE seq = 70")
    return 70


def edited_recorded_us(path: Path) -> int:
    edit(path, "UPDATE events SET recorded_us = recorded_us - 1 WHERE seq = 90")
    return 90


def edited_stream_version(path: Path) -> int:
    edit(path, "UPDATE events SET stream_version = 1000 WHERE seq = 80")
    return 80


def edited_check_index(path: Path) -> int:
    edit(
        path,
        'UPDATE check_works SET notices = \'[{"kind":"retraction"}]\' WHERE seq = 131 '
        "AND work_id = (SELECT min(work_id) FROM check_works WHERE seq = 131)",
    )
    return 131


def removed_check_index_row(path: Path) -> int:
    edit(path, "DELETE FROM check_works WHERE seq = 132 AND work_id = "
               "(SELECT max(work_id) FROM check_works WHERE seq = 132)")  # fmt: skip
    return 132


def added_check_index_row(path: Path) -> int:
    edit(path, "INSERT INTO check_works VALUES ('w-forged', 'crossref', 0, 2, 0, '[]')")
    return 2


def truncated_leaving_check_rows(path: Path) -> int:
    edit(path, "DELETE FROM events WHERE seq > 130")  # the check_works rows of 131, 132 remain
    return 131


BROKEN: list[tuple[str, Callable[[Path], int], str]] = [
    ("flipped-bit-data", flipped_bit_data, "stored bytes do not match the stored hash"),
    ("flipped-bit-hash", flipped_bit_hash, "stored bytes do not match the stored hash"),
    ("reordered", reordered, "prev_hash does not match"),
    ("removed-middle", removed_middle, r"seq 61 follows 59: the sequence has a gap"),
    ("edited-observed_us", edited_observed_us, "observed_us index column does not match"),
    ("edited-recorded_us", edited_recorded_us, "recorded_at .* does not match its index column"),
    ("edited-stream_version", edited_stream_version, "stream_version 1000 of paper:"),
    ("edited-check-index", edited_check_index, "check_works index does not match"),
    ("removed-check-index-row", removed_check_index_row, "check_works index does not match"),
    ("added-check-index-row", added_check_index_row, "check_works index does not match"),
    ("truncated-leaving-check-rows", truncated_leaving_check_rows, "check_works index does not match"),
]


@pytest.mark.parametrize(("tamper", "reason"), [pytest.param(*c[1:], id=c[0]) for c in BROKEN])
def test_verify_names_the_first_bad_seq(copy: Path, tamper: Callable[[Path], int], reason: str) -> None:
    bad = tamper(copy)
    report = Ledger(copy).verify()
    assert (report.ok, report.first_bad_seq) == (False, bad)
    assert report.reason is not None
    assert re.search(reason, report.reason), report.reason
    # the walk stops at the first break, a check_works mismatch included (the index is compared
    # event by event as the walk passes it)
    assert report.events_checked == one(copy, f"SELECT count(*) FROM events WHERE seq < {bad}")

    result = cli_verify(copy)
    assert result.exit_code == 2, result.output
    assert f"BROKEN at seq {bad}: " in result.output
    as_json = json.loads(cli_verify(copy, "--json").stdout)
    assert (as_json["ok"], as_json["first_bad_seq"]) == (False, bad)


def test_flipped_bit_is_invisible_to_sqlite_but_not_to_verify(copy: Path) -> None:
    seq = flipped_bit_data(copy)
    assert one(copy, "PRAGMA integrity_check") == "ok"  # the file is a valid database...
    title = json.loads(str(one(copy, "SELECT data FROM events WHERE seq = ?", (seq,))))["title"]
    assert title.startswith("LLP-Offload")  # ...that now says something else
    assert Ledger(copy).verify().first_bad_seq == seq == 1


@pytest.mark.parametrize("keep", [131, 120, 1], ids=["truncated", "truncated-12", "truncated-to-1"])
def test_truncated_chain_still_verifies_but_the_note_says_so(copy: Path, keep: int) -> None:
    edit(copy, f"DELETE FROM events WHERE seq > {keep}", f"DELETE FROM check_works WHERE seq > {keep}")
    report = Ledger(copy).verify()
    assert (report.ok, report.first_bad_seq, report.events_checked) == (True, None, keep)
    assert report.head.seq == keep < N
    note = report.to_dict()["note"]
    assert "truncation" in note and "checkpoint" in note

    result = cli_verify(copy)
    assert result.exit_code == 0, result.output
    assert f"OK: {keep} events verified; head seq {keep} " in result.output
    assert "Note: " + TRUNCATION_NOTE in result.output
    assert json.loads(cli_verify(copy, "--json").stdout)["note"] == TRUNCATION_NOTE


def test_truncation_shows_against_a_held_checkpoint(copy: Path) -> None:
    checkpoint = Ledger(copy).head()
    edit(copy, "DELETE FROM events WHERE seq > 100", "DELETE FROM check_works WHERE seq > 100")
    report = Ledger(copy).verify()
    assert report.ok and report.head != checkpoint and report.head.seq < checkpoint.seq


def test_untouched_ledger_verifies(copy: Path) -> None:
    report = Ledger(copy).verify()
    assert report.ok and (report.events_checked, report.head.seq) == (N, N)
    assert report.to_dict()["first_bad_seq"] is None and report.reason is None
    result = cli_verify(copy)
    assert result.exit_code == 0 and f"OK: {N} events verified; head seq {N} hash {report.head.hash}" in (
        result.output
    )


def test_empty_ledger_verifies(tmp_path: Path) -> None:
    report = Ledger(tmp_path / "empty.db").verify()
    assert (report.ok, report.events_checked, report.head.seq) == (True, 0, 0)


def test_a_later_break_does_not_hide_an_earlier_one(copy: Path) -> None:
    edit(
        copy, "UPDATE events SET observed_us = 0 WHERE seq IN (100, 30)", "DELETE FROM events WHERE seq = 50"
    )
    assert Ledger(copy).verify().first_bad_seq == 30


def test_an_index_break_before_a_chain_break_is_named_first(copy: Path) -> None:
    edited_check_index(copy)  # seq 131
    edit(copy, "UPDATE events SET observed_us = 0 WHERE seq = 132")
    assert Ledger(copy).verify().first_bad_seq == 131

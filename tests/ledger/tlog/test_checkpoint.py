"""Signed checkpoints (ledger/checkpoint.py): C2SP signed notes and keys, the checkpoint format, the
key file, and the rule that the ledger never signs two inconsistent checkpoints."""

from __future__ import annotations

import base64
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import main
from ledger.model.errors import ChainBroken
from ledger.storage.backend import is_pg_url, side_path
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import (
    Checkpoint,
    Checkpointer,
    NoteError,
    Signer,
    open_checkpoint,
    open_note,
    parse_checkpoint,
    parse_vkey,
)
from service.ledger import Ledger
from tests.factories import paper, ts
from tests.raw import connect, edit, rows, stored_checkpoint

NewDb = Callable[[str], str]

# The example key and note of the Go reference implementation (golang.org/x/mod/sumdb/note), retyped.
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
)
GO_SIG = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
GO_NOTE = GO_TEXT + "\n\u2014 PeterNeumann " + GO_SIG + "\n"


def test_the_go_reference_note_is_reproduced_byte_for_byte() -> None:
    signer = Signer.parse(GO_SKEY)
    assert signer.verifier.vkey == GO_VKEY
    assert signer.skey == GO_SKEY
    assert signer.sign_note(GO_TEXT) == GO_NOTE  # Ed25519 is deterministic
    assert open_note(GO_NOTE, parse_vkey(GO_VKEY)) == GO_TEXT


NOTE_TAMPERS: list[Any] = [
    pytest.param(GO_NOTE.replace("cryptography", "cryptographY"), "does not verify", id="altered-text"),
    pytest.param(GO_NOTE.replace("x08go/ZJ", "x08go/ZK"), "does not verify", id="checkpoint-bad-signature"),
    pytest.param(GO_NOTE.replace("x08go/", "y08go/"), "no signature by the key", id="other-key-hash"),
    pytest.param(GO_NOTE.replace("PeterNeumann x", "Peter x"), "no signature by the key", id="other-name"),
    pytest.param(GO_TEXT, "no blank line", id="unsigned"),
    pytest.param(GO_NOTE.replace("\u2014 ", "-- "), "malformed signature line", id="not-an-em-dash"),
    pytest.param(GO_NOTE.replace("problem,", "problem,\x07"), "control characters", id="control-char"),
]


@pytest.mark.parametrize(("note", "why"), NOTE_TAMPERS)
def test_tampered_notes_are_refused(note: str, why: str) -> None:
    with pytest.raises(NoteError, match=why):
        open_note(note, parse_vkey(GO_VKEY))


@pytest.mark.parametrize(
    "vkey",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong key hash
        "PeterNeumann+c74f20a3+AhpcZQcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # not type 0x01
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # space in the name
        "PeterNeumann+c74f20a3",
        "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # uppercase hex
    ],
)
def test_bad_vkeys_are_refused(vkey: str) -> None:
    with pytest.raises(NoteError):
        parse_vkey(vkey)


def test_checkpoint_text_format() -> None:
    cp = Checkpoint("example.com/log", 42, bytes(range(32)))
    text = cp.text()
    assert text == f"example.com/log\n42\n{base64.b64encode(bytes(range(32))).decode()}\n"
    assert parse_checkpoint(text) == cp
    assert parse_checkpoint(text + "extension line\n") == cp
    for bad in [
        "example.com/log\n042\nAA==\n",
        "example.com/log\n42\n",
        "x\n-1\n" + text.split("\n")[2] + "\n",
    ]:
        with pytest.raises(NoteError):
            parse_checkpoint(bad)


# -- the ledger's key and checkpoints ---------------------------------------------------------------


def _grow(ledger: Ledger, start: int, count: int, prefix: str = "2101") -> None:
    ledger.append([paper(f"{prefix}.{i:05d}", ts(i)) for i in range(start, start + count)])


def test_key_is_created_once_mode_600_and_printed_by_ledger_key(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db("ledger.db")
    first = CliRunner().invoke(main, ["key", "--db", db, "--origin", "example.org/ledger"])
    assert first.exit_code == 0, first.output
    vkey = first.output.strip()
    verifier = parse_vkey(vkey)
    assert verifier.name == "example.org/ledger"
    key_file = side_path(db, ".key")
    # next to a SQLite file; for a PostgreSQL URL, in $LEDGER_STATE_DIR (tmp_path here)
    assert key_file == (tmp_path / "ledger.db.key" if not is_pg_url(db) else tmp_path / key_file.name)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().startswith("PRIVATE+KEY+example.org/ledger+")
    again = CliRunner().invoke(main, ["key", "--db", db])
    assert again.output.strip() == vkey  # the same key, its name kept in the key file
    other = CliRunner().invoke(main, ["key", "--db", db, "--origin", "other.example/log"])
    assert other.exit_code == 1 and "signs for origin 'example.org/ledger'" in other.output


def test_default_origin_is_configurable(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_ORIGIN", "ledger.example/citations")
    cp = Checkpointer.for_db(Ledger(new_db("l.db")).store)
    assert cp.verifier().name == "ledger.example/citations"
    monkeypatch.delenv("LEDGER_ORIGIN")
    import socket

    cp2 = Checkpointer.for_db(Ledger(new_db("m.db")).store)
    assert cp2.verifier().name == f"citation-ledger/{socket.gethostname()}"


def test_checkpoints_follow_the_head_and_are_consistent(new_db: NewDb) -> None:
    db = new_db("l.db")
    ledger = Ledger(db)
    cp = Checkpointer.for_db(ledger.store, "example.org/ledger")
    empty = cp.latest()
    assert empty.checkpoint.size == 0 and empty.checkpoint.root == merkle_store.tree_root(ledger.store, 0)
    _grow(ledger, 0, 20)
    first = cp.latest()
    assert first.checkpoint.size == 20
    assert cp.latest().note == first.note  # the head did not move: the same note, not a new signature
    _grow(ledger, 20, 17)
    second = cp.latest()
    assert second.checkpoint.size == 37
    assert open_checkpoint(second.note, cp.verifier()) == second
    assert stored_checkpoint(db) == second.note  # <db>.checkpoint (SQLite), signed_checkpoint (PostgreSQL)
    result = CliRunner().invoke(main, ["checkpoint", "--db", db])
    assert result.exit_code == 0 and result.output == second.note
    lines = second.note.split("\n")
    assert lines[:3] == ["example.org/ledger", "37", base64.b64encode(second.checkpoint.root).decode()]
    assert lines[3] == "" and lines[4].startswith("\u2014 example.org/ledger ")
    assert Ledger(db).verify().ok


def _signed_ledger(new_db: NewDb) -> tuple[str, Checkpointer]:
    """A ledger of 40 events with a checkpoint signed at 40; a SQLite db file holds everything (no WAL)."""
    db = new_db("l.db")
    ledger = Ledger(db)
    _grow(ledger, 0, 40)
    cp = Checkpointer.for_db(ledger.store, "example.org/ledger")
    assert cp.latest().checkpoint.size == 40
    if not is_pg_url(db):
        ledger.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
    ledger.store.close()
    return db, cp


def _truncated(db: str, new_db: NewDb) -> str:
    edit(db, "DELETE FROM events WHERE seq > 30")
    return "cut off or rewritten"  # the stored tree covers seq 32: it is refused first


def _truncated_and_tree_dropped(db: str, new_db: NewDb) -> str:
    edit(db, "DELETE FROM events WHERE seq > 30", "DELETE FROM merkle_nodes", "DELETE FROM merkle_fill")
    return "a checkpoint of 40 events was signed, but the ledger now holds 30"


def _truncated_and_regrown(db: str, new_db: NewDb) -> str:
    _truncated_and_tree_dropped(db, new_db)
    _grow(Ledger(db), 100, 15, prefix="2102")  # different events 31..45, a valid chain
    return "events 1..40 no longer hash to the root signed for that size"


def _other_ledger_file(db: str, new_db: NewDb) -> str:
    # A second ledger with different events, its file put in place of the first one's; the key and
    # the last signed checkpoint (files next to it) stay: they are the first ledger's.
    path = Path(db)
    other = path.with_name("other.db")
    ledger = Ledger(other)
    _grow(ledger, 0, 50, prefix="2103")
    ledger.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
    ledger.store.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
        other.with_name(other.name + suffix).unlink(missing_ok=True)
    other.replace(path)
    return "events 1..40 no longer hash to the root signed for that size"


EVENT_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)


def _other_ledger_rows(db: str, new_db: NewDb) -> str:
    # Every event (and the tree) replaced, with SQL, by those of a second ledger with different events;
    # the key and the last signed checkpoint stay the first ledger's.
    other = new_db("other.db")
    ledger = Ledger(other)
    _grow(ledger, 0, 50, prefix="2103")
    ledger.store.close()
    replacement = rows(other, f"SELECT {EVENT_COLUMNS} FROM events ORDER BY seq")
    edit(db, "DELETE FROM merkle_nodes", "DELETE FROM merkle_fill", "DELETE FROM events")
    with connect(db) as raw:
        for row in replacement:
            raw.execute(f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
    assert rows(db, f"SELECT {EVENT_COLUMNS} FROM events ORDER BY seq") == replacement
    return "events 1..40 no longer hash to the root signed for that size"


INCONSISTENT: list[Any] = [
    pytest.param(_truncated, id="inconsistent-checkpoints-truncated"),
    pytest.param(_truncated_and_tree_dropped, id="inconsistent-checkpoints-truncated-tree-dropped"),
    pytest.param(_truncated_and_regrown, id="inconsistent-checkpoints-rewritten-tail"),
    pytest.param(
        _other_ledger_file,
        id="inconsistent-checkpoints-other-ledger",
        marks=pytest.mark.sqlite_only("puts another ledger's db file in place of the SQLite file"),
    ),
    pytest.param(_other_ledger_rows, id="inconsistent-checkpoints-other-ledgers-rows"),
]


@pytest.mark.parametrize("damage", INCONSISTENT)
def test_the_ledger_refuses_to_sign_a_checkpoint_inconsistent_with_its_last(
    new_db: NewDb, damage: Callable[[str, NewDb], str]
) -> None:
    db, _ = _signed_ledger(new_db)
    before = stored_checkpoint(db)
    assert before is not None and "\n40\n" in before
    why = damage(db, new_db)
    ledger = Ledger(db)
    with pytest.raises(ChainBroken, match=why):
        Checkpointer.for_db(ledger.store).latest()
    assert stored_checkpoint(db) == before  # nothing new was signed
    result = CliRunner().invoke(main, ["checkpoint", "--db", db])
    assert result.exit_code == 1 and why in result.output
    assert stored_checkpoint(db) == before
    assert not ledger.verify().ok  # verify names it too, from the checkpoint the ledger keeps


@pytest.mark.parametrize("damage", INCONSISTENT)
def test_the_ledger_refuses_to_sign_an_older_head_of_a_log_inconsistent_with_its_last(
    new_db: NewDb, damage: Callable[[str, NewDb], str]
) -> None:
    db, _ = _signed_ledger(new_db)
    before = stored_checkpoint(db)
    why = damage(db, new_db)
    with pytest.raises(ChainBroken, match=why):
        Checkpointer.for_db(Ledger(db).store).at(20)  # a prefix of 40: only if 1..40 are still those signed
    assert stored_checkpoint(db) == before


def test_an_older_head_is_signed_without_going_back(new_db: NewDb) -> None:
    db, cp = _signed_ledger(new_db)
    older = Checkpointer.for_db(Ledger(db).store).at(20)
    assert older.checkpoint.size == 20 and "\n40\n" in (stored_checkpoint(db) or "")
    assert older.checkpoint.root == merkle_store.tree_root(Ledger(db).store, 20)


def test_verify_names_a_truncation_below_the_signed_checkpoint(new_db: NewDb) -> None:
    db, _ = _signed_ledger(new_db)
    _truncated_and_tree_dropped(db, new_db)
    report = Ledger(db).verify()
    assert (report.ok, report.first_bad_seq) == (False, 31)
    assert report.reason is not None and "a checkpoint of 40 events was signed" in report.reason


def test_concurrent_signers_agree(new_db: NewDb, tmp_path: Path) -> None:
    """Threads (each its own connection) creating the key and signing at once: one key, one history."""
    from concurrent.futures import ThreadPoolExecutor

    db = new_db("l.db")
    ledger = Ledger(db)
    _grow(ledger, 0, 50)

    def sign(_: int) -> tuple[str, int]:
        cp = Checkpointer.for_db(ledger.store, "example.org/ledger")
        return cp.verifier().vkey, cp.latest().checkpoint.size

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(sign, range(12)))
    assert {vkey for vkey, _ in results} == {parse_vkey(results[0][0]).vkey}
    assert {size for _, size in results} == {50}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    note = stored_checkpoint(db)
    assert note is not None and open_checkpoint(note, parse_vkey(results[0][0])).checkpoint.size == 50

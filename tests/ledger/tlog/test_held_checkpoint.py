"""A checkpoint someone holds (ledger/held_checkpoint.py), through `ledger verify --checkpoint` and
POST /checkpoint/check: a truncation or a re-chained rewrite that verifies by itself, and that the same
key signs anew once the ledger's own last checkpoint is gone, is caught by whoever held a checkpoint."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from api.app import create_app
from api.log.proofs import MAX_NOTE_BYTES
from api.settings import Settings
from cli.main import main
from ledger.storage.backend import copy_ledger
from ledger.tlog.checkpoint import Checkpointer, SignedCheckpoint
from ledger.tlog.held_checkpoint import CONSISTENT, REWRITTEN, TRUNCATED, hold_against
from service.ledger import Ledger
from tests.ledger.tlog.test_checkpoint import _grow, _signed_ledger

NewDb = Callable[[str], str]


class Victim(NamedTuple):
    """A ledger of 40 events with a checkpoint signed at 40 (the one a user holds), and a copy of its
    first 30 events as they were (a backup an operator could roll back to)."""

    db: str
    base: str
    held: SignedCheckpoint


def _victim(new_db: NewDb) -> Victim:
    base = new_db("base.db")
    _grow(Ledger(base), 0, 30)
    db = new_db("l.db")
    ledger = Ledger(db)
    copy_ledger(Ledger(base).store, ledger.store)
    _grow(ledger, 30, 10)
    held = Checkpointer.for_db(ledger.store, "example.org/ledger").latest()
    assert held.checkpoint.size == 40
    return Victim(db, base, held)


def _served_instead(v: Victim, new_db: NewDb, events_from: str | None) -> str:
    """A new database the operator serves in place of the victim, signed with the victim's key file
    (it holds no last checkpoint, so the same key signs whatever it now holds): the events of
    `events_from` copied verbatim, else none."""
    db = new_db("served.db")
    if events_from is not None:
        copy_ledger(Ledger(events_from).store, Ledger(db).store)
    key = Checkpointer.for_db(Ledger(v.db).store).key_path
    shutil.copy(key, Checkpointer.for_db(Ledger(db).store).key_path)
    return db


def _grown(v: Victim, new_db: NewDb) -> str:
    _grow(Ledger(v.db), 40, 9, prefix="2104")
    return v.db


def _rolled_back(v: Victim, new_db: NewDb) -> str:
    return _served_instead(v, new_db, v.base)  # events 31..40 gone, a valid shorter chain


def _rolled_back_and_regrown(v: Victim, new_db: NewDb) -> str:
    db = _served_instead(v, new_db, v.base)
    _grow(Ledger(db), 100, 15, prefix="2102")  # other events 31..45, re-chained
    return db


def _other_ledger(v: Victim, new_db: NewDb) -> str:
    other = new_db("other.db")
    _grow(Ledger(other), 0, 50, prefix="2103")
    return _served_instead(v, new_db, other)


DAMAGES = [
    pytest.param(
        _grown, CONSISTENT, "consistent: the ledger extends the held checkpoint of 40 events", id="grown"
    ),
    pytest.param(_rolled_back, TRUNCATED, "events 31..40 were cut off", id="truncated"),
    pytest.param(_rolled_back_and_regrown, REWRITTEN, "rewritten: at size 40", id="truncated-and-regrown"),
    pytest.param(_other_ledger, REWRITTEN, "rewritten: at size 40", id="another-ledger"),
]


def _client(db: str) -> TestClient:
    return TestClient(create_app(Settings(db=db)))


@pytest.mark.parametrize(("damage", "status", "words"), DAMAGES)
def test_a_held_checkpoint_catches_what_verify_alone_does_not(
    new_db: NewDb, damage: Callable[[Victim, NewDb], str], status: str, words: str
) -> None:
    victim = _victim(new_db)
    held = victim.held
    db = damage(victim, new_db)
    ledger = Ledger(db)
    assert ledger.verify().ok  # the damaged ledger is a valid chain by itself
    signed_now = Checkpointer.for_db(ledger.store).latest()  # and the same key signs it again
    assert signed_now.checkpoint.origin == held.checkpoint.origin

    verdict = hold_against(ledger.store, held)
    assert verdict.status == status and words in verdict.message()
    if status == REWRITTEN:
        # both roots, the held one and the one the ledger has now at that size
        assert verdict.root_at_held_size not in (None, held.checkpoint.root)
        assert base64.b64encode(held.checkpoint.root).decode() in verdict.message()

    cli = CliRunner().invoke(main, ["verify", "--db", db, "--checkpoint", "-"], input=held.note)
    assert cli.exit_code == (0 if status == CONSISTENT else 2), cli.output
    assert cli.output.startswith("OK: ")  # the chain verifies; the held checkpoint is what fails
    assert f"Held checkpoint: {status}" in cli.output and words in cli.output

    answer = _client(db).post("/checkpoint/check", content=held.note)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["status"], body["ok"], body["held"]["size"]) == (status, status == CONSISTENT, 40)
    assert body["signature"].startswith("verified with ")


def test_the_consistency_proof_given_verifies_from_the_held_root(new_db: NewDb) -> None:
    from ledger.tlog import merkle_store
    from ledger.tlog.merkle import verify_consistency

    db, checkpointer = _signed_ledger(new_db)
    held = checkpointer.last_signed()
    assert held is not None
    ledger = Ledger(db)
    _grow(ledger, 40, 25, prefix="2104")
    verdict = hold_against(ledger.store, held)
    assert verdict.ok and verdict.size == 65
    assert verdict.root == merkle_store.tree_root(ledger.store, 65)
    verify_consistency(40, 65, held.checkpoint.root, verdict.root, verdict.consistency_path)
    json_path = verdict.to_dict()["consistency_path"]
    assert isinstance(json_path, list)
    assert [base64.b64decode(str(h)) for h in json_path] == verdict.consistency_path


def _altered_root(note: str) -> str:
    lines = note.split("\n")
    lines[2] = base64.b64encode(bytes(32)).decode()
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("held", "why"),
    [
        pytest.param(_altered_root, "does not verify", id="root-altered"),
        pytest.param(lambda note: note.replace("\n40\n", "\n41\n"), "does not verify", id="size-altered"),
        pytest.param(lambda note: note.split("\n\n")[0] + "\n", "not a signed note", id="signature-cut"),
        pytest.param(lambda note: "hello\n", "not a signed note", id="not-a-note"),
    ],
)
def test_a_held_checkpoint_that_does_not_verify_is_refused(
    new_db: NewDb, held: Callable[[str], str], why: str
) -> None:
    db, checkpointer = _signed_ledger(new_db)
    signed = checkpointer.last_signed()
    assert signed is not None
    note = held(signed.note)
    cli = CliRunner().invoke(main, ["verify", "--db", db, "--checkpoint", "-"], input=note)
    assert cli.exit_code == 1 and why in cli.output, cli.output
    answer = _client(db).post("/checkpoint/check", content=note)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["details"]["where"] == "note" and why in error["message"]


def test_a_pinned_key_is_used_and_a_missing_key_file_asks_for_one(new_db: NewDb, tmp_path: Path) -> None:
    db, checkpointer = _signed_ledger(new_db)
    signed = checkpointer.last_signed()
    assert signed is not None
    vkey = checkpointer.verifier().vkey
    checkpointer.key_path.unlink()
    refused = CliRunner().invoke(main, ["verify", "--db", db, "--checkpoint", "-"], input=signed.note)
    assert refused.exit_code == 1 and "pass the key you pinned with --key" in refused.output
    pinned = CliRunner().invoke(
        main, ["verify", "--db", db, "--checkpoint", "-", "--key", vkey], input=signed.note
    )
    assert pinned.exit_code == 0 and "Held checkpoint: consistent" in pinned.output
    other = CliRunner().invoke(
        main, ["key", "--db", str(tmp_path / "other.db"), "--origin", "other.example/l"]
    )
    wrong = CliRunner().invoke(
        main, ["verify", "--db", db, "--checkpoint", "-", "--key", other.output.strip()], input=signed.note
    )
    assert wrong.exit_code == 1 and "no signature by the key other.example/l" in wrong.output
    # a server without the key file checks the tree, and says it did not check the signature
    answer = _client(db).post("/checkpoint/check", content=signed.note)
    assert answer.status_code == 200 and answer.json()["signature"].startswith("not checked")


def test_verify_json_carries_the_verdict(new_db: NewDb) -> None:
    import json

    victim = _victim(new_db)
    signed = victim.held
    db = _rolled_back(victim, new_db)
    result = CliRunner().invoke(
        main, ["verify", "--db", db, "--json", "--checkpoint", "-"], input=signed.note
    )
    assert result.exit_code == 2
    report = json.loads(result.output)
    assert report["ok"] is True and report["held_checkpoint"]["status"] == TRUNCATED
    assert report["held_checkpoint"]["now"]["size"] == 30 and report["note"].startswith("truncated")


def test_without_a_held_checkpoint_verify_says_how_to_hold_one(new_db: NewDb) -> None:
    db, _ = _signed_ledger(new_db)
    result = CliRunner().invoke(main, ["verify", "--db", db])
    assert result.exit_code == 0 and "ledger verify --checkpoint NOTE" in result.output


def test_an_oversized_note_is_refused_before_it_is_read(new_db: NewDb) -> None:
    db, _ = _signed_ledger(new_db)
    answer = _client(db).post("/checkpoint/check", content=b"x" * (MAX_NOTE_BYTES + 1))
    assert answer.status_code == 413


def test_a_consistency_proof_from_past_the_head_says_truncated(new_db: NewDb) -> None:
    db = _rolled_back(_victim(new_db), new_db)
    result = CliRunner().invoke(main, ["consistency", "40", "--db", db])
    assert result.exit_code == 1
    assert "the ledger holds 30 events, fewer than the 40 asked for" in result.output
    assert "it was truncated" in result.output

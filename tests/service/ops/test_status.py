"""`ledger status [--db]` (backend under test): one screen of what the ledger is doing, from its database
alone: the head, its size on disk, the last full walk, the last signed checkpoint, the webhook outbox."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli.main import main
from ledger.model.facts import ScrubPass
from ledger.tlog.checkpoint import Checkpointer
from service.ledger import Ledger
from service.ops.status import read_status
from tests.conftest import FIXTURE_PATH, NewDb
from tests.factories import measurement, outbox_entries


def _status(db: str, *args: str) -> str:
    result = CliRunner().invoke(main, ["status", "--db", db, *args])
    assert result.exit_code == 0, result.output
    return result.output


def _line(output: str, name: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith(name)]
    return line


def test_an_empty_ledger(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()  # made, as `ledger serve --no-samples` makes it: status reads, never creates
    out = _status(db)
    assert len(out.splitlines()) == 7
    assert "seq 0: no event yet" in _line(out, "head")
    assert "none recorded" in _line(out, "last walk")
    assert _line(out, "checkpoint") == "checkpoint  none signed yet"
    assert _line(out, "outbox") == "outbox      0 deliveries pending"
    assert "bytes" in _line(out, "size")


def test_after_an_import_a_scrub_and_a_checkpoint(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    assert "none signed yet; 132 events unsigned" in _line(_status(db), "checkpoint")
    assert CliRunner().invoke(main, ["scrub", "--db", db]).exit_code == 0
    Checkpointer.for_db(ledger.store).latest()
    out = _status(db)
    head = ledger.head()
    assert _line(out, "head") == f"head        seq 132, hash {head.hash}"
    assert "ago)" in _line(out, "last append")
    walk = _line(out, "last walk")
    assert walk.startswith("last walk   scrub finished ") and "ok; 132 events walked (seqs 1..132)" in walk
    assert _line(out, "checkpoint").startswith("checkpoint  size 132, covers the head;")

    ledger.append([measurement("2509.02480", "2026-11-01T00:00:00Z", 3)])
    assert "size 132, 1 events behind the head" in _line(_status(db), "checkpoint")
    shown = json.loads(_status(db, "--json"))
    assert shown["head"]["seq"] == 133 and shown["disk_bytes"] > 0
    assert (shown["checkpoint"]["size"], shown["checkpoint"]["behind"]) == (132, 1)
    assert shown["checkpoint"]["oldest_unsigned_recorded_at"] == shown["head"]["recorded_at"]
    assert shown["last_full_walk"]["ok"] is True and shown["outbox_depth"] == 0


def test_a_broken_walk_and_an_unreadable_checkpoint_are_said(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    ledger.store.scrub.save_pass(
        ScrubPass(
            "scrub", "2026-11-01T00:00:00Z", 1, "2026-11-01T00:00:01Z", 10**6, 40, 132, False, 41, "bad hash"
        )
    )
    ledger.store.tree.side_file(".checkpoint").write_text("not a note\n")
    out = _status(db)
    assert "BROKEN at seq 41: bad hash; 40 events walked (seqs 1..40)" in _line(out, "last walk")
    assert _line(out, "checkpoint").startswith("checkpoint  unreadable: ")


def test_the_outbox_line_counts_pending_deliveries(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    assert _line(_status(db), "outbox") == "outbox      0 deliveries pending"
    outbox_entries(ledger.store, ["pending", "pending", "delivered", "gave_up"])
    assert _line(_status(db), "outbox") == "outbox      2 deliveries pending"
    assert read_status(ledger.store, ledger.clock).outbox_depth == 2

"""Ledgers for the tests that damage the chain and walk it (test_verify.py in tests/ledger/storage/,
test_scrub.py in tests/service/ops/)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ledger.storage.backend import is_pg_url
from ledger.storage.projector import READ_BY_RECORDS
from service.ledger import Ledger
from tests.conftest import FIXTURE_PATH


def imported_fixture_db(db_factory: Callable[[Path, str], str], directory: Path) -> str:
    """A new ledger of the imported fixture, to copy and damage; on SQLite checkpointed so the db FILE
    holds every event (the WAL is empty), which is what tests/raw.py copies and edits."""
    db = db_factory(directory, "ledger.db")
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    ledger.ops.project(READ_BY_RECORDS)  # the spans a tampering test edits
    if not is_pg_url(db):
        busy, _, _ = ledger.store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()  # type: ignore[attr-defined]
        assert busy == 0
    ledger.close()
    return db


# the derived tables' levels (ledger/storage/derived/keys.py)
LEVEL_SUFFIXES = ("", "_deep", "_middle", "_recent")


def cut_sql(keep: int) -> list[str]:
    """What a careful attacker runs to cut the events after `keep` off: every table that names them."""
    tables = (
        *(f"{t}{level}" for t in ("check_works", "event_keys") for level in LEVEL_SUFFIXES),
        "screen_refs",
        "screen_notices",
        "events",
    )
    # the spans are rebuilt from what is left by the store's own fill, when the ledger is next opened
    return [
        *(f"DELETE FROM {t} WHERE seq > {keep}" for t in tables),
        "DELETE FROM inbound_spans",
        "INSERT INTO derived_pending (name) VALUES ('inbound_spans')",
    ]

"""The catalogue keyed by seq (layout step `catalogue_by_seq`): a ledger whose catalogue_works was keyed by
ident, its rows in any rowid order, is upgraded with its rows kept, each row's rowid its seq on SQLite,
the title index rebuilt, and every search and `ledger verify` answering as before."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from ledger.storage.backend import is_pg_url
from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.derived.catalogue import COLUMNS
from service.ledger import Ledger
from tests import raw
from tests.conftest import NewDb
from tests.factories import ts
from tests.ledger.storage.test_catalogue_store import GPIPE, ZERO, work
from tests.old_layout import build_old_ledger, version_before

OTHER = "10.5555/other.work"


@pytest.fixture
def source(new_db: NewDb) -> Ledger:
    ledger = Ledger(new_db("source.db"))
    ledger.append(
        [
            work(ZERO, ts(1)),
            work(GPIPE, ts(2), title="GPipe: Efficient Training of Giant Nets", authors=("Huang",)),
            work(OTHER, ts(3), title="Another Work Entirely", authors=("Other",)),
            work(ZERO, ts(4), title="ZeRO: Memory Optimizations", volume="7"),
        ]
    )
    ledger.catalogue  # noqa: B018 - extended to the head
    return ledger


def test_a_catalogue_keyed_by_ident_is_upgraded_with_its_rows(source: Ledger, new_db: NewDb) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "catalogue_by_seq"), source)
    held = [c for c in COLUMNS if c != "first_seq"]  # a later step's column
    cols = ", ".join(held)
    rows = raw.rows(source.url, f"SELECT {cols} FROM catalogue_works ORDER BY ident DESC")
    terms = raw.rows(source.url, "SELECT term, docs FROM catalogue_terms")
    # inserted in reverse ident order, through the old layout's own triggers (its title index follows),
    # so no rowid is its seq before the upgrade
    _insert(old, f"INSERT INTO catalogue_works ({cols}) VALUES ({', '.join('?' for _ in held)})", rows)
    _insert(old, "INSERT INTO catalogue_terms (term, docs) VALUES (?, ?)", terms)
    _insert(old, "UPDATE catalogue_cursor SET seq = ?", [(source.head().seq,)])
    upgraded = Ledger(old)
    try:
        upgraded.catalogue  # noqa: B018 - a later step empties the catalogue: it is made again here
        assert _rows(upgraded) == _rows(source)
        if not is_pg_url(old):
            assert raw.rows(old, "SELECT rowid, seq FROM catalogue_works WHERE rowid <> seq") == []
        for text in ("zero memory optimizations", "gpipe giant nets", "another work entirely"):
            got = upgraded.store.catalogue.catalogue_search([text], 5)
            assert got == source.store.catalogue.catalogue_search([text], 5) and got[0], text
        assert upgraded.store.catalogue.catalogue_check() is None
        assert upgraded.verify().ok
    finally:
        upgraded.close()


def _rows(ledger: Ledger) -> list[Any]:
    """Every row of the ledger's catalogue_works."""
    catalogue = ledger.store.catalogue
    assert isinstance(catalogue, SqlCatalogue)
    return catalogue.catalogue_rows()


def _insert(db: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """Write rows as a ledger of the old layout did, its triggers on."""
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn, conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)
        return
    lite = sqlite3.connect(db, isolation_level=None)
    try:
        lite.executemany(sql, rows)
    finally:
        lite.close()

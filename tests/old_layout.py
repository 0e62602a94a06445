"""Ledgers in an older stored layout, to test that opening one upgrades it: the schema steps up to a
given one, then the rows of a ledger of today (the columns of events and check_works never changed)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ledger.model.events import ChainLink
from ledger.storage.backend import is_pg_url
from ledger.storage.derived.backfill import FILL_TABLE
from ledger.storage.derived.keys import WORK, key_rows
from ledger.storage.postgresql import migrations as pg_migrations
from ledger.storage.sql import link_params
from ledger.storage.sqlite import migrations
from service.ledger import Ledger

EVENT_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)
CHECK_COLUMNS = "seq, work_id, source, observed_us, recorded_us, notices"


def build_old_ledger(db: str, steps: int, source: Ledger) -> None:
    """Make empty `db` a ledger of schema version `steps` holding `source`'s events (and, from the
    layout that keeps event_keys on, their keys as it kept them: no works-index keys before the step
    that adds them, and each cited arXiv id's `c:` key before the four-level step)."""
    links = list(source.store.iter_chain())
    events = [link_params(link) for link in links]
    checks = list(source.store.iter_check_works())
    scripts = (pg_migrations.MIGRATIONS if is_pg_url(db) else migrations.MIGRATIONS)[:steps]
    keyed = any("CREATE TABLE event_keys" in script for script in scripts)
    works = any(FILL_TABLE in script for script in scripts)
    keys = [(k, seq) for k, seq in key_rows(links) if works or not k.startswith(WORK)] if keyed else []
    if keyed and not any("event_keys_deep" in script for script in scripts):
        keys += [(f"c:{cited}", link.event.seq) for link in links if (cited := _cited(link)) is not None]
    insert_events = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join(['?'] * 12)})"
    insert_checks = f"INSERT INTO check_works ({CHECK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
    insert_keys = "INSERT INTO event_keys (key, seq) VALUES (?, ?)"
    # from the layout with inbound spans on, they are derived when the ledger opens, as for a ledger
    # that held events when it took that step
    spanned = any("CREATE TABLE inbound_spans" in script for script in scripts)
    pending = [("inbound_spans",)] if spanned and events else []
    insert_pending = "INSERT INTO derived_pending (name) VALUES (?)"
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("CREATE TABLE ledger_schema (version integer NOT NULL)")
            for number, script in enumerate(pg_migrations.MIGRATIONS[:steps], start=1):
                conn.execute(script)
                conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (number,))
            _insert(conn, insert_events.replace("?", "%s"), events)
            _insert(conn, insert_checks.replace("?", "%s"), checks)
            _insert(conn, insert_keys.replace("?", "%s"), keys)
            _insert(conn, insert_pending.replace("?", "%s"), pending)
        return
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        for script in migrations.MIGRATIONS[:steps]:
            for statement in migrations._split(script):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {steps}")
        _insert(conn, insert_events, events)
        _insert(conn, insert_checks, checks)
        _insert(conn, insert_keys, keys)
        _insert(conn, insert_pending, pending)
    finally:
        conn.close()


def _cited(link: ChainLink) -> str | None:
    if link.event.type != "resolution.observed":
        return None
    cited: str | None = json.loads(link.event.data)["cited_arxiv_id"]
    return cited


def _insert(conn: Any, sql: str, rows: list[Any]) -> None:
    if rows:
        conn.cursor().executemany(sql, rows)

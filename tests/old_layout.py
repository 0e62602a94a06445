"""Ledgers in an older stored layout, to test that opening one upgrades it: the layout a backend stamped
at a given version, written from today's description (ledger/storage/schema.py) less the changes that
came after it, then the rows of a ledger of today (the columns of events and check_works never changed)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import Any

from ledger.model.events import ChainLink
from ledger.storage import schema
from ledger.storage.backend import is_pg_url
from ledger.storage.derived.checks import link_checks
from ledger.storage.derived.keys import WORK, key_rows
from ledger.storage.derived.screen import INSERT_NOTICES, INSERT_REFS, batch_rows
from ledger.storage.schema import LAYOUT, Guard, Index, Layout, Table
from ledger.storage.sql import POSTGRESQL, SQLITE, link_params
from ledger.storage.upgrade import STEP
from service.ledger import Ledger

EVENT_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)
CHECK_COLUMNS = "seq, work_id, source, observed_us, recorded_us, notices"

# the tables each change added, and the small key levels before the four-level step
ADDED = {
    "merkle": ("merkle_nodes", "merkle_fill", "verified_point", "signed_checkpoint"),
    "scrub_passes": ("scrub_passes",),
    "event_keys": (
        "event_keys",
        "event_keys_middle",
        "event_keys_recent",
        "check_works_middle",
        "check_works_recent",
    ),
    "inbound_spans": ("inbound_spans", "inbound_counts", "derived_pending"),
    "four_levels": ("event_keys_deep", "check_works_deep"),
    "alerts": ("watches", "watch_keys", "watch_works", "alerts", "outbox", "deliveries", "alert_cursor"),
    "search": ("search_titles", "search_cursor"),
    "ingest_receipts": ("ingest_receipts",),
    "catalogue": ("catalogue_works", "catalogue_terms", "catalogue_cursor"),
    "import_progress": ("import_progress",),
    "resolve_jobs": ("resolve_jobs",),
    "event_writers": ("event_writers",),
    "resolve_bounds": ("resolve_slots", "resolve_budget"),
    "screen": ("screen_refs", "screen_notices"),
    "projector": ("projections", "projector_lease"),
}
# before the event-keys step the events kept their random keys in columns of their own, derived by the
# database from the hashed data
DERIVED_KEYS = {
    SQLITE.name: (
        "observation_id TEXT GENERATED ALWAYS AS (CASE WHEN type IN ('citation.observed', "
        "'resolution.observed') THEN json_extract(data, '$.observation_id') END) VIRTUAL",
        "cited_arxiv_id TEXT GENERATED ALWAYS AS (CASE WHEN type = 'resolution.observed' "
        "THEN json_extract(data, '$.cited_arxiv_id') END) VIRTUAL",
    ),
    POSTGRESQL.name: (
        "observation_id text COLLATE \"C\" GENERATED ALWAYS AS (CASE WHEN type IN ('citation.observed', "
        "'resolution.observed') THEN data::jsonb ->> 'observation_id' END) STORED",
        "cited_arxiv_id text COLLATE \"C\" GENERATED ALWAYS AS (CASE WHEN type = 'resolution.observed' "
        "THEN data::jsonb ->> 'cited_arxiv_id' END) STORED",
    ),
}


def has(backend: str, version: int, change: str) -> bool:
    """Whether the layout `backend` stamped `version` holds `change` (a name of ledger/storage/upgrade.py)."""
    return version >= STEP[backend][change]


def layout_at(backend: str, version: int) -> Layout:
    """The layout `backend` stamped `version`, as today's description less what came after it."""
    later = {t for change, tables in ADDED.items() if not has(backend, version, change) for t in tables}
    tables = []
    for table in LAYOUT.tables:
        if table.name in later:
            continue
        if table.name == "watches" and not has(backend, version, "collection_watches"):
            kind = dataclasses.replace(table.columns[1], check="kind IN ('paper', 'works')")
            table = dataclasses.replace(table, columns=(table.columns[0], kind, *table.columns[2:]))
        if table.name == "watches" and not has(backend, version, "secret_rotation"):
            table = dataclasses.replace(table, columns=table.columns[:-2], indexes=table.indexes[:1])
        if table.name == "watches" and not has(backend, version, "watch_owners"):
            table = dataclasses.replace(table, columns=table.columns[:-1], indexes=())
        if table.name == "resolve_jobs" and not has(backend, version, "resolve_bounds"):
            table = dataclasses.replace(table, columns=table.columns[:-2], indexes=())
        if table.name == "catalogue_works" and not has(backend, version, "catalogue_by_seq"):
            table = dataclasses.replace(table, primary_key=("ident",), uniques=())
        if table.name == "catalogue_works" and not has(backend, version, "catalogue_first_seq"):
            table = dataclasses.replace(
                table, columns=tuple(c for c in table.columns if c.name != "first_seq")
            )
        if table.name == "inbound_spans" and not has(backend, version, "spans_by_observation"):
            kept = tuple(i for i in table.indexes if i.name != "inbound_spans_by_observation")
            table = dataclasses.replace(table, indexes=kept)
        if table.name.endswith(("_middle", "_recent")) and not has(backend, version, "small_levels_by_seq"):
            table = dataclasses.replace(table, indexes=())
        if not has(backend, version, "four_levels"):
            table = _before_four_levels(table)
        if table.name == "events" and not has(backend, version, "event_keys"):
            table = dataclasses.replace(table, uniques=(("event_id",), *table.uniques))
        if table.name == "check_works" and not has(backend, version, "event_keys"):
            table = dataclasses.replace(table, indexes=())
        if table.guard is not None and not has(backend, version, "no_replace"):
            table = dataclasses.replace(table, guard=dataclasses.replace(table.guard, replace=False))
        tables.append(table)
    names = {t.name for t in tables}
    views = tuple(
        dataclasses.replace(v, tables=tuple(t for t in v.tables if t in names))
        for v in LAYOUT.views
        if has(backend, version, "event_keys")
    )
    return Layout(tuple(tables), views)


def _before_four_levels(table: Table) -> Table:
    """Before the four-level step the small levels kept an index by seq (and the check rows' levels a
    REPLACE guard), and the spans an index by observation."""
    if table.name in ("event_keys_middle", "event_keys_recent", "check_works_middle", "check_works_recent"):
        guard = Guard("no_update", replace=table.name.startswith("check_works"))
        return dataclasses.replace(table, indexes=(Index(f"{table.name}_seq", ("seq",)),), guard=guard)
    if table.name == "inbound_spans":
        by_observation = Index("inbound_spans_observation", ("observation_id", "t_from", "k_from"))
        return dataclasses.replace(table, indexes=(by_observation, *table.indexes))
    return table


def old_statements(backend: str, version: int) -> list[str]:
    """The DDL of the layout `backend` stamped `version`."""
    dialect = POSTGRESQL if backend == POSTGRESQL.name else SQLITE
    out = schema.create_statements(dialect, layout_at(backend, version))
    if not has(backend, version, "event_keys"):
        derived = ",\n    ".join(DERIVED_KEYS[backend])
        at = next(i for i, s in enumerate(out) if s.startswith("CREATE TABLE events ("))
        out[at] = out[at].replace("    UNIQUE (", f"    {derived},\n    UNIQUE (", 1)
        out[at + 1 : at + 1] = [
            "CREATE INDEX events_observation ON events (observation_id) WHERE observation_id IS NOT NULL",
            "CREATE INDEX events_cited ON events (cited_arxiv_id) WHERE cited_arxiv_id IS NOT NULL",
        ]
    return out


def build_old_ledger(db: str, steps: int, source: Ledger) -> None:
    """Make empty `db` a ledger of schema version `steps` holding `source`'s events (and, from the
    layout that keeps event_keys on, their keys as it kept them: no works-index keys before the step
    that adds them, and each cited arXiv id's `c:` key before the four-level step)."""
    links = list(source.store.iter_chain())
    events = [link_params(link) for link in links]
    # the standing checks' rows as an append of an earlier layout wrote them with each event
    checks = [(c.seq, *c[:3], c.recorded_us, c.notices.decode()) for link in links for c in link_checks(link)]
    backend = POSTGRESQL.name if is_pg_url(db) else SQLITE.name
    keyed = has(backend, steps, "event_keys")
    works = has(backend, steps, "work_keys")
    keys = [(k, seq) for k, seq in key_rows(links) if works or not k.startswith(WORK)] if keyed else []
    if keyed and not has(backend, steps, "four_levels"):
        keys += [(f"c:{cited}", link.event.seq) for link in links if (cited := _cited(link)) is not None]
    insert_events = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join(['?'] * 12)})"
    insert_checks = f"INSERT INTO check_works ({CHECK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
    insert_keys = "INSERT INTO event_keys (key, seq) VALUES (?, ?)"
    # from the layout with inbound spans on, they are derived when the ledger opens, as for a ledger
    # that held events when it took that step
    spanned = has(backend, steps, "inbound_spans")
    pending = [("inbound_spans",)] if spanned and events else []
    insert_pending = "INSERT INTO derived_pending (name) VALUES (?)"
    # from the layout with the screen's index on, its rows were written with each event
    refs, notices = batch_rows(links) if has(backend, steps, "screen") else ([], [])
    # from the layouts that project them, a ledger's projector had brought them to the head
    named = (
        ("screen", "screen_projection"),
        ("work_keys", "work_projections"),
        ("check_works", "work_projections"),
    )
    head = links[-1].event.seq if links else 0
    projected = [(name, head) for name, change in named if links and has(backend, steps, change)]
    insert_projected = "INSERT INTO projections (name, seq) VALUES (?, ?)"
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("CREATE TABLE ledger_schema (version integer NOT NULL)")
            conn.execute(";\n".join(old_statements(backend, steps)))
            conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (steps,))
            _insert(conn, insert_events.replace("?", "%s"), events)
            _insert(conn, insert_checks.replace("?", "%s"), checks)
            _insert(conn, insert_keys.replace("?", "%s"), keys)
            _insert(conn, insert_pending.replace("?", "%s"), pending)
            _insert(conn, INSERT_REFS.replace("?", "%s"), refs)
            _insert(conn, INSERT_NOTICES.replace("?", "%s"), notices)
            _insert(conn, insert_projected.replace("?", "%s"), projected)
        return
    lite = sqlite3.connect(db, isolation_level=None)
    try:
        lite.execute("PRAGMA journal_mode=WAL")
        # a fixture need not survive a power cut: without a sync per DDL statement it builds in ms, not s
        lite.execute("PRAGMA synchronous=OFF")
        for statement in old_statements(backend, steps):
            lite.execute(statement)
        lite.execute(f"PRAGMA user_version = {steps}")
        _insert(lite, insert_events, events)
        _insert(lite, insert_checks, checks)
        _insert(lite, insert_keys, keys)
        _insert(lite, insert_pending, pending)
        _insert(lite, INSERT_REFS, refs)
        _insert(lite, INSERT_NOTICES, notices)
        _insert(lite, insert_projected, projected)
    finally:
        lite.close()


def _cited(link: ChainLink) -> str | None:
    if link.event.type != "resolution.observed":
        return None
    cited: str | None = json.loads(link.event.data)["cited_arxiv_id"]
    return cited


def _insert(conn: Any, sql: str, rows: list[Any]) -> None:
    if rows:
        conn.cursor().executemany(sql, rows)


def version_before(db: str, change: str) -> int:
    """The version of the layout just before `change` (a name of ledger/storage/upgrade.py), on `db`'s
    backend."""
    return STEP[POSTGRESQL.name if is_pg_url(db) else SQLITE.name][change] - 1

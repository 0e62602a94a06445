"""Bring a ledger of any earlier layout to the one ledger/storage/schema.py describes, in one step.

As sqlite-utils' `transform` does for one table: what the description holds and the database lacks is
made, a table whose columns or keys differ is reshaped (a column added in place, else the table made
anew and its rows copied), and the indexes, triggers and views that differ are made again. What the
database holds is compared with a scratch copy of the described layout, read from the same catalogue
(an in-memory SQLite database; PostgreSQL's temporary schema, emptied in the same transaction). Only
the rows an earlier layout kept otherwise are moved by hand (`_move_rows`), each by the step that
changed them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Literal, TypedDict

from ledger.storage.derived.backfill import fill_screen, fill_work_keys
from ledger.storage.derived.keys import CHECK_WORKS, WORK_KEYS
from ledger.storage.schema import (
    LAYOUT,
    POSTGRESQL,
    SQLITE,
    Table,
    column_definition,
    create_statements,
    table_statements,
    view_statement,
)
from ledger.storage.sql import Connection, Dialect, SqlRow, SqlValue

# Every change of the stored layout, in order: SQLite stamped the layout after the nth one version n.
# PostgreSQL never had SQLite's second (its guard refuses a REPLACE's delete anyway), so from there on
# its version is one less. Add a name for a new layout; the description in schema.py is what the
# upgrade reaches.
_CHANGES = ("events", "no_replace", "merkle", "scrub_passes", "event_keys", "inbound_spans", "work_keys",
            "four_levels", "alerts", "search", "ingest_receipts", "watch_owners", "catalogue",
            "import_progress", "resolve_jobs", "catalogue_by_seq", "secret_rotation",
            "event_writers", "catalogue_first_seq", "resolve_bounds", "collection_watches",
            "screen", "projector", "screen_projection", "work_projections",
            "spans_by_observation", "small_levels_by_seq")  # fmt: skip
STEP: dict[str, dict[str, int]] = {
    SQLITE: {name: n for n, name in enumerate(_CHANGES, start=1)},
    POSTGRESQL: {name: max(n - 1, 1) for n, name in enumerate(_CHANGES, start=1)},
}
LATEST = {backend: max(steps.values()) for backend, steps in STEP.items()}

# a trigger as PostgreSQL's catalogue holds it: its definition and whether it fires always ("A")
Definition = str | tuple[str, str]


class Catalogue(TypedDict, total=False):
    """What a backend's catalogue holds of the layout, by kind, as `_read` reads it."""

    tables: dict[str, str | tuple[Sequence[SqlRow], list[tuple[str, str]]]]  # a table's whole shape
    columns: dict[str, Sequence[SqlRow]]  # name, type, not null, generated, ... (the backend's columns)
    indexes: dict[str, dict[str, Definition]]  # by table, by index
    triggers: dict[str, dict[str, Definition]]  # by table, by trigger
    views: dict[str, str]
    sql: dict[str, str]  # SQLite: an index's or trigger's statement as written
    constraints: dict[str, dict[str, str]]  # PostgreSQL: by table, by constraint


def _one(conn: Connection, sql: str, params: tuple[SqlValue, ...] = ()) -> SqlValue:
    """The one value a catalogue query gives."""
    row = conn.execute(sql, params).fetchone()
    assert row is not None  # an aggregate or a setting: always a row
    return row[0]


# the guard on the merged key level that refuses the delete a step of the four levels did
_DELETE_GUARD = {SQLITE: "event_keys_no_delete", POSTGRESQL: "event_keys_append_only ON event_keys"}


def upgrade(conn: Connection, dialect: Dialect, version: int) -> None:
    """Bring a ledger stamped `version` to the described layout, inside the caller's transaction."""
    name = dialect.name
    want = _described(conn, dialect)
    have = _read(conn, name)
    for table in _tables(name):
        if table.name not in have["tables"]:
            _run(conn, table_statements(table, name))
    _move_rows(conn, dialect, version)
    for view in LAYOUT.views:
        if have["views"].get(view.name, want["views"][view.name]) != want["views"][view.name]:
            conn.execute(f"DROP VIEW {view.name}")
    have = _read(conn, name)
    for table in _tables(name):
        if have["tables"][table.name] != want["tables"][table.name]:
            _reshape(conn, name, table, have, want)
    have = _read(conn, name)
    for table in _tables(name):
        for part in ("indexes", "triggers"):
            _match(conn, table.name, part, have[part].get(table.name, {}), want)
    for view in LAYOUT.views:
        if view.name not in _read(conn, name)["views"]:
            conn.execute(view_statement(view))


def _tables(name: str) -> list[Table]:
    return [t for t in LAYOUT.tables if name in t.on]


def _run(conn: Connection, statements: list[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def _move_rows(conn: Connection, dialect: Dialect, version: int) -> None:
    """The rows an earlier layout kept otherwise, moved as the step that changed them did."""
    step = STEP[dialect.name]
    if version < step["event_keys"]:
        # the events' random keys leave the events table's own indexes for the merged level (the
        # cited arXiv ids' keys a later step dropped are not copied)
        conn.execute(
            "INSERT INTO event_keys (key, seq) SELECT key, seq FROM ("
            "SELECT 'e:' || event_id AS key, seq FROM events UNION ALL "
            "SELECT 'o:' || observation_id, seq FROM events WHERE observation_id IS NOT NULL"
            ") AS k ORDER BY key, seq"
        )
    if version < step["inbound_spans"]:
        # the spans are derived in Python when the store opens
        conn.execute(
            "INSERT INTO derived_pending (name) SELECT 'inbound_spans' WHERE EXISTS (SELECT 1 FROM events)"
        )
    if version < step["work_keys"]:
        fill_work_keys(conn, dialect)
    if version < step["screen"]:
        fill_screen(conn, dialect)
    if step["event_keys"] <= version < step["four_levels"]:
        # no lookup reads the cited arXiv ids' keys; the guard is made again below
        conn.execute(f"DROP TRIGGER {_DELETE_GUARD[dialect.name]}")
        for level in ("event_keys", "event_keys_middle", "event_keys_recent"):
            conn.execute(f"DELETE FROM {level} WHERE key >= 'c:' AND key < 'c;'")
    if step["catalogue"] <= version < step["catalogue_first_seq"]:
        # the catalogue is derived: made anew (with first_seq, and the words a row indexes now), it is
        # filled again from the events the next time it is read
        if dialect.name == SQLITE:
            conn.execute("DROP TABLE catalogue_works_fts")
        conn.execute("DROP TABLE catalogue_works")
        _run(
            conn,
            table_statements(
                next(t for t in _tables(dialect.name) if t.name == "catalogue_works"), dialect.name
            ),
        )
        conn.execute("DELETE FROM catalogue_terms")
        conn.execute("UPDATE catalogue_cursor SET seq = 0")
    if version < step["projector"]:
        # the derived rows an earlier layout wrote with each append hold every event: projected to the head
        conn.execute(
            "INSERT INTO projections (name, seq) SELECT 'inbound_spans', coalesce(max(seq), 0) FROM events"
        )
    if version < step["screen_projection"]:
        # the screen's rows an earlier layout wrote with each append (or the fill above) hold every event
        conn.execute("INSERT INTO projections (name, seq) SELECT 'screen', coalesce(max(seq), 0) FROM events")
    if version < step["work_projections"]:
        # the works-index keys and standing checks' rows an earlier layout wrote with each append hold
        # every event: their projections start at the head, the rows staying where they are
        conn.execute(
            "INSERT INTO projections (name, seq) SELECT name, (SELECT coalesce(max(seq), 0) FROM events) "
            f"FROM (SELECT '{WORK_KEYS}' AS name UNION ALL SELECT '{CHECK_WORKS}') AS p"
        )
    if version < step["alerts"]:
        # before any watch, no event raises an alert: the cursor starts at the head
        conn.execute("UPDATE alert_cursor SET seq = (SELECT coalesce(max(seq), 0) FROM events)")


def _reshape(conn: Connection, name: str, table: Table, have: Catalogue, want: Catalogue) -> None:
    """Give `table` the described columns and keys, keeping its rows."""
    t = table.name
    old, new = have["columns"][t], want["columns"][t]
    if new[: len(old)] == old:
        # only columns added at the end: each is added in place
        held = {c[0] for c in old}
        for column in table.columns:
            if column.name not in held:
                conn.execute(f"ALTER TABLE {t} ADD COLUMN {column_definition(column, table, name)}")
        if _read(conn, name)["tables"][t] == want["tables"][t]:
            return
    if name == POSTGRESQL:
        _pg_reshape(conn, table, have, want)
        return
    # SQLite cannot drop a key or a generated column in place: the table is made anew, its rows
    # copied in key order, as sqlite-utils' transform does
    kept = ", ".join(str(c[0]) for c in new if not c[3] and c[0] in {o[0] for o in old if not o[3]})
    create = table_statements(table, SQLITE)[0].replace(f"CREATE TABLE {t} (", f"CREATE TABLE {t}_new (", 1)
    conn.execute(create)
    order = f" ORDER BY {', '.join(table.primary_key)}" if table.primary_key else ""
    conn.execute(f"INSERT INTO {t}_new ({kept}) SELECT {kept} FROM {t}{order}")
    conn.execute(f"DROP TABLE {t}")
    conn.execute(f"ALTER TABLE {t}_new RENAME TO {t}")
    if table.search is not None:
        conn.execute(f"INSERT INTO {t}_fts ({t}_fts) VALUES ('rebuild')")


def _pg_reshape(conn: Connection, table: Table, have: Catalogue, want: Catalogue) -> None:
    """PostgreSQL drops a column or a constraint in place; the rows stay where they are."""
    t = table.name
    wanted = {c[0] for c in want["columns"][t]}
    for column in have["columns"][t]:
        if column[0] not in wanted:
            conn.execute(f"ALTER TABLE {t} DROP COLUMN {column[0]!s}")
    have_cons, want_cons = _read(conn, POSTGRESQL)["constraints"][t], want["constraints"][t]
    for con, definition in have_cons.items():
        if want_cons.get(con) != definition:
            conn.execute(f"ALTER TABLE {t} DROP CONSTRAINT {con}")
    for con, definition in want_cons.items():
        if have_cons.get(con) != definition:
            conn.execute(f"ALTER TABLE {t} ADD CONSTRAINT {con} {definition}")


def _match(
    conn: Connection,
    table: str,
    part: Literal["indexes", "triggers"],
    have: dict[str, Definition],
    want: Catalogue,
) -> None:
    """Drop the indexes (or triggers) of `table` that differ from the described ones, make the missing."""
    pg = "constraints" in want
    wanted = want[part].get(table, {})
    kind = "INDEX" if part == "indexes" else "TRIGGER"
    for obj, definition in have.items():
        if wanted.get(obj) != definition:
            conn.execute(f"DROP {kind} {obj}" + (f" ON {table}" if kind == "TRIGGER" and pg else ""))
    for obj, definition in wanted.items():
        if have.get(obj) == definition:
            continue
        if not pg:
            conn.execute(want["sql"][obj])
        elif isinstance(definition, str):  # an index (a trigger is held with whether it fires always)
            conn.execute(definition)
        else:
            sql, enabled = definition
            conn.execute(sql)
            if enabled == "A":
                conn.execute(f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {obj}")


def _described(conn: Connection, dialect: Dialect) -> Catalogue:
    """The catalogue of the described layout, made where it disturbs nothing."""
    if dialect.name == SQLITE:
        scratch = sqlite3.connect(":memory:")
        try:
            _run(scratch, create_statements(dialect))
            return _read(scratch, SQLITE)
        finally:
            scratch.close()
    # the session's own temporary schema first: the tables are made there (no privilege beyond TEMP),
    # and the ledger's refusal function, which temporary schemas cannot hold, is found after it
    path = str(_one(conn, "SHOW search_path"))
    conn.execute("SELECT set_config('search_path', %s, true)", (f"pg_temp, {path}",))
    try:
        conn.execute(";\n".join(create_statements(dialect)[1:]))
        return _read(conn, POSTGRESQL)
    finally:
        conn.execute(f"DROP VIEW {', '.join(v.name for v in LAYOUT.views)}")
        conn.execute(f"DROP TABLE {', '.join(t.name for t in _tables(POSTGRESQL))}")
        conn.execute("SELECT set_config('search_path', %s, true)", (path,))


def _squash(sql: str) -> str:
    """`sql` without comments, its white space folded, none beside brackets and commas, and a renamed
    table's quotes (SQLite quotes the new name in the CREATE TABLE it keeps)."""
    text = re.sub(r"\s+", " ", re.sub(r"--[^\n]*", "", sql)).strip()
    text = re.sub(r" ?([(),]) ?", r"\1", text)
    return re.sub(r'^CREATE TABLE "(\w+)"', r"CREATE TABLE \1", text)


def _read(conn: Connection, name: str) -> Catalogue:
    """Tables, their columns, indexes and triggers, and views, as the backend's catalogue holds them."""
    return _read_sqlite(conn) if name == SQLITE else _read_pg(conn)


def _read_sqlite(conn: Connection) -> Catalogue:
    out: Catalogue = {"tables": {}, "columns": {}, "indexes": {}, "triggers": {}, "views": {}, "sql": {}}
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
    ).fetchall()
    for kind, obj, table, sql in ((str(v) for v in row) for row in rows):  # all text
        if kind == "table":
            out["tables"][obj] = _squash(sql)
            # name, type, not null, hidden (generated)
            cols = conn.execute(f"PRAGMA table_xinfo('{obj}')").fetchall()
            out["columns"][obj] = [(c[1], c[2], c[3], c[6]) for c in cols]
        elif kind == "view":
            out["views"][obj] = _squash(sql)
        else:
            part: Literal["indexes", "triggers"] = "indexes" if kind == "index" else "triggers"
            out[part].setdefault(table, {})[obj] = _squash(sql)
            out["sql"][obj] = sql
    return out


def _read_pg(conn: Connection) -> Catalogue:
    out: Catalogue = {
        "tables": {},
        "columns": {},
        "indexes": {},
        "triggers": {},
        "views": {},
        "constraints": {},
    }
    schema = str(_one(conn, "SELECT current_schema()"))

    def bare(text: str) -> str:
        # a temporary schema is also spelled by its alias
        return re.sub(r"\bpg_temp\.", "", text.replace(f"{schema}.", ""))

    rels = conn.execute(
        "SELECT c.oid, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v')"
    ).fetchall()
    for oid, name, kind in rels:
        rel = str(name)
        if kind == "v":
            out["views"][rel] = str(_one(conn, "SELECT pg_get_viewdef(%s)", (oid,)))
            continue
        out["columns"][rel] = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), attnotnull, attgenerated, attidentity, "
            "attcollation FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum",
            (oid,),
        ).fetchall()
        cons = conn.execute(
            "SELECT conname, pg_get_constraintdef(oid), conindid FROM pg_constraint WHERE conrelid = %s",
            (oid,),
        ).fetchall()
        out["constraints"][rel] = {str(c[0]): bare(str(c[1])) for c in cons}
        out["tables"][rel] = (out["columns"][rel], sorted(out["constraints"][rel].items()))
        out["indexes"][rel] = {
            str(i): bare(str(d))
            for i, d in conn.execute(
                "SELECT c.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x "
                "JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = %s "
                "AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = x.indexrelid)",
                (oid,),
            ).fetchall()
        }
        out["triggers"][rel] = {
            str(g): (bare(str(d)), str(e))
            for g, d, e in conn.execute(
                "SELECT tgname, pg_get_triggerdef(oid), tgenabled FROM pg_trigger "
                "WHERE tgrelid = %s AND NOT tgisinternal",
                (oid,),
            ).fetchall()
        }
    return out

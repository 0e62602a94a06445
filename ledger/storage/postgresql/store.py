"""The PostgreSQL store (psycopg 3): connections and transactions; the statements are shared
(sql_store.py, tables/), so it stores and reads byte for byte what the SQLite store does."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

import psycopg
from psycopg.rows import TupleRow

from ledger.model.errors import LedgerError
from ledger.storage.conns import ThreadConnections
from ledger.storage.derived.keys import LEVELS, level_table
from ledger.storage.postgresql.migrations import migrate
from ledger.storage.postgresql.tables import PgScrub, PgTree
from ledger.storage.sql import POSTGRESQL, Connection, SqlParams
from ledger.storage.sql_store import SqlStore

# Appends are serialised by this lock, taken first in every write transaction and held until
# COMMIT: the next writer (any node) reads the head only after the previous one committed, so
# seq is gapless and in commit order. EXCLUSIVE lets readers (ACCESS SHARE) through.
_WRITE_LOCK_SQL = "LOCK TABLE events IN EXCLUSIVE MODE"
# The tables an append or the projector fills row by row (events, keys, standing checks' works, at whatever
# level): past a few rows, COPY streams them in one statement instead of one INSERT each (the same
# rows, the same checks and triggers; a big batch of `ledger import` spent half its append in INSERTs)
_COPY_TABLES = frozenset(
    {"events"} | {level_table(t, lv) for t in ("event_keys", "check_works") for lv in LEVELS}
)
_INSERT = re.compile(r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES \((?:%s, )*%s\)")
COPY_FROM = 64
# A statement bound to a list this long is planned for the list it is given, never prepared: psycopg
# prepares a statement run five times, and PostgreSQL's generic plan for it knows neither the list's
# length nor its values, so `= ANY` is compared with each element in turn for every row (a walk's
# spans of 10,000 observations: 2 s a statement at 12,800 spans, 9 s at 400k lines, 225 s of that
# import's 403), where the custom plan hashes the list (0.08 s). Its planning is small beside the rows.
PLAN_FOR_LIST = 64
# The planner's price of a random page read against a sequential one, for this store's sessions. Its
# default (4) prices a read from a spinning disk; the ledger's key levels are read by probes of their
# indexes, whose pages a busy ledger keeps cached, and at 4 PostgreSQL scanned a 900,000-row key level
# whole for a list of 6,400 keys (380 ms, where the probes took 145). 1.1 is the usual value for SSDs.
SESSION = ("SET random_page_cost = 1.1",)


class PostgresStore(SqlStore):
    """An event store in one PostgreSQL database; one connection per thread, autocommit between txs."""

    kind = "postgresql"
    local = False
    dialect = POSTGRESQL
    read_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    # a broken connection cannot roll back; the server ends its transaction anyway
    rollback_errors = (psycopg.Error,)
    # one filler at a time across every node; appends take another lock, so they are not held up
    fill_begin = ("BEGIN", "LOCK TABLE merkle_fill IN EXCLUSIVE MODE")
    # one indexer at a time; readers of the index and appends are not held up
    search_begin = ("BEGIN", "LOCK TABLE search_cursor IN EXCLUSIVE MODE")
    # a read-only role or a hot standby; any other error is a real failure
    readonly_errors = (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction)

    def __init__(self, url: str, *, serialize: bool = True) -> None:
        self.url = self.db = url
        # test-only switch: False drops the write lock, to show what it prevents
        self.serialize = serialize
        self.trace: list[str] | None = None
        # one connection per thread, closed when its thread ends (see conns.py)
        self._conns: ThreadConnections[psycopg.Connection[TupleRow]] = ThreadConnections(
            psycopg.Connection.close
        )
        conn = self._pg()
        encoding = conn.execute("SHOW server_encoding").fetchone()
        if encoding is None or encoding[0] != "UTF8":
            raise LedgerError(f"the PostgreSQL database must use UTF8 encoding, not {encoding}")
        migrate(conn)
        self.spans.fill_spans()

    def write_begin(self) -> tuple[str, ...]:
        """BEGIN, then the append lock unless a test dropped it."""
        return ("BEGIN", _WRITE_LOCK_SQL) if self.serialize else ("BEGIN",)

    def _pg(self) -> psycopg.Connection[TupleRow]:
        conn = self._conns.get()
        if conn is None or conn.closed or conn.broken:
            try:
                conn = psycopg.connect(self.url, autocommit=True, application_name="citation-ledger")
            except psycopg.OperationalError as e:
                raise LedgerError(f"cannot connect to PostgreSQL: {str(e).strip()}") from None
            for sql in SESSION:
                conn.execute(sql)
            self._conns.put(conn)
        return conn

    def _conn(self) -> psycopg.Connection[TupleRow]:
        return self._pg()

    def connection(self) -> psycopg.Connection[TupleRow]:
        """This thread's connection (opened on first use)."""
        return self._pg()

    def close(self) -> None:
        """Close this thread's connection."""
        self._conns.close()

    def _execute(self, conn: Connection, sql: str, params: SqlParams) -> psycopg.Cursor[TupleRow]:
        # no parameters: None, so that psycopg leaves the text alone
        if any(isinstance(p, list) and len(p) >= PLAN_FOR_LIST for p in params):
            return _pg(conn).execute(sql, params, prepare=False)
        return _pg(conn).execute(sql, params or None)

    def _execute_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None:
        plain = _INSERT.fullmatch(sql) if len(rows) >= COPY_FROM else None
        with _pg(conn).cursor() as cur:
            if plain is not None and plain[1] in _COPY_TABLES:
                with cur.copy(f"COPY {plain[1]} ({plain[2]}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                return
            # psycopg pipelines executemany
            cur.executemany(sql, rows)

    def in_transaction(self, conn: Connection) -> bool:
        """Whether `conn` is inside a transaction already."""
        return _pg(conn).info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def _new_tree(self) -> PgTree:
        return PgTree(self)

    def _new_scrub(self) -> PgScrub:
        return PgScrub(self)

    def stats(self) -> dict[str, int]:
        """Rows per table of the ledger's schema, by name."""
        conn = self._pg()
        names = self.query(
            conn,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
        ).fetchall()
        # a table name cannot be bound: quoted as an identifier instead
        return {
            name: self.query(conn, 'SELECT count(*) FROM "{}"'.format(name.replace('"', '""'))).fetchone()[0]
            for (name,) in names
        }

    def disk_bytes(self) -> int:
        """Bytes the ledger's tables take on disk, their indexes and TOAST included."""
        row = self.query(
            self._pg(),
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm')",
        ).fetchone()
        return int(row[0])


def _pg(conn: Connection) -> psycopg.Connection[TupleRow]:
    # every connection this store hands out is one `_pg` opened: psycopg's
    return cast("psycopg.Connection[TupleRow]", conn)

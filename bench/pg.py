"""The PostgreSQL column: a throwaway server started by tests/pg_harness.py with fsync on, the ledger and
its copies as databases in it, and the bare references measured on that same server in the same run.

The bare references are the SQLite ones translated: the very rows the ledger stored, inserted with
psycopg's executemany into a plain table (same 12 columns, no key, index, constraint or trigger) in a
database of the same server, BEGIN ... COMMIT per 1000 rows or per row (synchronous_commit=on, fsync=on);
`into_product_schema`: the same rows bare into a copy of the ledger's database (its keys, indexes,
generated columns); the chain: blake3 over the stored columns read in the same 5000-row pages as verify.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.baselines import CHAIN_SELECT, COLUMNS, chain_pages, chunks, timed_commits

_PLAIN = (
    "CREATE TABLE events (seq bigint, event_id text, stream text, stream_version bigint, type text, "
    "observed_at text, observed_us bigint, recorded_at text, recorded_us bigint, data text, "
    "prev_hash text, hash text)"
)
_INSERT = f"INSERT INTO events ({COLUMNS}) VALUES ({', '.join(['%s'] * 12)})"
_SETTINGS = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method",
             "shared_buffers", "max_wal_size")  # fmt: skip

# what each headline ratio is on this backend (results.json: backends.postgresql.ratios)
RATIOS = {
    "append_library": "events/s over psycopg executemany of the same rows into a plain table, "
    "1000 per transaction (synchronous_commit=on)",
    "append_http": "events/s over the same bare executemany",
    "http_singles": "requests/s over a no-op POST route of the same app (on this backend), same bodies",
    "library_singles": "events/s over bare one-row transactions into the plain table",
    "projection": "p50 at this size over p50 at the smallest PostgreSQL size; beside it the p50 of "
    "as many bare round trips (BEGIN, SELECT 1 ..., COMMIT) as one record makes",
    "statements": "statements counted by the store's statement trace (PostgresStore.trace)",
    "verify": "events/s over a bare blake3 chain over the same rows read from the same server",
    "get_record": "requests/s over a static route of the same app returning the same bytes",
    "rss_import": "MB of the client process (the server's memory is PostgreSQL's own)",
    "rss_verify": "MB of the client process (the server's memory is PostgreSQL's own)",
    "append_vs_peer": "events/s of append_library over events/s of eventsourcing's "
    "PostgresApplicationRecorder.insert_events of the same rows, 1000 per call, into its own database of "
    "the same server pre-filled with the ledger's events at this size (synchronous_commit=on)",
    "singles_vs_peer": "events/s of library_singles (8 threads, group commit) over events/s of one "
    "eventsourcing insert_events call per event, one caller, back to back (synchronous_commit=on)",
    "append_flat": "append_library events/s at the largest PostgreSQL size over its events/s at the smallest",
}


def start() -> tuple[PgEngine | None, str]:
    """A PostgreSQL engine on a new server (or $LEDGER_TEST_PG_URL), or None and why not."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (bench/run.sh installs it: pip install -e '.[postgresql]')"
    try:
        from tests.pg_harness import PgCluster
    except ImportError as e:
        return None, f"tests/pg_harness.py cannot be imported: {e}"
    try:
        cluster = PgCluster.start(fsync=True)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        text = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        return None, f"cannot start PostgreSQL: {e} {text[-300:]}".strip()
    try:
        return PgEngine(cluster), ""
    except Exception as e:  # e.g. $LEDGER_TEST_PG_URL names a server that does not answer
        cluster.stop()
        return None, f"PostgreSQL started but cannot be used: {e!r:.300}"


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True, application_name="bench")


class PgEngine:
    """The ledger and its copies as databases of one server; the bare references against that server."""

    name = "postgresql"
    label = "PostgreSQL"
    prefix = "pg-"

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.admin = cluster.admin_url
        self.tag = f"bench_{os.getpid()}"  # unique names, should the server be shared ($LEDGER_TEST_PG_URL)
        self.created: list[str] = []
        with _connect(self.admin) as conn:
            self.settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in _SETTINGS}
            self.version_num = int(conn.execute("SHOW server_version_num").fetchone()[0])
        self.settings["started_by"] = "tests/pg_harness.py" if cluster.data_dir else "$LEDGER_TEST_PG_URL"
        self.ledger = self._create("ledger", "template0")
        self.plain = self._create("plain", "template0")

    def _url(self, name: str) -> str:
        return urlunsplit(urlsplit(self.admin)._replace(path="/" + name))

    def _create(self, name: str, template: str) -> str:
        """CREATE DATABASE from a template (a file copy of it, then a checkpoint); its URL."""
        full = f"{self.tag}_{name}"
        sql = f'CREATE DATABASE "{full}" TEMPLATE "{template}"'
        sql += " ENCODING UTF8" if template == "template0" else ""
        sql += " STRATEGY FILE_COPY" if self.version_num >= 150000 else ""
        with _connect(self.admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{full}"')
            for attempt in range(20):  # a closing session of the template may linger a moment
                try:
                    conn.execute(sql)
                    break
                except Exception as e:
                    if "being accessed by other users" not in str(e) or attempt == 19:
                        raise
                    time.sleep(0.5)
        self.created.append(full)
        return self._url(full)

    def after_build(self) -> dict[str, Any]:
        """VACUUM (ANALYZE) and CHECKPOINT the built ledger: the steady state autovacuum would reach."""
        start = time.perf_counter()
        with _connect(self.ledger) as conn:
            conn.execute("VACUUM (ANALYZE)")
            with contextlib.suppress(Exception):  # needs superuser or pg_checkpoint on a shared server
                conn.execute("CHECKPOINT")
            mb = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 1e6
        return {"db_mb": round(mb, 1), "vacuum_analyze_checkpoint_s": round(time.perf_counter() - start, 2)}

    def copy(self, name: str) -> str:
        """A new database copied from the ledger's (no session may be open on it)."""
        return self._create(name, urlsplit(self.ledger).path.lstrip("/"))

    def fresh(self, name: str) -> str:
        """A new empty database of the same server."""
        return self._create(name, "template0")

    def drop(self, db: str) -> None:
        """DROP DATABASE, closing any session left on it."""
        name = urlsplit(db).path.lstrip("/")
        with _connect(self.admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    def stored_rows(self, db: str, after: int) -> list[tuple[Any, ...]]:
        """The rows the ledger stored after seq `after`: the values the bare inserts write."""
        with _connect(db) as conn:
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT {COLUMNS} FROM events WHERE seq > %s ORDER BY seq", (after,)
            ).fetchall()
        return rows

    def _bare(self, into: str | None) -> Any:
        conn = _connect(into or self.plain)
        if into is None:
            conn.execute("DROP TABLE IF EXISTS events")
            conn.execute(_PLAIN)
        return conn

    def bare_batches(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]:
        """BEGIN; executemany of 1000 rows; COMMIT: a fresh plain table, or (into) a ledger copy's table."""
        with self._bare(into) as conn, conn.cursor() as cur:
            write = partial(cur.executemany, _INSERT)
            return timed_commits(cur, "BEGIN", write, chunks(rows, 1000), len(rows))

    def bare_one_row(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]:
        """BEGIN; INSERT one row; COMMIT, back to back (one WAL flush each)."""
        with self._bare(into) as conn, conn.cursor() as cur:
            return timed_commits(cur, "BEGIN", partial(cur.execute, _INSERT), rows, len(rows))

    def meta(self) -> dict[str, Any]:
        """The server's durability settings and what each ratio is here."""
        return {"server": self.settings, "ratios": RATIOS}

    def note(self) -> str:
        """One line under the table: which server, with which durability."""
        s = self.settings
        return (
            f"PostgreSQL {s['server_version'].split()[0]} on loopback TCP ({s['started_by']}), "
            f"fsync={s['fsync']}, synchronous_commit={s['synchronous_commit']}, "
            f"full_page_writes={s['full_page_writes']}, shared_buffers={s['shared_buffers']}; "
            "ledgers built with synchronous_commit=off, then VACUUM (ANALYZE) and CHECKPOINT"
        )

    def close(self) -> None:
        """Drop what this run created; stop the server the harness started."""
        with contextlib.suppress(Exception):
            for name in list(self.created):
                self.drop(self._url(name))
        self.cluster.stop()


def bare_chain(url: str, batch: int = 5000) -> dict[str, Any]:
    """blake3(prev || bytes) down the stored rows, read in verify's pages (bench/baselines.py bare_chain)."""
    sql = CHAIN_SELECT.replace("?", "%s")
    with _connect(url) as conn:
        return chain_pages(lambda after: conn.execute(sql, (after, batch)).fetchall())


@contextlib.contextmanager
def traced(store: Any) -> Iterator[list[str]]:
    """Every statement the PostgresStore runs inside the block."""
    statements: list[str] = []
    store.trace = statements
    try:
        yield statements
    finally:
        store.trace = None


def round_trips(store: Any, count: int, repeats: int) -> list[float]:
    """Sorted seconds of `count` bare round trips on the store's connection, as one read transaction:
    BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY, SELECT 1 (count - 2 times), COMMIT."""
    conn = store._pg()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        for _ in range(count - 2):
            conn.execute("SELECT 1").fetchone()
        conn.execute("COMMIT")
        samples.append(time.perf_counter() - start)
    return sorted(samples)

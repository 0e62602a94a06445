"""The store's own defences (ledger/store.py, ledger/pg_store.py and their migrations): append-only
triggers, constraints, SQLite's pragmas and file modes, several processes appending at once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ledger.storage.backend import is_pg_url
from ledger.storage.postgresql import migrations as pg_migrations
from ledger.storage.projector import READ_BY_RECORDS
from ledger.storage.sqlite.migrations import VERSION, migrate
from service.ledger import Ledger
from tests.conftest import on_postgresql
from tests.factories import paper, ts
from tests.raw import Raw, connect, one, rows
from tests.waiting import wait_until


def snapshot(db: str) -> tuple[Any, ...]:
    return (
        rows(db, "SELECT * FROM events ORDER BY seq"),
        rows(db, "SELECT * FROM check_works_all ORDER BY seq, work_id"),
        rows(db, "SELECT * FROM event_keys_all ORDER BY seq, key"),
    )


def refused(db: str) -> type[Exception]:
    """What a statement the append-only triggers refuse raises (their ERRCODE on PostgreSQL)."""
    if is_pg_url(db):
        import psycopg

        return psycopg.errors.InsufficientPrivilege
    return sqlite3.IntegrityError


def integrity_error(db: str) -> type[Exception]:
    """What a UNIQUE, CHECK or NOT NULL violation raises."""
    if is_pg_url(db):
        import psycopg

        return psycopg.errors.IntegrityError
    return sqlite3.IntegrityError


TRIGGER_CASES: list[Any] = [
    pytest.param(["UPDATE events SET data = '{}' WHERE seq = 1"], "UPDATE on events", id="update-data"),
    pytest.param(["UPDATE events SET observed_us = 0"], "UPDATE on events", id="update-all"),
    pytest.param(["UPDATE events SET seq = 999 WHERE seq = 132"], "UPDATE on events", id="update-seq"),
    pytest.param(["DELETE FROM events WHERE seq = 132"], "DELETE on events", id="delete-last"),
    pytest.param(["DELETE FROM events"], "DELETE on events", id="delete-all"),
    pytest.param(["UPDATE check_works SET notices = '[]'"], "UPDATE on check_works", id="cw-update"),
    pytest.param(["DELETE FROM check_works WHERE seq = 131"], "DELETE on check_works", id="cw-delete"),
]
if on_postgresql():  # statements only PostgreSQL has
    TRIGGER_CASES += [
        pytest.param(["TRUNCATE events, check_works"], "TRUNCATE on events", id="truncate"),
        pytest.param(["TRUNCATE events CASCADE"], "TRUNCATE on events", id="truncate-cascade"),
        pytest.param(["TRUNCATE check_works"], "TRUNCATE on check_works", id="cw-truncate"),
        # the triggers are ENABLE ALWAYS: a superuser's replica-mode session does not skip them
        pytest.param(
            ["SET session_replication_role = replica", "UPDATE events SET data = '{}' WHERE seq = 1"],
            "UPDATE on events",
            id="update-in-replica-mode",
        ),
        pytest.param(
            ["SET session_replication_role = replica", "DELETE FROM check_works"],
            "DELETE on check_works",
            id="cw-delete-in-replica-mode",
        ),
    ]


@pytest.fixture
def merged_ledger(fresh_ledger: Ledger, fixture_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """The real record's events with every derived row merged (ledger/storage/derived/keys.py): the guarded
    level."""
    monkeypatch.setattr("ledger.storage.sql_store.MOVES", (1, 1, 1))
    fresh_ledger.import_bytes(fixture_bytes)
    # the standing checks' rows are a projection, written to the recent level on SQLite: one more
    # append moves every level into the merged one
    fresh_ledger.ops.project(READ_BY_RECORDS)
    fresh_ledger.append([paper("2601.99999", ts(0))])
    assert one(fresh_ledger.url, "SELECT count(*) FROM check_works") == 74
    return fresh_ledger


@pytest.mark.parametrize(("sql", "message"), TRIGGER_CASES)
def test_triggers_refuse_update_and_delete(merged_ledger: Ledger, sql: list[str], message: str) -> None:
    imported_ledger = merged_ledger
    db = imported_ledger.url
    before = snapshot(db)
    with connect(db) as raw:
        for statement in sql[:-1]:
            raw.execute(statement)
        with pytest.raises(Exception, match=message) as info:
            raw.execute(sql[-1])
    assert isinstance(info.value, refused(db)), repr(info.value)
    assert "the ledger is append-only" in str(info.value)
    assert snapshot(db) == before
    assert imported_ledger.verify().ok


EVENT_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)
TAMPERED = EVENT_COLUMNS.replace("data,", "replace(data, 'MLP', 'XXX'),")
CW_COLUMNS = "work_id, source, observed_us, seq, recorded_us"

# SQLite's REPLACE deletes the old row without firing DELETE triggers; PostgreSQL's upsert updates it
OVERWRITES: list[Any] = [
    pytest.param(
        {
            "sqlite": f"REPLACE INTO events ({EVENT_COLUMNS}) SELECT {TAMPERED} FROM events WHERE seq = 1",
            "postgresql": f"INSERT INTO events ({EVENT_COLUMNS}) SELECT {TAMPERED} FROM events WHERE seq = 1 "
            "ON CONFLICT (seq) DO UPDATE SET data = excluded.data",
        },
        id="events",
    ),
    pytest.param(
        {
            "sqlite": f"INSERT OR REPLACE INTO check_works SELECT {CW_COLUMNS}, '[1]' FROM check_works "
            "WHERE seq = 131",
            "postgresql": f"INSERT INTO check_works ({CW_COLUMNS}, notices) SELECT {CW_COLUMNS}, '[1]' "
            "FROM check_works WHERE seq = 131 "
            "ON CONFLICT (work_id, source, observed_us, seq) DO UPDATE SET notices = excluded.notices",
        },
        id="check_works",
    ),
]


@pytest.mark.parametrize(
    ("table", "moves"),
    [("event_keys_recent", (10**9,) * 3), ("check_works_recent", (10**9,) * 3),
     ("event_keys_middle", (1, 10**9, 10**9)), ("check_works_middle", (1, 10**9, 10**9)),
     ("event_keys_deep", (1, 1, 10**9)), ("check_works_deep", (1, 1, 10**9))],
)  # fmt: skip
def test_the_smaller_levels_refuse_update(
    fresh_ledger: Ledger,
    fixture_bytes: bytes,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    moves: tuple[int, ...],
) -> None:
    """A merge moves the smaller levels' rows (it deletes them); nothing changes one."""
    monkeypatch.setattr("ledger.storage.sql_store.MOVES", moves)
    imported_ledger = fresh_ledger
    imported_ledger.import_bytes(fixture_bytes)
    db = imported_ledger.url
    if table.startswith("check_works"):
        # the standing checks' rows are the projector's, written to one level (the merged one on
        # PostgreSQL): a smaller level may hold only what a ledger of an earlier layout left there
        imported_ledger.ops.project(READ_BY_RECORDS)
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        with connect(db) as raw:  # a level takes inserts (a move's)
            raw.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM check_works_all WHERE seq = 131 "
                f"AND NOT EXISTS (SELECT 1 FROM {table} WHERE seq = 131)"
            )
    assert one(db, f"SELECT count(*) FROM {table} WHERE seq = 131") > 0
    before = snapshot(db)
    with connect(db) as raw, pytest.raises(refused(db), match=f"append-only: UPDATE on {table}"):
        raw.execute(f"UPDATE {table} SET seq = seq + 1000 WHERE seq = 131")
    assert snapshot(db) == before


@pytest.mark.parametrize("sql", OVERWRITES)
def test_replace_cannot_overwrite_a_row(merged_ledger: Ledger, sql: dict[str, str]) -> None:
    db = merged_ledger.url
    before = snapshot(db)
    with connect(db) as raw, pytest.raises(refused(db), match="the ledger is append-only"):
        raw.execute(sql["postgresql" if raw.pg else "sqlite"])
    assert snapshot(db) == before


def _copy_of_row(db: str, seq: int) -> dict[str, Any]:
    row = rows(db, f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,))[0]
    return dict(zip(EVENT_COLUMNS.split(", "), row, strict=True))


@pytest.mark.parametrize(
    ("change", "sqlite_message", "pg_message"),
    [
        pytest.param({"event_id": "00000000-0000-4000-8000-000000000000"},
                     "UNIQUE constraint failed: events.stream, events.stream_version",
                     'unique constraint "events_stream_stream_version_key"', id="stream-version"),
        pytest.param({"seq": 1, "event_id": "x", "stream_version": 999},
                     "UNIQUE constraint failed: events.seq", 'unique constraint "events_pkey"', id="seq"),
        pytest.param({"event_id": "y", "stream_version": 0}, "CHECK constraint failed",
                     'check constraint "events_stream_version_check"', id="version-0"),
        pytest.param({"event_id": "z", "stream_version": 999, "data": None}, "NOT NULL constraint failed",
                     'column "data" of relation "events" violates not-null constraint', id="null-data"),
    ],
)  # fmt: skip
# (event ids are unique by the append under its lock and by verify, not by an index: see
# ledger/storage/derived/keys.py and the repeated-event-id vector of tests/ledger/storage/test_verify.py)
def test_the_database_enforces_uniqueness(
    imported_ledger: Ledger, change: dict[str, Any], sqlite_message: str, pg_message: str
) -> None:
    db = imported_ledger.url
    row = {**_copy_of_row(db, 132), "seq": 133, **change}
    before = snapshot(db)
    # (on SQLite a BEFORE INSERT trigger refusing rows that would replace others may answer first)
    message = pg_message if is_pg_url(db) else f"{sqlite_message}|the ledger is append-only"
    with connect(db) as raw, pytest.raises(integrity_error(db), match=message):
        raw.execute(
            f"INSERT INTO events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
    assert snapshot(db) == before


@pytest.mark.sqlite_only("SQLite PRAGMAs: journal_mode=WAL, synchronous=FULL, user_version")
def test_pragmas_in_effect(fresh_ledger: Ledger) -> None:
    conn = fresh_ledger.store._conn()  # type: ignore[attr-defined]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert conn.execute("PRAGMA user_version").fetchone() == (VERSION,)
    # WAL is persistent: any other connection to the file sees it too
    assert sqlite3.connect(fresh_ledger.path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.sqlite_only("PRAGMA synchronous, a SQLite setting")
def test_synchronous_is_the_operators_choice(tmp_path: Path) -> None:
    ledger_ = Ledger(tmp_path / "l.db", synchronous="NORMAL")
    assert ledger_.store._conn().execute("PRAGMA synchronous").fetchone() == (1,)  # type: ignore[attr-defined]


SQLITE_TRIGGERS = {
    "event_keys_no_update",
    "event_keys_no_delete",
    "event_keys_recent_no_update",
    "event_keys_middle_no_update",
    "event_keys_deep_no_update",
    "check_works_recent_no_update",
    "check_works_middle_no_update",
    "check_works_deep_no_update",
    "events_no_update",
    "events_no_delete",
    "events_no_replace",
    "check_works_no_update",
    "check_works_no_delete",
    "check_works_no_replace",
    "merkle_nodes_no_update",
    "merkle_nodes_no_delete",
    "merkle_nodes_no_replace",
}
PG_TRIGGERS = {
    ("event_keys", "event_keys_append_only"),
    ("event_keys", "event_keys_no_truncate"),
    ("event_keys_recent", "event_keys_recent_no_update"),
    ("event_keys_middle", "event_keys_middle_no_update"),
    ("event_keys_deep", "event_keys_deep_no_update"),
    ("check_works_recent", "check_works_recent_no_update"),
    ("check_works_middle", "check_works_middle_no_update"),
    ("check_works_deep", "check_works_deep_no_update"),
    ("events", "events_append_only"),
    ("events", "events_no_truncate"),
    ("check_works", "check_works_append_only"),
    ("check_works", "check_works_no_truncate"),
    ("merkle_nodes", "merkle_nodes_append_only"),
    ("merkle_nodes", "merkle_nodes_no_truncate"),
}


def _migrate_again(raw: Raw) -> int:
    """Run the backend's migrations once more on a raw connection; the schema version it reports."""
    if raw.pg:
        assert pg_migrations.migrate(raw.conn) == pg_migrations.VERSION
        return int(raw.execute("SELECT max(version) FROM ledger_schema").fetchone()[0])
    assert migrate(raw.conn) == VERSION
    return int(raw.execute("PRAGMA user_version").fetchone()[0])


def test_migrate_is_idempotent(imported_ledger: Ledger) -> None:
    db = imported_ledger.url
    before = snapshot(db)
    with connect(db) as raw:
        version = _migrate_again(raw)
        assert version == (pg_migrations.VERSION if raw.pg else VERSION)
        if raw.pg:
            # every append-only trigger is there, and ENABLE ALWAYS ('A': replica mode does not skip it)
            triggers = raw.execute(
                "SELECT tgrelid::regclass::text, tgname, tgenabled FROM pg_trigger WHERE NOT tgisinternal"
            ).fetchall()
            assert {(t, n) for t, n, _ in triggers} >= PG_TRIGGERS
            assert {e for t, n, e in triggers if (t, n) in PG_TRIGGERS} == {"A"}
        else:
            names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
            assert names >= SQLITE_TRIGGERS
    assert Ledger(db).head() == imported_ledger.head()
    assert snapshot(db) == before


def test_stats_counts_the_rows_of_every_table(imported_ledger: Ledger) -> None:
    """stats() names each table of the ledger with its row count, and leaves the connection as it was."""
    store = imported_ledger.store
    stats = store.stats()
    assert {"events", "check_works", "merkle_nodes", "verified_point", "scrub_passes"} <= set(stats)
    assert stats["events"] == imported_ledger.head().seq
    held = sum(n for name, n in stats.items() if name.startswith("check_works"))
    assert held == len(list(store.iter_check_works()))
    if store.kind == "sqlite":
        # sqlite-utils must not have switched recursive triggers on for the store's connection
        assert store._conn().execute("PRAGMA recursive_triggers").fetchone()[0] == 0  # type: ignore[attr-defined]
    assert imported_ledger.verify().ok


@pytest.mark.sqlite_only("file modes of the SQLite db file and its -wal and -shm")
@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_db_files_are_created_private(tmp_path: Path, umask: int, fixture_bytes: bytes) -> None:
    old = os.umask(umask)
    try:
        ledger_ = Ledger(tmp_path / "new.db")
        ledger_.import_bytes(fixture_bytes)
    finally:
        os.umask(old)
    made = sorted(p.name for p in tmp_path.iterdir())
    assert "new.db" in made
    for name in made:  # the db, and its -wal and -shm (which hold the same data)
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name


@pytest.mark.sqlite_only("the file mode of an existing SQLite db file")
def test_existing_db_mode_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger(path)
    path.chmod(0o640)
    Ledger(path)
    assert path.stat().st_mode & 0o777 == 0o640


# -- several processes append at once -------------------------------------------------------------

WORKER = r"""
import json, random, sys, uuid
from pathlib import Path
from ledger.model.codec import to_event
from service.ledger import Ledger
from tests.waiting import pause, wait_until

db, w, go, n_papers = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
rng = random.Random(1000 + w)

def ts(i):
    return f"2026-01-01T0{w}:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}Z"

events = []
for i in range(n_papers):
    pid, oid = f"27{w:02d}.{i:05d}", str(uuid.uuid5(uuid.NAMESPACE_URL, f"obs {w} {i}"))
    events.append({"type": "paper.observed", "observed_at": ts(i), "data": {
        "arxiv_id": pid, "title": f"Paper {w}/{i} ☃", "primary_category": None,
        "submitted_at": ts(i), "last_updated": ts(i), "version": 1}})
    events.append({"type": "citation.observed", "observed_at": ts(i), "data": {
        "observation_id": oid, "citing_arxiv_id": pid, "reference_index": i, "source": "pdf_text",
        "cited_work": None}})
    events.append({"type": "resolution.observed", "observed_at": ts(i), "data": {
        "observation_id": oid, "status": "verified_exact", "resolver_source": "local_arxiv",
        "cited_work": None, "cited_arxiv_id": "2600.00001"}})
    if i % 2 == 0:  # shared streams: one source and one paper, written by every process
        work = str(uuid.uuid5(uuid.NAMESPACE_URL, f"work {w} {i}"))
        events.append({"type": "standing.checked", "observed_at": ts(i), "data": {
            "source": "crossref", "work_ids": [work], "notices": []}})
        events.append({"type": "measurement.observed", "observed_at": ts(i), "data": {
            "arxiv_id": "2600.00001", "source": f"src{w}", "metric": "cited_by_count", "value": i,
            "source_release": None, "query_url": None}})

ledger = Ledger(db)
go.with_name(f"ready-{w}").touch()
wait_until(go.exists, "the start", every=0.002)
acks, pos = [], 0
while pos < len(events):
    size = rng.randint(1, 20)
    chunk = events[pos:pos + size]
    pos += size
    result = ledger.append([to_event(e, f"events[{j}]") for j, e in enumerate(chunk)])
    acks += [[a.event_id, a.seq, a.duplicate] for a in result.items]
    pause(rng.random() * 0.004)  # like a server between requests: lets the others in
print(json.dumps(acks))
"""


def test_concurrent_processes_keep_the_chain_gapless_and_unforked(
    new_db: Callable[[str], str], tmp_path: Path
) -> None:
    db, go, n_papers, n_procs = new_db("shared.db"), tmp_path / "go", 50, 4
    Ledger(db)  # created (and migrated) once; the workers open it concurrently
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, db, str(w), str(go), str(n_papers)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(n_procs)
    ]

    def ready() -> bool:
        for p in procs:
            assert p.poll() is None, p.communicate()[1][-2000:]
        return all((tmp_path / f"ready-{w}").exists() for w in range(n_procs))

    wait_until(ready, "every worker ready")  # then they start at once
    go.touch()
    per_worker: list[list[list[Any]]] = []
    for p in procs:
        out, err = p.communicate(timeout=50)
        assert p.returncode == 0, err[-2000:]
        per_worker.append(json.loads(out))
    acks = [a for proc_acks in per_worker for a in proc_acks]

    per_proc = n_papers * 3 + n_papers // 2 * 2
    assert len(acks) == n_procs * per_proc == 800
    assert not any(dup for _, _, dup in acks)
    stored = dict(rows(db, "SELECT event_id, seq FROM events"))
    seqs = [r[0] for r in rows(db, "SELECT seq FROM events ORDER BY seq")]
    assert seqs == list(range(1, len(acks) + 1))  # gapless, nothing unacknowledged
    counts = Counter(event_id for event_id, _, _ in acks)
    assert max(counts.values()) == 1
    assert {event_id: seq for event_id, seq, _ in acks} == stored  # every ack present, at its seq

    versions: dict[str, list[int]] = {}
    for stream, version in rows(db, "SELECT stream, stream_version FROM events ORDER BY seq"):
        versions.setdefault(stream, []).append(version)
    for stream, vs in versions.items():
        assert vs == list(range(1, len(vs) + 1)), stream
    assert len(versions["source:crossref"]) == n_procs * n_papers // 2
    assert len(versions["paper:2600.00001"]) == n_procs * n_papers // 2
    recorded = [r[0] for r in rows(db, "SELECT recorded_us FROM events ORDER BY seq")]
    assert recorded == sorted(recorded)
    # the processes really ran at once: their commits interleave along seq (run one after
    # another, the writer would change only n_procs - 1 times; interleaved, typically ~50)
    writer_of = {seq: w for w, proc_acks in enumerate(per_worker) for _, seq, _ in proc_acks}
    switches = sum(writer_of[s] != writer_of[s + 1] for s in range(1, len(acks)))
    assert switches >= 2 * n_procs, switches

    report = Ledger(db).verify()
    assert report.ok, report
    assert report.events_checked == len(acks) and report.head.seq == len(acks)
    Ledger(db).ops.project(READ_BY_RECORDS)
    assert one(db, "SELECT count(*) FROM check_works_all") == n_procs * n_papers // 2

"""The SQLite store (ledger/store.py, ledger/migrations.py): triggers, constraints, pragmas, processes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ledger.migrations import MIGRATIONS, migrate
from ledger.service import Ledger


def connect(ledger_: Ledger) -> sqlite3.Connection:
    return sqlite3.connect(ledger_.path, isolation_level=None)


def snapshot(conn: sqlite3.Connection) -> tuple[Any, ...]:
    return (
        conn.execute("SELECT * FROM events ORDER BY seq").fetchall(),
        conn.execute("SELECT * FROM check_works ORDER BY seq, work_id").fetchall(),
    )


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        pytest.param("UPDATE events SET data = '{}' WHERE seq = 1", "UPDATE on events", id="update-data"),
        pytest.param("UPDATE events SET observed_us = 0", "UPDATE on events", id="update-all"),
        pytest.param("UPDATE events SET seq = 999 WHERE seq = 132", "UPDATE on events", id="update-seq"),
        pytest.param("DELETE FROM events WHERE seq = 132", "DELETE on events", id="delete-last"),
        pytest.param("DELETE FROM events", "DELETE on events", id="delete-all"),
        pytest.param("UPDATE check_works SET notices = '[]'", "UPDATE on check_works", id="cw-update"),
        pytest.param("DELETE FROM check_works WHERE seq = 131", "DELETE on check_works", id="cw-delete"),
    ],
)
def test_triggers_refuse_update_and_delete(imported_ledger: Ledger, sql: str, message: str) -> None:
    conn = connect(imported_ledger)
    before = snapshot(conn)
    with pytest.raises(sqlite3.DatabaseError, match=message) as info:
        conn.execute(sql)
    assert isinstance(info.value, sqlite3.IntegrityError)
    assert "the ledger is append-only" in str(info.value)
    assert snapshot(conn) == before
    assert imported_ledger.verify().ok


EVENT_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)
TAMPERED = EVENT_COLUMNS.replace("data,", "replace(data, 'MLP', 'XXX'),")


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(f"REPLACE INTO events ({EVENT_COLUMNS}) SELECT {TAMPERED} FROM events WHERE seq = 1",
                     id="events"),
        pytest.param("INSERT OR REPLACE INTO check_works SELECT work_id, source, observed_us, seq, "
                     "recorded_us, '[1]' FROM check_works WHERE seq = 131", id="check_works"),
    ],
)  # fmt: skip
def test_replace_cannot_overwrite_a_row(imported_ledger: Ledger, sql: str) -> None:
    conn = connect(imported_ledger)
    before = snapshot(conn)
    with pytest.raises(sqlite3.IntegrityError, match="the ledger is append-only"):
        conn.execute(sql)
    assert snapshot(conn) == before


def _copy_of_row(conn: sqlite3.Connection, seq: int) -> dict[str, Any]:
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,)).fetchone()
    return dict(zip(EVENT_COLUMNS.split(", "), row, strict=True))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"event_id": "00000000-0000-4000-8000-000000000000"},
                     "UNIQUE constraint failed: events.stream, events.stream_version", id="stream-version"),
        pytest.param({"stream_version": 999}, "UNIQUE constraint failed: events.event_id", id="event_id"),
        pytest.param({"seq": 1, "event_id": "x", "stream_version": 999},
                     "UNIQUE constraint failed: events.seq", id="seq"),
        pytest.param({"event_id": "y", "stream_version": 0}, "CHECK constraint failed", id="version-0"),
        pytest.param({"event_id": "z", "stream_version": 999, "data": None}, "NOT NULL constraint failed",
                     id="null-data"),
    ],
)  # fmt: skip
def test_sqlite_enforces_uniqueness(imported_ledger: Ledger, change: dict[str, Any], message: str) -> None:
    conn = connect(imported_ledger)
    row = {**_copy_of_row(conn, 132), "seq": 133, **change}
    before = snapshot(conn)
    # (a BEFORE INSERT trigger refusing rows that would replace others may answer first)
    with pytest.raises(sqlite3.IntegrityError, match=f"{message}|the ledger is append-only"):
        conn.execute(
            f"INSERT INTO events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
    assert snapshot(conn) == before


def test_pragmas_in_effect(fresh_ledger: Ledger) -> None:
    conn = fresh_ledger.store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    # WAL is persistent: any other connection to the file sees it too
    assert connect(fresh_ledger).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_synchronous_is_the_operators_choice(tmp_path: Path) -> None:
    ledger_ = Ledger(tmp_path / "l.db", synchronous="NORMAL")
    assert ledger_.store._conn().execute("PRAGMA synchronous").fetchone() == (1,)


def test_migrate_is_idempotent(imported_ledger: Ledger) -> None:
    conn = connect(imported_ledger)
    before = snapshot(conn)
    assert migrate(conn) == len(MIGRATIONS)
    assert Ledger(imported_ledger.path).head() == imported_ledger.head()
    assert snapshot(conn) == before
    triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert triggers >= {
        "events_no_update",
        "events_no_delete",
        "check_works_no_update",
        "check_works_no_delete",
    }


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


def test_existing_db_mode_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger(path)
    path.chmod(0o640)
    Ledger(path)
    assert path.stat().st_mode & 0o777 == 0o640


# -- several processes append at once -------------------------------------------------------------

WORKER = r"""
import json, random, sys, time, uuid
from pathlib import Path
from ledger.codec import to_event
from ledger.service import Ledger

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
while not go.exists():
    time.sleep(0.002)
acks, pos = [], 0
while pos < len(events):
    size = rng.randint(1, 20)
    chunk = events[pos:pos + size]
    pos += size
    result = ledger.append([to_event(e, f"events[{j}]") for j, e in enumerate(chunk)])
    acks += [[a.event_id, a.seq, a.duplicate] for a in result.items]
    time.sleep(rng.random() * 0.004)  # like a server between requests: lets the others in
print(json.dumps(acks))
"""


def test_concurrent_processes_keep_the_chain_gapless_and_unforked(tmp_path: Path) -> None:
    db, go, n_papers, n_procs = tmp_path / "shared.db", tmp_path / "go", 50, 4
    Ledger(db)  # created (and migrated) once; the workers open it concurrently
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(w), str(go), str(n_papers)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(n_procs)
    ]
    time.sleep(0.5)
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
    conn = sqlite3.connect(db)
    stored = dict(conn.execute("SELECT event_id, seq FROM events").fetchall())
    seqs = [r[0] for r in conn.execute("SELECT seq FROM events ORDER BY seq")]
    assert seqs == list(range(1, len(acks) + 1))  # gapless, nothing unacknowledged
    counts = Counter(event_id for event_id, _, _ in acks)
    assert max(counts.values()) == 1
    assert {event_id: seq for event_id, seq, _ in acks} == stored  # every ack present, at its seq

    versions: dict[str, list[int]] = {}
    for stream, version in conn.execute("SELECT stream, stream_version FROM events ORDER BY seq"):
        versions.setdefault(stream, []).append(version)
    for stream, vs in versions.items():
        assert vs == list(range(1, len(vs) + 1)), stream
    assert len(versions["source:crossref"]) == n_procs * n_papers // 2
    assert len(versions["paper:2600.00001"]) == n_procs * n_papers // 2
    recorded = [r[0] for r in conn.execute("SELECT recorded_us FROM events ORDER BY seq")]
    assert recorded == sorted(recorded)
    # the processes really ran at once: their commits interleave along seq (run one after
    # another, the writer would change only n_procs - 1 times; interleaved, typically ~50)
    writer_of = {seq: w for w, proc_acks in enumerate(per_worker) for _, seq, _ in proc_acks}
    switches = sum(writer_of[s] != writer_of[s + 1] for s in range(1, len(acks)))
    assert switches >= 2 * n_procs, switches

    report = Ledger(db).verify()
    assert report.ok, report
    assert report.events_checked == len(acks) and report.head.seq == len(acks)
    assert conn.execute("SELECT count(*) FROM check_works").fetchone() == (n_procs * n_papers // 2,)

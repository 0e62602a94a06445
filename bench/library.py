"""Measurements through the library, each run in a worker process (see worker.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from bench import pools
from bench.synth import Synth
from ledger.model.instants import parse_ts
from service.ledger import Ledger

Db = str | Path  # a SQLite file or a postgresql:// URL


def build(db: Db, target: int, first_paper: int) -> dict[str, Any]:
    """Append synthetic papers (whole papers, >= 1000 events a batch) until the head reaches `target`.

    The build alone runs with synchronous=OFF and a 256 MB page cache (on PostgreSQL: this session's
    synchronous_commit=off); every measurement runs on the product's defaults (synchronous=FULL,
    SQLite's default cache; the server's synchronous_commit=on).
    """
    ledger = Ledger(db, synchronous="OFF")
    store = cast(Any, ledger.store)  # the backend's own connection (SQLiteStore or PostgresStore)
    if store.kind == "sqlite":
        store._conn().execute("PRAGMA cache_size=-262144")
    else:
        store._pg().execute("SET synchronous_commit = off")
    head = ledger.head().seq
    start_head, batch, last = head, [], first_paper
    start = time.perf_counter()
    for paper, events in Synth().events(first_paper):
        batch.extend(events)
        last = paper
        if len(batch) >= 1000 or head + len(batch) >= target:
            head = ledger.append(batch, typed=True).head.seq
            batch = []
            if head >= target:
                break
    seconds = time.perf_counter() - start
    ledger.close()
    added = head - start_head
    return {"head": head, "added": added, "next_paper": last + 1, "seconds": round(seconds, 2),
            "events_per_s": round(added / seconds) if seconds else None}  # fmt: skip


def append_batches(db: Db, first_paper: int, count: int, profile: str | None = None) -> dict[str, Any]:
    """Ledger.append of `count` batches of 1000 typed events (types re-checked), synchronous=FULL."""
    work = pools.batches(first_paper, count)
    ledger = Ledger(db)
    before = ledger.head().seq
    heads: list[int] = []  # the head after each batch: where its rows end (the peer commits the same)

    def go() -> None:
        for b in work:
            heads.append(ledger.append(b).head.seq)

    cpu = time.process_time()
    seconds, profiled = _timed(go, profile)
    cpu = time.process_time() - cpu
    after = ledger.head().seq
    ledger.close()
    n = after - before
    out = {"events": n, "seconds": round(seconds, 4), "events_per_s": round(n / seconds), "after": before,
           "heads": heads, "cpu_seconds": round(cpu, 4)}  # fmt: skip
    return out | profiled


def _timed(go: Callable[[], None], profile: str | None) -> tuple[float, dict[str, Any]]:
    """Seconds go() takes; under pyinstrument if `profile` names one, then also {"profile": its path}."""
    start = time.perf_counter()
    if not profile:
        go()
        return time.perf_counter() - start, {}
    from bench.util import pyinstrument_profile

    path = pyinstrument_profile(profile, go)
    return time.perf_counter() - start, {"profile": path}


def concurrent(
    db: Db, first_paper: int, count: int, seconds: float, profile: str | None = None
) -> dict[str, Any]:
    """8 threads, each appending single events through one Ledger(group_commit=True)."""
    events = pools.singles(first_paper, count)
    ledger = Ledger(db, group_commit=True)
    before = ledger.head().seq
    ledger.append([events[0]])  # starts the writer thread outside the timing
    acked: list[list[int]] = [[] for _ in range(8)]
    barrier = threading.Barrier(9)
    deadline = [0.0]

    def worker(k: int) -> None:
        mine = events[1 + k :: 8]
        barrier.wait()
        for e in mine:
            if time.perf_counter() > deadline[0]:
                break
            acked[k].extend(i.seq for i in ledger.append([e]).items)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()

    def go() -> None:
        deadline[0] = time.perf_counter() + seconds
        barrier.wait()
        for t in threads:
            t.join()

    elapsed, profiled = _timed(go, profile)
    seqs = sorted(s for a in acked for s in a)
    ledger.close()
    check = Ledger(db)
    stored = {e.seq for e in check.store.read_log(after=before + 1)}
    check.close()
    out = {
        "events": len(seqs),
        "seconds": round(elapsed, 4),
        "events_per_s": round(len(seqs) / elapsed),
        "after": before + 1,
        "acked_all_stored": set(seqs) <= stored and len(set(seqs)) == len(seqs),
    }
    return out | profiled


def project(db: Db, arxiv_id: str, as_of: str, repeats: int, profile: str | None = None) -> dict[str, Any]:
    """Ledger.record_bytes of one paper as of an explicit instant: p50, and SQL statements per record."""
    ledger = Ledger(db)
    t = parse_ts(as_of)
    body, head = ledger.record_bytes(arxiv_id, t)
    for _ in range(3):
        ledger.record_bytes(arxiv_id, t)
    statements = _statements(ledger, arxiv_id, t)
    counted = [
        s
        for s in statements
        if not s.strip().startswith(("BEGIN", "COMMIT")) and "ORDER BY seq DESC LIMIT 1" not in s
    ]
    samples = _samples(ledger, arxiv_id, t, repeats)
    out: dict[str, Any] = {
        "p50_ms": round(samples[len(samples) // 2] * 1e3, 3),
        "p90_ms": round(samples[int(len(samples) * 0.9)] * 1e3, 3),
        "statements": len(counted),
        "record_bytes": len(body),
        "repeats": repeats,
    }
    if ledger.store.kind != "sqlite":
        # the floor under the record on this server: as many bare round trips as it made, in one read tx
        from bench.pg import round_trips

        bare = round_trips(ledger.store, len(statements), repeats)
        out["round_trips"] = len(statements)
        out["bare_round_trips_p50_ms"] = round(bare[len(bare) // 2] * 1e3, 3)
    if profile:
        from bench.util import pyinstrument_profile

        out["profile"] = pyinstrument_profile(
            profile, lambda: [ledger.record_bytes(arxiv_id, t) for _ in range(50)]
        )
    ledger.close()
    return out


def _statements(ledger: Ledger, arxiv_id: str, t: int) -> list[str]:
    """Every statement one record runs: sqlite3's trace callback, or the PostgreSQL store's trace."""
    if ledger.store.kind != "sqlite":
        from bench.pg import traced

        with traced(ledger.store) as traced_pg:
            ledger.record_bytes(arxiv_id, t)
        return traced_pg
    statements: list[str] = []
    conn = cast(Any, ledger.store)._conn()
    conn.set_trace_callback(statements.append)
    ledger.record_bytes(arxiv_id, t)
    conn.set_trace_callback(None)
    return statements


def _samples(ledger: Ledger, arxiv_id: str, t: int, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        ledger.record_bytes(arxiv_id, t)
        samples.append(time.perf_counter() - start)
    return sorted(samples)


def verify(db: Db, profile: str | None = None) -> dict[str, Any]:
    """`ledger verify` of the whole chain, timed."""
    ledger = Ledger(db)
    start, cpu = time.perf_counter(), time.process_time()
    report = ledger.verify()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    out = {"ok": report.ok, "reason": report.reason, "events": report.events_checked,
           "seconds": round(seconds, 3), "events_per_s": round(report.events_checked / seconds),
           "cpu_seconds": round(cpu, 3),
           "steps": {s.name: round(s.seconds, 3) for s in getattr(report, "steps", ())}}  # fmt: skip
    if profile:
        from bench.util import pyinstrument_profile, vm_hwm_kb

        out["vm_hwm_kb"] = vm_hwm_kb()  # the walk's own peak, not the profiler's samples
        out["profile"] = pyinstrument_profile(profile, ledger.verify)
    return out

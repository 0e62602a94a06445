"""The side of bench/read_lag.py that runs under one checkout's code: builds, lags, reads and renders.

Run as a file (`python bench/read_lag_worker.py CMD ...`) with the checkout to measure first on
PYTHONPATH, so the same script drives this checkout and an older one. It uses only what both have: the
Ledger facade, bench/synth.py and the tests' factories. Every ledger it builds is recorded by a clock that
starts at the same instant and moves by a fixed step each append, so the same events give the same
recorded_at (and so the same records) under any code.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.synth import Synth
from ledger.model import events as ev
from ledger.model.instants import parse_as_of
from service.ledger import Ledger

BUILD_START_US = 1_795_000_000_000_000  # 2026-11-18: after every synthetic instant and the tests' as_of
STEP_US = 1_000
ALL_PAPERS = 10_000  # a render of "all" papers reads this many at most


class StepClock:
    """The build's clock: the driver moves it one step before each append, so the n-th append is
    recorded at the same instant under any code, however often that code reads the clock."""

    def __init__(self, start_us: int = BUILD_START_US) -> None:
        self.us = start_us

    def now_us(self) -> int:
        return self.us

    def step(self) -> None:
        """On to the next append's instant."""
        self.us += STEP_US


def _events(first_paper: int) -> Iterator[tuple[int, list[ev.Event]]]:
    return Synth().events(first_paper)


def build(db: str, target: int) -> dict[str, Any]:
    """Synthetic papers until the head reaches `target` (>= 1,000 events a batch, as bench/library.py
    builds), then every projection brought to the head."""
    clock = StepClock()
    ledger = Ledger(db, synchronous="OFF", clock=clock)
    if "://" not in db:  # SQLite's own connection: a big cache (a PostgreSQL server keeps its own)
        conn: Any = getattr(ledger.store, "_conn")()  # noqa: B009
        conn.execute("PRAGMA cache_size=-262144")
    start, head, batch, last = time.perf_counter(), 0, [], 0
    for paper, events in _events(0):
        batch.extend(events)
        last = paper
        if len(batch) >= 1000 or head + len(batch) >= target:
            clock.step()
            head = ledger.append(batch, typed=True).head.seq
            batch = []
            if head >= target:
                break
    built = time.perf_counter() - start
    ledger.ops.project()
    out = {"head": head, "next_paper": last + 1, "clock_us": clock.us, "build_s": round(built, 1),
           "project_s": round(time.perf_counter() - start - built, 1)}  # fmt: skip
    ledger.close()
    return out


def lag(db: str, next_paper: int, count: int, clock_us: int) -> dict[str, Any]:
    """Append exactly `count` more events (the next synthetic papers, one import a paper, as `ledger
    import` of a record appends) with the projector held where it is; the papers they resolve to."""
    clock = StepClock(clock_us)
    ledger = Ledger(db, clock=clock, projector_max_lag=count)
    before = ledger.head().seq
    position = ledger.ops.projection_positions()
    head, cited, papers = before, set(), 0
    for _, events in _events(next_paper):
        papers += 1
        # a paper's copies of the snapshots it cites are mostly duplicates: count what is appended
        batch = events[: before + count - head]
        clock.step()
        head = ledger.append(batch, typed=True).head.seq
        cited |= {e.data.cited_arxiv_id for e in batch if isinstance(e, ev.ResolutionObserved)}
        if head >= before + count:
            break
    after = ledger.ops.projection_positions()
    ledger.close()
    return {"appended": head - before, "head": head, "positions_before": position, "positions": after,
            "clock_us": clock.us, "cited": sorted(c for c in cited if c), "papers": papers}  # fmt: skip


def project(db: str) -> dict[str, Any]:
    """Every projection to the head."""
    ledger = Ledger(db)
    start = time.perf_counter()
    ledger.ops.project()
    out = {"positions": ledger.ops.projection_positions(), "head": ledger.head().seq,
           "seconds": round(time.perf_counter() - start, 2)}  # fmt: skip
    ledger.close()
    return out


def _statements(ledger: Ledger, pid: str, t: int) -> int:
    """SQL statements one record runs (BEGIN, COMMIT and the head read not counted, as the record's
    budget counts them)."""
    seen: list[str] = []
    conn: Any = getattr(ledger.store, "_conn")()  # noqa: B009
    conn.set_trace_callback(seen.append)
    try:
        ledger.record_bytes(pid, t)
    finally:
        conn.set_trace_callback(None)
    return sum(
        1
        for s in seen
        if not s.strip().upper().startswith(("BEGIN", "COMMIT")) and "ORDER BY seq DESC LIMIT 1" not in s
    )


def serve(db: str) -> None:
    """Answer one JSON request a line on stdin: {"papers": [...], "as_of": "...", "statements": bool}
    -> the seconds (wall and this process's CPU) of one record_bytes of each paper (read warm: the
    same connection every time)."""
    ledger = Ledger(db)
    ready = {"ready": True, "head": ledger.head().seq, "positions": ledger.ops.projection_positions()}
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        t = parse_as_of(req["as_of"])
        times, cpu, sizes = [], [], []
        for pid in req["papers"]:
            start, used = time.perf_counter(), time.process_time()
            body, _ = ledger.record_bytes(pid, t)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - used)
            sizes.append(len(body))
        out: dict[str, Any] = {"seconds": times, "cpu_seconds": cpu, "bytes": sizes}
        if req.get("statements"):
            out["statements"] = [_statements(ledger, pid, t) for pid in req["papers"]]
        print(json.dumps(out), flush=True)
    ledger.close()


def render(db: str, spec_path: str, out_path: str) -> dict[str, Any]:
    """Each paper's record (the spec's list, or "all" the ledger holds) at each (as_of, known_at) of the
    spec, as sha256 of its canonical bytes (or of
    the error it raises), written one JSON line each to `out_path`."""
    spec = json.loads(Path(spec_path).read_text())
    ledger = Ledger(db, project_on_read=False) if _takes_project_on_read() else Ledger(db)
    papers = spec["papers"]
    if papers == "all":
        papers = ledger.store.papers(limit=ALL_PAPERS)
    n = 0
    with open(out_path, "w") as out:
        for pid in papers:
            for at in spec["as_of"]:
                for known in spec.get("known_at", [None]):
                    t = parse_as_of(at)
                    k = None if known is None else parse_as_of(known)
                    try:
                        body, _ = ledger.record_bytes(pid, t, k)
                    except Exception as e:  # a record not there yet is an answer too: its error's words
                        body = f"{type(e).__name__}: {e}".encode()
                    row = {"paper": pid, "as_of": at, "known_at": known, "len": len(body),
                           "sha256": hashlib.sha256(body).hexdigest()}  # fmt: skip
                    out.write(json.dumps(row) + "\n")
                    n += 1
    positions = ledger.ops.projection_positions()
    head = ledger.head().seq
    ledger.close()
    return {"records": n, "head": head, "positions": positions}


def _takes_project_on_read() -> bool:
    import inspect

    return "project_on_read" in inspect.signature(Ledger.__init__).parameters


def real(db: str) -> dict[str, Any]:
    """The two real records' ledger, built as tests/service/resolver/test_resolver_fixture.py builds its
    world: the shared fixture imported, the record like it (2506.06472) appended as its reference lines,
    the works ingested, then resolved; recorded by a clock that starts at the same instant."""
    from service.resolver.defaults import default_resolver
    from service.resolver.run import resolve
    from service.sources import SourceFile
    from service.sources.works import NAME, ingest_works
    from tests.conftest import FIXTURE_ID, FIXTURE_PATH
    from tests.factories import Clock
    from tests.service.resolver import test_resolver_fixture as world

    clock = Clock(BUILD_START_US)
    ledger = Ledger(db, clock=clock)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    at = "2026-08-07T06:00:33.427109Z"
    from tests.factories import oid_of, paper

    like: list[Any] = [paper(world.LIKE, at, title="Cost-Efficient LLM Training with Lifetime-Aware Tensor "
                                                  "Offloading via GPUDirect Storage")]  # fmt: skip
    for n, (line, _) in enumerate([*world.LINES, world.SHORT_TITLE]):
        data = ev.CitationData(oid_of(900 + n), world.LIKE, n + 1, "pdf_text", None,
                               world.Reference(unstructured=line))  # fmt: skip
        like.append(ev.CitationObserved(observed_at=at, data=data))
    clock.advance()
    ledger.append(like)
    clock.advance()
    ingest_works(ledger, SourceFile(NAME, world.WORKS.read_bytes(), world.WORKS_AT))
    clock.advance()
    r = default_resolver()
    resolve(ledger, [FIXTURE_ID, world.LIKE], decide=r.decide, catalogue=r.catalogue(ledger), method=r.method)
    clock.advance()
    head = ledger.head().seq
    ledger.close()
    return {"head": head, "papers": [FIXTURE_ID, world.LIKE], "clock_us": clock.us}


def schema(db: str) -> dict[str, Any]:
    """A fingerprint of the layout this code writes (a two-paper ledger's tables and indexes): two
    checkouts with the same one can read each other's ledgers."""
    import sqlite3

    build(db, 100)
    rows = sqlite3.connect(db).execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
    text = json.dumps([list(r) for r in rows])
    return {"fingerprint": hashlib.sha256(text.encode()).hexdigest()[:16]}


def main(argv: list[str]) -> None:
    """CMD ARGS...: build DB EVENTS | lag DB NEXT_PAPER COUNT CLOCK_US | project DB | serve DB |
    render DB SPEC OUT | real DB | schema DB; prints one JSON line (serve: one a request)."""
    cmd, args = argv[0], argv[1:]
    if cmd == "serve":
        serve(args[0])
        return
    if cmd == "build":
        out = build(args[0], int(args[1]))
    elif cmd == "lag":
        out = lag(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "project":
        out = project(args[0])
    elif cmd == "render":
        out = render(args[0], args[1], args[2])
    elif cmd == "schema":
        out = schema(args[0])
    elif cmd == "real":
        out = real(args[0])
    else:
        raise SystemExit(f"unknown command {cmd!r}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

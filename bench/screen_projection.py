"""What the screen's index costs the write path, in one run: the append's CPU an event with the index
written in the append (`--before`, a checkout whose appends wrote it) and without (this checkout), and
what this checkout's projector then spends bringing the index to the head; and the projector's rule
built two ways, the references' rows derived by the database (INSERT ... SELECT over the events' JSON)
or decoded and inserted from Python, over the same events. SQLite (the CPU of the one process: the
database runs in it); `--backend postgresql` adds the two ways of the rule on PostgreSQL (the server's
CPU is not in it: wall time only). Never a test: nothing is asserted.

    .venv/bin/python -m bench.screen_projection --before DIR [--base 100000] [--batches 20] [--repeats 3]

The ledger is bench/screen_cost.py's (references to works, a Retraction Watch check listing notices,
Crossref checks of the works); each side appends the same batches (1,000 events and a check) into a
copy of the same base ledger, the sides taken in turn, each in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# run in a process with the measured checkout first on the path: only modules both checkouts have
_WORKER = """
import json, sys, time
from bench.screen_cost import filler
from service.ledger import Ledger
db, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
more = filler(start)
batches = [next(more) for _ in range(count)]
ledger = Ledger(db, projector_max_lag=10**9)
before = ledger.head().seq
cpu, wall = time.process_time(), time.perf_counter()
for b in batches:
    ledger.append(b, resolver_events=True)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
out = {"events": ledger.head().seq - before, "append_cpu_s": cpu, "append_wall_s": wall}
try:
    from ledger.storage.projector import SCREEN, catch_up
except ImportError:
    SCREEN = None  # the appends wrote the index themselves
if SCREEN is not None:
    cpu = time.process_time()
    catch_up(ledger.store, [SCREEN])
    out["screen_projector_cpu_s"] = time.process_time() - cpu
ledger.close()
print(json.dumps(out))
"""


def build(db: str, base: int) -> int:
    """The base ledger (this checkout's code), its projections at the head; where its filler ended."""
    from bench.screen_cost import core, filler
    from service.ledger import Ledger

    ledger = Ledger(db, synchronous="OFF")
    for batch in core():
        ledger.append(batch, resolver_events=True)
    more, n = filler(0), 0
    while ledger.head().seq < base:
        ledger.append(next(more), resolver_events=True)
        n += 1
    ledger.ops.project()
    ledger.close()
    return n * 50  # papers filler(0) made: bench/screen_cost.py fills 50 papers a batch


def _copy(src: str, dst: str) -> None:
    import sqlite3

    conn = sqlite3.connect(src)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("", ".key", ".checkpoint"):
        Path(f"{dst}{suffix}").unlink(missing_ok=True)
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    for suffix in ("-wal", "-shm"):
        Path(f"{dst}{suffix}").unlink(missing_ok=True)


def appends(codes: dict[str, Path], base_db: str, work: Path, start: int, batches: int, repeats: int) -> Any:
    """Each side's append (and projector) CPU an event, medians over `repeats` turns."""
    got: dict[str, list[dict[str, Any]]] = {who: [] for who in codes}
    for _ in range(repeats):
        for who, code in codes.items():
            db = str(work / f"{who}.db")
            _copy(base_db, db)
            env = {**os.environ, "PYTHONPATH": str(code)}
            proc = subprocess.run(
                [sys.executable, "-c", _WORKER, db, str(start), str(batches)],
                capture_output=True, text=True, env=env, cwd=code, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"{who}: {proc.stderr[-2000:]}")
            got[who].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = {}
    for who, runs in got.items():
        events = runs[0]["events"]
        row = {"events": events}
        for key in ("append_cpu_s", "append_wall_s", "screen_projector_cpu_s"):
            if key in runs[0]:
                row[key.replace("_s", "_us_per_event")] = round(
                    statistics.median(r[key] for r in runs) / events * 1e6, 2
                )
        out[who] = row
    return out


def rule(db: str, repeats: int) -> dict[str, float]:
    """The screen's rows of every event of `db`, by the projector's rule (the references' rows by
    INSERT ... SELECT) and built in Python (decoded, then executemany), each in a transaction rolled
    back: median CPU and wall a event, µs."""
    from ledger.storage.derived import screen
    from ledger.storage.projector import BATCH
    from ledger.storage.sql_store import SqlStore
    from service.ledger import Ledger

    read = (
        "SELECT seq, type, stream, observed_us, recorded_us, data FROM events "
        f"WHERE seq > ? AND seq <= ? AND type IN {screen.TYPES!r} ORDER BY seq"
    )

    def python(store: SqlStore, conn: Any, after: int, upto: int) -> None:
        # each event the screen reads decoded by msgspec (as the append did), its rows inserted
        refs: list[screen.RefRow] = []
        notices: list[screen.NoticeRow] = []
        for r in store.query(conn, read, (after, upto)).fetchall():
            got = screen.event_rows(*r)
            refs += got[0]
            notices += got[1]
        if refs:
            store.query_many(conn, screen.INSERT_REFS, refs)
        if notices:
            store.query_many(conn, screen.INSERT_NOTICES, notices)

    ledger = Ledger(db)
    store: Any = ledger.store
    head = ledger.head().seq
    samples: dict[str, list[tuple[float, float]]] = {"sql": [], "python": []}

    class _Undo(Exception):
        pass

    for _ in range(repeats):
        for name, apply in (("sql", screen.apply), ("python", python)):
            try:
                with store.transaction(store.write_begin()) as conn:
                    store.query(conn, "DELETE FROM screen_refs")
                    store.query(conn, "DELETE FROM screen_notices")
                    cpu, wall = time.process_time(), time.perf_counter()
                    for after in range(0, head, BATCH):
                        apply(store, conn, after, min(head, after + BATCH))
                    took = (time.process_time() - cpu, time.perf_counter() - wall)
                    raise _Undo
            except _Undo:
                samples[name].append(took)
    ledger.close()
    out: dict[str, float] = {"events": head}
    for name, got in samples.items():
        out[f"{name}_cpu_us_per_event"] = round(statistics.median(c for c, _ in got) / head * 1e6, 2)
        out[f"{name}_wall_us_per_event"] = round(statistics.median(w for _, w in got) / head * 1e6, 2)
    return out


def main() -> None:
    """Build, measure, print one JSON object."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="a checkout whose appends wrote the index")
    ap.add_argument("--base", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ledger-screen-projection-"))
    try:
        base_db = str(work / "base.db")
        start = build(base_db, args.base)
        print(f"built {args.base:,}+ events", flush=True)
        codes = {"before": args.before.resolve(), "after": ROOT}
        out: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        out["append"] = appends(codes, base_db, work, start, args.batches, args.repeats)
        print(json.dumps(out["append"]), flush=True)
        out["rule_sqlite"] = rule(base_db, args.repeats)
        print(json.dumps(out["rule_sqlite"]), flush=True)
        if args.backend == "postgresql":
            out["rule_postgresql"] = _rule_pg(base_db, args.repeats)
            print(json.dumps(out["rule_postgresql"]), flush=True)
        print(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _rule_pg(sqlite_db: str, repeats: int) -> dict[str, float]:
    """The rule's two ways on PostgreSQL, over a copy of the same events (`ledger copy`)."""
    from ledger.storage.backend import copy_ledger, open_store
    from tests.pg_harness import PgCluster

    cluster = PgCluster.start()
    try:
        url = cluster.create_db()
        src, dst = open_store(sqlite_db), open_store(url)
        copy_ledger(src, dst)
        src.close()
        dst.close()
        return rule(url, repeats)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()

"""What the PostgreSQL server spends on a `ledger import`: its CPU, its WAL, and the statements that
take its time, per event.

    .venv/bin/python -m bench.pg_cost --lines 100000 [--dir /tmp/pg-plans]

`ledger import` of `--lines` synthetic lines (bench/synth.py, as bench/intake.py writes them) into an
empty database of the cluster bench/pg_plans.py keeps in `--dir` (started with pg_stat_statements),
as a command of its own. Measured around it: the server's CPU (bench/intake.py's `server_cpu`), the
WAL it wrote (pg_current_wal_lsn), and, from pg_stat_statements, each statement's calls, time, rows
and WAL bytes, the largest first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench.intake import _ledger, make_file, server_cpu
from bench.pg_plans import _connect, _drop, cluster

DB = "pg_cost"
_TOP = (
    "SELECT calls, total_exec_time, rows, wal_bytes, regexp_replace(query, '\\s+', ' ', 'g') "
    "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s) "
    "ORDER BY total_exec_time DESC LIMIT %s"
)


def main() -> None:
    """Import the file into a new database and print what the server spent."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pg-plans"))
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    admin = cluster(args.dir)
    path = args.dir / f"cost-{args.lines}.ndjson"
    if not path.exists():
        make_file(path, args.lines)
    _drop(admin, DB)
    with _connect(admin + "/postgres") as conn:
        conn.execute(f'CREATE DATABASE "{DB}" TEMPLATE template0 ENCODING UTF8')
    with _connect(f"{admin}/{DB}") as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SELECT pg_stat_statements_reset()")
        wal0 = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    data = str(args.dir / "data")
    cpu0, started = server_cpu(data), time.perf_counter()
    run = subprocess.run(
        [*_ledger(), "import", str(path), "--db", f"{admin}/{DB}"], capture_output=True, text=True
    )
    wall, cpu = time.perf_counter() - started, server_cpu(data) - cpu0
    if run.returncode != 0:
        sys.exit(run.stderr[-2000:])
    with _connect(f"{admin}/{DB}") as conn:
        wal = conn.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", (str(wal0),)).fetchone()[0]
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        top = conn.execute(_TOP, (DB, args.top)).fetchall()
        total = conn.execute(
            "SELECT sum(calls), sum(total_exec_time), sum(wal_bytes) FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)",
            (DB,),
        ).fetchone()
    print(run.stdout.strip().splitlines()[-1])
    print(
        f"{events:,} events in {wall:.1f} s; server CPU {cpu:.1f} s ({cpu / events * 1e6:.0f} us an event); "
        f"WAL {int(wal) / 1e6:.0f} MB ({int(wal) / events:.0f} bytes an event); statements "
        f"{int(total[0]):,} ({int(total[0]) / events:.2f} an event) taking {total[1] / 1000:.1f} s"
    )
    print(f"\n{'calls':>9} {'ms':>9} {'us/event':>9} {'rows':>10} {'WAL MB':>8}  statement")
    for calls, ms, rows, wal_bytes, query in top:
        print(
            f"{calls:>9,} {ms:>9.0f} {ms * 1000 / events:>9.1f} {rows:>10,} {int(wal_bytes) / 1e6:>8.1f}  "
            f"{query[:150]}"
        )


if __name__ == "__main__":
    main()

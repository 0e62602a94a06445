"""What the projector's lease costs an append under back-pressure: appends of 30 events, each past a
lag of 20, made by a ledger that projects the lag itself (the CLI's) and by a server worker's, which
takes the lease (free here: no server runs) and projects under it, checking it in each batch. Rounds
alternate (itself, leased, leased, itself, ...) so a drift falls on both; the CPU counted is this
process's plus, on PostgreSQL, the database server's (its postmaster and backends).

    .venv/bin/python -m bench.lease_cost                   # SQLite, 400 appends each
    .venv/bin/python -m bench.lease_cost --pg --rounds 300 # a throwaway PostgreSQL (tests/pg_harness.py)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from service.ledger import Ledger
from tests.factories import cited_by_many

P = "2101.00001"
LAG = 20
PER_APPEND = 10  # citing papers an append adds: 30 events, past the lag each time


def _ppid(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[1]
    except OSError:
        return None


def _server_cpu(data_dir: str | None) -> float:
    """CPU seconds of the PostgreSQL server in `data_dir` (0 without one)."""
    if data_dir is None:
        return 0.0
    with open(os.path.join(data_dir, "postmaster.pid")) as f:
        master = f.readline().strip()
    total = 0.0
    for pid in [master, *(p for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == master)]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return total


def run(urls: dict[bool, str], rounds: int, data_dir: str | None) -> dict[bool, float]:
    """CPU seconds per append, by whether the appender projects under the lease."""
    leds = {k: Ledger(url, projector_max_lag=LAG, projector_lease=k) for k, url in urls.items()}
    try:
        for led in leds.values():
            led.append(cited_by_many(P, 0, 1))
        spent = {False: 0.0, True: 0.0}
        for r in range(rounds):
            batch = cited_by_many(P, 1 + PER_APPEND * r, PER_APPEND)
            for leased in (False, True) if r % 2 == 0 else (True, False):
                server = _server_cpu(data_dir)
                began = time.process_time()
                leds[leased].append(batch)
                mine = time.process_time() - began
                spent[leased] += mine + _server_cpu(data_dir) - server
        return {k: v / rounds for k, v in spent.items()}
    finally:
        for led in leds.values():
            led.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--pg", action="store_true", help="a throwaway PostgreSQL server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if args.pg:
            from tests.pg_harness import PgCluster

            cluster = PgCluster.start()
            try:
                urls = {k: cluster.create_db() for k in (False, True)}
                per = run(urls, args.rounds, cluster.data_dir)
            finally:
                cluster.stop()
        else:
            per = run({k: os.path.join(d, f"{k}.db") for k in (False, True)}, args.rounds, None)
    itself, leased = per[False] * 1e3, per[True] * 1e3
    print(
        f"{'postgresql' if args.pg else 'sqlite'}, {args.rounds} appends of {3 * PER_APPEND} events past "
        f"a lag of {LAG}: itself {itself:.2f} ms CPU, under the lease {leased:.2f} ms "
        f"(+{leased - itself:.2f} ms, {leased / itself:.2f}x)"
    )


if __name__ == "__main__":
    main()

"""Record reads on PostgreSQL against another checkout, on the same ledger, in one run.

    .venv/bin/python -m bench.pg_reads --before /work/wt/before [--events 1000000] [--rounds 5]
                                       [--sample 200] [--check 200] [--dir /tmp/pg-reads]

bench/read_lag.py's measurement on a PostgreSQL server (tests/pg_harness.py's, fsync on): one
synthetic ledger of `--events` events (bench/synth.py's papers, built by this checkout with
bench/read_lag_worker.py's recording clock, every projection at the head), then LEDGER_PROJECTOR_MAX_LAG
more events appended with the projector held (the lagging ledger, a copy made by `CREATE DATABASE ...
TEMPLATE`), and a copy of that projected to the head (the caught-up ledger: the same events). Both
checkouts read the same two databases (the layout is the same: each reader's opening and reads are
checked to change nothing, below).

The reads: `Ledger.record_bytes` of `--sample` papers the lagging events resolve citations to, as of
2025-01-01, warm, in four long-lived processes (this checkout and `--before`'s, each under its own
interpreter, on the caught-up and the lagging ledger), ten papers at a time in turn, the order turning,
`--rounds` passes. For each: p50, p95 and mean of the wall time a read, in each round and over all;
the reader's CPU a read (p50) and its server backend's (user+sys from /proc, summed over the run, a
mean a read: a read's own is below the clock tick).

"Changes nothing": before the readers start and after they (and the renders) end, each database's
schema (pg_dump --schema-only), every table's row count and the rows written to it (pg_stat's inserted,
updated, deleted) are compared.

`--check N`: N random papers of the ledger at every as_of the tests use and four inside the synthetic
history, rendered by both checkouts from both ledgers, compared by sha256. Results: bench/pg_reads.json.
No time is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.read_lag import MEASURE_AS_OF, SYNTH_AS_OF, TEST_AS_OF, quantile_ms

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "bench" / "read_lag_worker.py"
OUT = ROOT / "bench" / "pg_reads.json"
TICK = os.sysconf("SC_CLK_TCK")


def checkout_python(code: Path) -> str:
    """The interpreter of the checkout at `code` (its venv's, if there is one)."""
    venv = code / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def worker(code: Path, *args: str) -> dict[str, Any]:
    """One command of read_lag_worker.py under `code`'s packages and interpreter; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    got = subprocess.run(
        [checkout_python(code), str(WORKER), *args], env=env, capture_output=True, text=True, cwd=code
    )
    if got.returncode != 0:
        raise SystemExit(f"worker {args[0]} under {code} failed:\n{got.stderr[-3000:]}")
    return dict(json.loads(got.stdout.strip().splitlines()[-1]))


def _db(admin: str, name: str) -> str:
    return urlunsplit(urlsplit(admin)._replace(path="/" + name))


def _sql(admin: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []


def _copy(admin: str, src: str, dst: str) -> None:
    _sql(admin, f'DROP DATABASE IF EXISTS "{dst}" WITH (FORCE)')
    _sql(admin, f'CREATE DATABASE "{dst}" TEMPLATE "{src}"')


def backend_ticks(pids: set[int]) -> int:
    """The CPU clock ticks (user + system) these processes have used, from /proc; gone ones count 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _backends(admin: str, name: str) -> set[int]:
    sql = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'"
    rows = _sql(admin, sql, (name,))
    return {int(r[0]) for r in rows}


def state(admin: str, name: str, keep: Path) -> dict[str, Any]:
    """What a reader must leave as it found it: the schema, each table's rows and rows written."""
    from tests.pg_harness import _bin_dir

    url = _db(admin, name)
    dump = subprocess.run([f"{_bin_dir()}/pg_dump", "--schema-only", url], capture_output=True, check=True)
    # pg_dump's \restrict key is new each run: not the schema
    schema = b"\n".join(
        x for x in dump.stdout.splitlines() if not x.startswith((b"\\restrict", b"\\unrestrict"))
    )
    keep.write_bytes(schema)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        counts = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in sorted(tables)}
        writes = {
            r[0]: [int(r[1]), int(r[2]), int(r[3])]
            for r in conn.execute("SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables")
        }
        projections = [list(r) for r in conn.execute("SELECT * FROM projections ORDER BY 1")]
    return {"schema_sha256": hashlib.sha256(schema).hexdigest()[:16], "rows": counts, "writes": writes,
            "projections": projections}  # fmt: skip


class Reader:
    """A long-lived read_lag_worker.py `serve` process (one checkout, one database) and its backends."""

    def __init__(self, name: str, code: Path, admin: str, db: str) -> None:
        self.name = name
        had = _backends(admin, db)
        env = {**os.environ, "PYTHONPATH": str(code)}
        cmd = [checkout_python(code), str(WORKER), "serve", _db(admin, db)]
        self.proc = subprocess.Popen(cmd, env=env, cwd=code, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert self.proc.stdout is not None
        self.ready = json.loads(self.proc.stdout.readline())
        self.pids = _backends(admin, db) - had
        self.rounds: list[list[float]] = []
        self.cpu: list[float] = []
        self.server_ticks = 0

    def ask(self, papers: list[str]) -> dict[str, Any]:
        """One record_bytes of each paper; the answer, with its backends' CPU ticks counted."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        ticks = backend_ticks(self.pids)
        self.proc.stdin.write(json.dumps({"papers": papers, "as_of": MEASURE_AS_OF}) + "\n")
        self.proc.stdin.flush()
        got = dict(json.loads(self.proc.stdout.readline()))
        self.server_ticks += backend_ticks(self.pids) - ticks
        return got

    def close(self) -> None:
        """End the process: its stdin closed, it closes its ledger and exits."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(readers: list[Reader], papers: list[str], rounds: int, chunk: int = 10) -> dict[str, Any]:
    """One warm pass each, then `rounds` passes, `chunk` papers read by every reader in turn."""
    for r in readers:
        r.ask(papers[:chunk])
        r.server_ticks = 0
    turn = 0
    for _ in range(rounds):
        for r in readers:
            r.rounds.append([])
        for at in range(0, len(papers), chunk):
            turn += 1
            order = readers[turn % len(readers) :] + readers[: turn % len(readers)]
            for r in order:
                got = r.ask(papers[at : at + chunk])
                r.rounds[-1] += got["seconds"]
                r.cpu += got["cpu_seconds"]
    out: dict[str, Any] = {}
    for r in readers:
        every = [s for one in r.rounds for s in one]
        out[r.name] = {
            "p50_ms": quantile_ms(every, 0.5), "p95_ms": quantile_ms(every, 0.95),
            "mean_ms": round(statistics.fmean(every) * 1e3, 3),
            "rounds_p50_ms": [quantile_ms(one, 0.5) for one in r.rounds],
            "rounds_mean_ms": [round(statistics.fmean(one) * 1e3, 3) for one in r.rounds],
            "best_round_p50_ms": min(quantile_ms(one, 0.5) for one in r.rounds),
            "best_round_mean_ms": min(round(statistics.fmean(one) * 1e3, 3) for one in r.rounds),
            "reads": len(every), "cpu_p50_ms": quantile_ms(r.cpu, 0.5),
            "client_cpu_mean_ms": round(statistics.fmean(r.cpu) * 1e3, 3),
            "server_cpu_mean_ms": round(r.server_ticks / TICK / len(every) * 1e3, 3),
            "backends": len(r.pids), "head": r.ready["head"], "positions": r.ready["positions"],
        }  # fmt: skip
    return out


def check(before: Path, admin: str, dbs: dict[str, str], papers: list[str], work: Path) -> dict[str, Any]:
    """Every (paper, as_of) rendered by both checkouts from both ledgers; how many differ from before's
    caught-up reads."""
    spec = {"papers": papers, "as_of": [*TEST_AS_OF, *SYNTH_AS_OF], "known_at": [None]}
    spec_file = work / "check.spec.json"
    spec_file.write_text(json.dumps(spec))
    got: dict[str, dict[str, Any]] = {}
    for code_name, code in (("before", before), ("this", ROOT)):
        for kind, db in dbs.items():
            out = work / f"check-{code_name}-{kind}.ndjson"
            worker(code, "render", _db(admin, db), str(spec_file), str(out))
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            got[f"{code_name}, {kind}"] = {
                f"{r['paper']} {r['as_of']}": (r["len"], r["sha256"]) for r in rows
            }
    want = got["before, caught up"]
    result = {}
    for name, rendered in got.items():
        differ = sorted(k for k in want if rendered.get(k) != want[k])
        print(
            f"  {name}: {len(rendered):,} records, {len(differ)} differ from before's caught up", flush=True
        )
        result[name] = {"records": len(rendered), "differ": len(differ), "first_differing": differ[:10]}
    return result


def main() -> None:
    """Start a server, build the ledgers, check, measure, print and save; stop the server."""
    from service.ops.projector import max_lag
    from tests.pg_harness import PgCluster

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the other checkout (with its .venv)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check", type=int, default=200, help="random records to compare byte for byte")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pg-reads"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    lag = max_lag()
    started = time.time()
    loads = [os.getloadavg()[0]]
    cluster = PgCluster.start(fsync=True)
    admin = cluster.admin_url
    try:
        _sql(admin, "CREATE DATABASE base TEMPLATE template0 ENCODING UTF8")
        _sql(admin, "ALTER DATABASE base SET synchronous_commit = off")  # the build only, as bench/run.py
        t = time.time()
        built = worker(ROOT, "build", _db(admin, "base"), str(args.events))
        _sql(admin, "ALTER DATABASE base RESET synchronous_commit")
        _sql(_db(admin, "base"), "VACUUM (ANALYZE)")
        _sql(admin, "CHECKPOINT")
        print(f"built {built['head']:,} events in {time.time() - t:.0f} s: {built}", flush=True)
        _copy(admin, "base", "lagging")
        lagged = worker(
            ROOT, "lag", _db(admin, "lagging"), str(built["next_paper"]), str(lag), str(built["clock_us"])
        )
        _copy(admin, "lagging", "caught")
        worker(ROOT, "project", _db(admin, "caught"))
        for name in ("lagging", "caught"):
            _sql(_db(admin, name), "VACUUM (ANALYZE)")
        _sql(admin, "CHECKPOINT")
        print(f"lagging: +{lagged['appended']:,} events, projections at {lagged['positions']}", flush=True)
        dbs = {"caught up": "caught", "lagging": "lagging"}
        before_state = {k: state(admin, db, args.dir / f"{db}-before.sql") for k, db in dbs.items()}
        cited = lagged["cited"]
        papers = sorted(random.Random(44).sample(cited, min(args.sample, len(cited))))
        loads.append(os.getloadavg()[0])
        readers = [
            Reader(f"{code_name}, {kind}", code, admin, db)
            for code_name, code in (("this", ROOT), ("before", args.before))
            for kind, db in dbs.items()
        ]
        try:
            figures = measure(readers, papers, args.rounds)
        finally:
            for r in readers:
                r.close()
        loads.append(os.getloadavg()[0])
        for name, f in figures.items():
            print(f"  {name:18s} p50 {f['p50_ms']:7.3f} ms (rounds {f['rounds_p50_ms']}), "
                  f"mean {f['mean_ms']:7.3f}, "
                  f"p95 {f['p95_ms']:7.3f}; CPU a read: client p50 {f['cpu_p50_ms']:.3f}, server mean "
                  f"{f['server_cpu_mean_ms']:.3f} ms", flush=True)  # fmt: skip
        ratios = {}
        for kind in ("caught up", "lagging"):
            this, them = figures[f"this, {kind}"], figures[f"before, {kind}"]
            ratios[f"this {kind} / before {kind}"] = {
                k: round(this[k] / them[k], 3)
                for k in ("best_round_p50_ms", "p50_ms", "mean_ms", "best_round_mean_ms", "cpu_p50_ms",
                          "server_cpu_mean_ms")
            }  # fmt: skip
        ratios["this lagging / before caught up"] = {
            "best_round_p50_ms": round(
                figures["this, lagging"]["best_round_p50_ms"]
                / figures["before, caught up"]["best_round_p50_ms"],
                3,
            )
        }
        for name, v in ratios.items():
            print(f"  {name}: {v}", flush=True)
        result: dict[str, Any] = {"events": built["head"], "lag": lag, "before": str(args.before),
                                  "built": built, "lagged": {k: v for k, v in lagged.items() if k != "cited"},
                                  "sample": len(papers), "reads": figures, "ratios": ratios}  # fmt: skip
        if args.check:
            from bench.synth import arxiv_id

            total = int(built["next_paper"]) + int(lagged["papers"])
            picked = sorted(random.Random(1200).sample(range(total), min(args.check, total)))
            print(f"check: {len(picked)} random papers of {total:,}", flush=True)
            result["check"] = check(args.before, admin, dbs, [arxiv_id(i) for i in picked], args.dir)
        after_state = {k: state(admin, db, args.dir / f"{db}-after.sql") for k, db in dbs.items()}
        result["unchanged"] = {k: before_state[k] == after_state[k] for k in dbs}
        result["states"] = {"before": before_state, "after": after_state}
        print(f"  databases unchanged by the readers and renders: {result['unchanged']}", flush=True)
    finally:
        cluster.stop()
    loads.append(os.getloadavg()[0])
    result["load_average_1min"] = loads
    result["seconds"] = round(time.time() - started, 1)
    result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

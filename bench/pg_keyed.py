"""The two reads of facts by observation on PostgreSQL, against another checkout, on the same ledger.

    .venv/bin/python -m bench.pg_keyed --url URL --before DIR [--this DIR] [--sizes 1,50,500] [--rounds 5]
                                       [--calls 20] [--out FILE]

The reads that look events up by their observations' keys (`Dialect.keyed`): the screen's
`screen_facts` (a snapshot's reader, as of the far future) and the works' `observation_facts` (the
standing checks' works, the resolver's explanation; 500 observations a statement). URL is a big
ledger (e.g. bench/pg_plans.py's `plans_big`, whose every key level is as full as it gets). For each
list size, `--calls` lists of observations drawn at random from all the ledger's levels, the same
lists for both checkouts, each read by a long-lived process of each checkout (under its own
interpreter) in turn, the order turning, `--rounds` times. Printed: p50 and mean of the wall time a
call, best round and all, and the server backend's CPU (user+sys from /proc) a call; the rows each
checkout returned must be the same. No time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
FAR = 2**62
TICK = os.sysconf("SC_CLK_TCK")


def serve(url: str) -> None:
    """Under one checkout: answer {"what", "lists"} a line with each call's seconds and rows."""
    from service.ledger import Ledger

    ledger = Ledger(url)
    store: Any = ledger.store
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        times, rows = [], []
        for ids in req["lists"]:
            start = time.perf_counter()
            if req["what"] == "observation_facts":
                got = store.works.observation_facts(ids, -FAR, FAR)
            else:
                with store.snapshot(FAR, FAR) as reader:
                    got = reader.screen_facts(ids)
            times.append(time.perf_counter() - start)
            rows.append(len(got))
        print(json.dumps({"seconds": times, "rows": rows}), flush=True)
    ledger.close()


def _backends(url: str) -> set[int]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        sql = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {int(r[0]) for r in conn.execute(sql)}


class Side:
    """One checkout's long-lived reader process and its server backends."""

    # the helpers shared with bench/pg_reads.py are imported where the driver uses them: this file also
    # runs as `serve` under the other checkout's packages, whose bench/ may not have them

    def __init__(self, name: str, code: Path, url: str) -> None:
        from bench.pg_reads import checkout_python

        self.name = name
        had = _backends(url)
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.proc = subprocess.Popen([checkout_python(code), str(HERE), "serve", url], env=env, cwd=code,
                                     text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert self.proc.stdout is not None
        json.loads(self.proc.stdout.readline())
        self.pids = _backends(url) - had

    def ask(self, what: str, lists: list[list[str]]) -> tuple[dict[str, Any], int]:
        """The answer and the backends' CPU ticks it took."""
        from bench.pg_reads import backend_ticks

        assert self.proc.stdin is not None and self.proc.stdout is not None
        before = backend_ticks(self.pids)
        self.proc.stdin.write(json.dumps({"what": what, "lists": lists}) + "\n")
        self.proc.stdin.flush()
        got = dict(json.loads(self.proc.stdout.readline()))
        return got, backend_ticks(self.pids) - before

    def close(self) -> None:
        """Its stdin closed, it exits."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    """Draw the lists, read them with both checkouts in turn, print and save."""
    import psycopg

    from bench.read_lag import quantile_ms

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--this", type=Path, default=ROOT, help="the checkout measured (default this one)")
    ap.add_argument("--sizes", default="1,50,500")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "pg_keyed.json")
    args = ap.parse_args()
    with psycopg.connect(args.url, autocommit=True) as conn:
        oids = [
            r[0][2:] for r in conn.execute("SELECT key FROM event_keys_all WHERE key >= 'o:' AND key < 'o;'")
        ]
        levels = {
            t: conn.execute(f"SELECT count(*) FROM {t} WHERE key >= 'o:' AND key < 'o;'").fetchall()[0][0]
            for t in ("event_keys", "event_keys_deep", "event_keys_middle", "event_keys_recent")
        }
        events = conn.execute("SELECT max(seq) FROM events").fetchall()[0][0]
    rng = random.Random(44)
    sides = [Side("this", args.this, args.url), Side("before", args.before, args.url)]
    load = [os.getloadavg()[0]]
    result: dict[str, Any] = {"events": events, "observation_keys": levels, "rounds": args.rounds,
                              "calls": args.calls, "reads": {}}  # fmt: skip
    try:
        for what in ("screen_facts", "observation_facts"):
            for size in (int(s) for s in args.sizes.split(",")):
                lists = [rng.sample(oids, size) for _ in range(args.calls)]
                for s in sides:
                    s.ask(what, lists[:2])  # warm: the statement's plan, the pages
                seen: dict[str, dict[str, Any]] = {
                    s.name: {"rounds": [], "ticks": 0, "rows": None} for s in sides
                }
                for n in range(args.rounds):
                    for s in sides[n % 2 :] + sides[: n % 2]:
                        got, ticks = s.ask(what, lists)
                        seen[s.name]["rounds"].append(got["seconds"])
                        seen[s.name]["ticks"] += ticks
                        seen[s.name]["rows"] = got["rows"]
                out = {}
                for name, v in seen.items():
                    every = [x for r in v["rounds"] for x in r]
                    out[name] = {
                        "p50_ms": quantile_ms(every, 0.5), "mean_ms": round(statistics.fmean(every) * 1e3, 3),
                        "best_round_p50_ms": min(quantile_ms(r, 0.5) for r in v["rounds"]),
                        "best_round_mean_ms": min(round(statistics.fmean(r) * 1e3, 3) for r in v["rounds"]),
                        "server_cpu_mean_ms": round(v["ticks"] / TICK / len(every) * 1e3, 3),
                        "rows": sum(v["rows"]),
                    }  # fmt: skip
                same = seen["this"]["rows"] == seen["before"]["rows"]
                t, b = out["this"], out["before"]
                ratio = t["best_round_p50_ms"] / b["best_round_p50_ms"]
                print(f"{what} x {size}: this p50 {t['best_round_p50_ms']} ms (all {t['p50_ms']}), mean "
                      f"{t['mean_ms']}, server {t['server_cpu_mean_ms']} | before p50 "
                      f"{b['best_round_p50_ms']} (all {b['p50_ms']}), mean {b['mean_ms']}, server "
                      f"{b['server_cpu_mean_ms']} | ratio {ratio:.3f}; rows {t['rows']:,} the same: {same}",
                      flush=True)  # fmt: skip
                result["reads"][f"{what} x {size}"] = {**out, "same_rows": same}
    finally:
        for s in sides:
            s.close()
    load.append(os.getloadavg()[0])
    result["load_average_1min"] = load
    result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    else:
        main()

"""What GET /metrics costs the append path: the single-event POST rate with metrics on and off, in one
run on one machine, rounds alternating (on, off, off, on, ...) so that a drift of the machine or of
the growing ledger falls on both alike.

    .venv/bin/python -m bench.metrics_cost                 # SQLite, 4 cycles of 3 s rounds
    .venv/bin/python -m bench.metrics_cost --db postgresql://... --cycles 2

Each round is a fresh uvicorn process (one worker, as `ledger serve` runs it, access log off) over the
same ledger, LEDGER_METRICS=on or off, loaded by bench/load.py: 8 keep-alive clients each posting one
new event per request (the events of the next synthetic papers, never one twice), every answer
checked 201. While metrics are on, a scraper reads /metrics every second, as a Prometheus server
would (more often than its default 15 s). Prints each round and the ratio of the medians (on / off);
the spread of the off rounds is the noise it is to be read against.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
from pathlib import Path
from typing import Any

from bench import pools
from bench.server import AUTH, Server

FIRST_PAPER = 3000  # past every paper bench/pools.py's OFFSETS use
SCRAPE_EVERY_S = 1.0


def _scraper(server: Server, stop: threading.Event, count: list[int]) -> None:
    while not stop.wait(SCRAPE_EVERY_S):
        status, body = server.request("GET", "/metrics")
        assert status == 200 and b"ledger_events_appended_total" in body, body[:200]
        count[0] += 1


def _round(db: str, metrics: str, bodies: Path, seconds: float, clients: int) -> dict[str, Any]:
    os.environ["LEDGER_METRICS"] = metrics
    try:
        with Server(db) as server:
            stop, scrapes = threading.Event(), [0]
            scraper = threading.Thread(target=_scraper, args=(server, stop, scrapes), daemon=True)
            if metrics == "on":
                scraper.start()
            try:
                out = server.load(
                    path="/events",
                    method="POST",
                    bodies_file=str(bodies),
                    headers=AUTH,
                    concurrency=clients,
                    max_requests=10**9,
                    max_seconds=seconds,
                )
            finally:
                stop.set()
                if scraper.is_alive():
                    scraper.join(timeout=10)
    finally:
        os.environ.pop("LEDGER_METRICS", None)
    if set(out["statuses"]) != {"201"}:
        raise RuntimeError(f"not every answer was 201: {out['statuses']}")
    if out["requests"] >= sum(1 for _ in bodies.open("rb")):
        raise RuntimeError("the round ran out of events: give it more (--per-round)")
    return {
        "metrics": metrics,
        "requests_per_s": out["requests_per_s"],
        "p50_ms": out["p50_ms"],
        "p99_ms": out["p99_ms"],
        "scrapes": scrapes[0],
    }


def _rounds(db: str, order: list[str], events: list[Any], tmp: Path, args: Any) -> list[dict[str, Any]]:
    rounds = []
    for i, metrics in enumerate(order):
        bodies = tmp / f"round{i}.ndjson"
        chunk = events[i * args.per_round : (i + 1) * args.per_round]
        bodies.write_bytes(b"\n".join(pools.body([e]) for e in chunk) + b"\n")
        r = _round(db, metrics, bodies, args.seconds, args.clients)
        rounds.append(r)
        rate, p50, p99 = r["requests_per_s"], r["p50_ms"], r["p99_ms"]
        line = f"round {i + 1:2d}  metrics {metrics:3s}  {rate:8.1f} req/s  p50 {p50:.2f} ms p99 {p99:.2f} ms"
        print(f"{line}  scrapes {r['scrapes']}", flush=True)
    return rounds


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the alternating rounds; print them and the ratio; answer the summary."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="a ledger to append to (default: a new SQLite file in a temp dir)")
    ap.add_argument("--cycles", type=int, default=4, help="on/off/off/on cycles")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds of load per round")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-round", type=int, default=15_000, help="new events ready for each round")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="metrics-cost-"))
    db = args.db or str(tmp / "ledger.db")
    order = ["on", "off", "off", "on"] * args.cycles
    events = pools.singles(FIRST_PAPER, args.per_round * len(order))
    rounds = []
    try:
        rounds = _rounds(db, order, events, tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    on = [r["requests_per_s"] for r in rounds if r["metrics"] == "on"]
    off = [r["requests_per_s"] for r in rounds if r["metrics"] == "off"]
    summary = {
        "figure": "single-event POST, metrics on over off",
        "db": "postgresql" if db.startswith("postgresql") else "sqlite",
        "clients": args.clients,
        "seconds_per_round": args.seconds,
        "on_median": statistics.median(on),
        "off_median": statistics.median(off),
        "ratio": round(statistics.median(on) / statistics.median(off), 4),
        # the noise: how far apart two rounds of the same setting fall
        "off_spread": round((max(off) - min(off)) / statistics.median(off), 4),
        "on_spread": round((max(on) - min(on)) / statistics.median(on), 4),
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    s = summary
    print(
        f"on {s['on_median']:.1f} req/s / off {s['off_median']:.1f} req/s = {s['ratio']:.3f} "
        f"(spread between rounds: off {s['off_spread']:.1%}, on {s['on_spread']:.1%})"
    )
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()

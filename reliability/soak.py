"""Soak: `ledger serve` under reads, writes and 200 SSE subscribers; its memory and open files stay flat.

`python -m reliability.soak [--duration 600]` (from the repository root) starts one `ledger serve` on a
loopback port over a new SQLite ledger seeded with 12,600 events, then runs at once, for the duration:
  - reads: the sample record as JSON and pages of /evidence, about 10 a second;
  - writes: POST /events batches of 1-10 new events, 10 a second (about 40 KB/s of events, so that a
    subscriber that stops reading fills the kernel's socket buffers, ~10 MB on loopback, and then the
    server's LEDGER_SSE_BUFFER, and is dropped);
  - SSE subscribers, 200 at all times: `--readers` that read everything (and check every seq arrives
    exactly once, in order, across their reconnections by Last-Event-ID), `--hoppers` that read a
    few seconds, leave and come back with Last-Event-ID, and `--stallers` that never read a byte
    after the headers (a tiny receive window) and give up after a while: a third from seq 0 (stuck in
    their catch-up, as in issue 12; 1-4 minutes), the others from the head (live; 2-7 minutes).
Every `--sample` seconds it records the server process's RSS (VmRSS) and open files (/proc/PID/fd).
Flat means: after `--warmup` seconds, the highest value of the last third of the samples is at most
the highest of the first third plus `--rss-margin` (10 %, at least 16 MiB) for RSS and plus
`--fd-margin` (10 %, at least 16) for open files. It prints a table and the figures, writes them as
JSON (`--out`), and exits 1 if either is not flat, a reader saw a gap or a repeat, or the server died.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from ledger.model.codec import canonical
from reliability.server import ROOT, serving
from reliability.workload import Events
from service.ledger import Ledger

TOKEN = "reliability-soak-token"
PAPER = "2509.02480"
SAMPLE = ROOT / "ledger" / "samples" / f"{PAPER}.record.json"
SEED_EVENTS = 12_600
ENV = {
    "LEDGER_TOKENS": TOKEN,
    # room for the 200 subscribers, and for places not yet freed by ones that just left
    "LEDGER_SSE_MAX_SUBSCRIBERS": "240",
    # small enough that a subscriber that stopped reading is dropped within the run
    "LEDGER_SSE_BUFFER": str(64 * 1024),
    "LEDGER_SSE_HEARTBEAT": "5",
}


class Tally:
    """What the clients saw."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.violations: list[str] = []

    def add(self, name: str, n: int = 1) -> None:
        """Count `n` of `name`."""
        self.counts[name] = self.counts.get(name, 0) + n


def seed(db: str) -> int:
    """The sample record and SEED_EVENTS generated events in a new ledger; the head seq."""
    ledger = Ledger(db)
    try:
        ledger.import_bytes(SAMPLE.read_bytes())
        events = Events(90, "soak-seed", random.Random(90))
        left = SEED_EVENTS
        while left > 0:
            batch = [e for e, _ in events.take(min(500, left))]
            ledger.import_bytes(canonical({"events": batch}))
            left -= len(batch)
        return ledger.head().seq
    finally:
        ledger.close()


def proc_sample(pid: int) -> dict[str, int]:
    """RSS (KiB), open files and threads of process `pid`."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
        "threads": int(fields["Threads"].strip()),
    }


async def head_seq(client: httpx.AsyncClient) -> int:
    """The server's head seq."""
    r = await client.get("/healthz")
    return int(r.json()["head"]["seq"])


async def follow(
    client: httpx.AsyncClient,
    tally: Tally,
    name: str,
    after: int,
    stop: asyncio.Event,
    read_for: float | None,
) -> int:
    """Read one subscription from `after` (resuming by Last-Event-ID) until it ends, `read_for`
    seconds pass, or the run stops; checks each seq is the next one. Returns the last seq seen."""
    last = after
    headers = {"Last-Event-ID": str(after)} if after else {}
    deadline = time.monotonic() + read_for if read_for is not None else None
    try:
        async with client.stream("GET", "/evidence/stream", params={"after": after}, headers=headers) as r:
            if r.status_code == 503:
                tally.add("refused_503")
                await asyncio.sleep(float(r.headers.get("Retry-After", "5")))
                return last
            tally.add(f"{name}_connections")
            async for line in r.aiter_lines():
                if line.startswith("id: "):
                    seq = int(line[4:])
                    if seq != last + 1:
                        kind = "gap" if seq > last + 1 else "repeat"
                        tally.violations.append(f"{name}: {kind}: seq {seq} after {last}")
                    last = seq
                    tally.add("events_delivered")
                if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
                    return last
            tally.add(f"{name}_ended_by_server")
    except (httpx.HTTPError, OSError):
        tally.add(f"{name}_errors")
        await asyncio.sleep(0.5)
    return last


async def reader(client: httpx.AsyncClient, tally: Tally, start: int, stop: asyncio.Event) -> None:
    """A subscriber that reads everything, and comes back by Last-Event-ID whenever it is cut."""
    last = start
    while not stop.is_set():
        last = await follow(client, tally, "reader", last, stop, None)


async def hopper(client: httpx.AsyncClient, tally: Tally, rng: random.Random, stop: asyncio.Event) -> None:
    """A subscriber that reads a few seconds, leaves, and comes back by Last-Event-ID."""
    last = max(0, await head_seq(client) - rng.randint(0, 2000))
    while not stop.is_set():
        last = await follow(client, tally, "hopper", last, stop, rng.uniform(1, 20))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(0, 2))


async def staller(
    client: httpx.AsyncClient,
    port: int,
    tally: Tally,
    rng: random.Random,
    from_zero: bool,
    stop: asyncio.Event,
) -> None:
    """A subscriber that never reads after the headers (tiny receive window), then gives up; from seq 0
    it stalls in its catch-up, from the head in live delivery (where the server drops it)."""
    while not stop.is_set():
        try:
            after = 0 if from_zero else await head_seq(client)
        except httpx.HTTPError:
            tally.add("staller_errors")
            await asyncio.sleep(1)
            continue
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
            reader_, writer = await asyncio.open_connection(sock=sock)
        except OSError:
            sock.close()
            tally.add("staller_connect_failed")
            await asyncio.sleep(1)
            continue
        try:
            request = f"GET /evidence/stream?after={after} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
            writer.write(request.encode())
            await writer.drain()
            status = await asyncio.wait_for(reader_.readline(), 30)
            tally.add("staller_connections" if b" 200 " in status else "staller_refused")
            hold = rng.uniform(60, 240) if from_zero else rng.uniform(120, 420)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), hold)  # holding, never reading
        except (OSError, TimeoutError):
            tally.add("staller_errors")
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def writes(
    client: httpx.AsyncClient, tally: Tally, rng: random.Random, stop: asyncio.Event, every: float
) -> None:
    """POST /events: a batch of 1-10 new events every `every` seconds."""
    events = Events(91, "soak", rng)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    while not stop.is_set():
        batch = [e for e, _ in events.take(rng.randint(1, 10))]
        try:
            r = await client.post("/events", json={"events": batch}, headers=auth)
            tally.add(f"write_{r.status_code}")
            if r.status_code == 201:
                tally.add("events_written", r.json()["appended"])
        except httpx.HTTPError:
            tally.add("write_error")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def reads(client: httpx.AsyncClient, tally: Tally, rng: random.Random, stop: asyncio.Event) -> None:
    """The record JSON and /evidence pages, about ten a second."""
    while not stop.is_set():
        try:
            if rng.random() < 0.5:
                r = await client.get(f"/paper/{PAPER}/citation-record.json")
            else:
                page = {"after": rng.randint(0, SEED_EVENTS), "limit": rng.choice([10, 100, 1000])}
                r = await client.get("/evidence", params=page)
            tally.add(f"read_{r.status_code}")
        except httpx.HTTPError:
            tally.add("read_error")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


def flat(values: list[int], rel: float, floor: int) -> dict[str, Any]:
    """Whether the last third's max is within max(rel * first third's max, floor) of the first third's."""
    third = max(1, len(values) // 3)
    first, last = max(values[:third]), max(values[-third:])
    allowed = first + max(int(first * rel), floor)
    return {"first_third_max": first, "last_third_max": last, "allowed": allowed, "flat": last <= allowed}


async def soak(port: int, pid: int, head: int, a: argparse.Namespace) -> dict[str, Any]:
    """Run the load for a.duration seconds while sampling the server; the figures."""
    tally = Tally()
    stop = asyncio.Event()
    rng = random.Random(a.seed)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=50)
    timeout = httpx.Timeout(30.0, read=60.0)
    samples: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=timeout) as c:
        tasks = [asyncio.create_task(writes(c, tally, random.Random(rng.random()), stop, a.write_every))]
        tasks += [asyncio.create_task(reads(c, tally, random.Random(rng.random()), stop))]
        for i in range(a.readers):
            start = 0 if i % 10 == 0 else max(0, head - rng.randint(0, 500))
            tasks.append(asyncio.create_task(reader(c, tally, start, stop)))
        for _ in range(a.hoppers):
            tasks.append(asyncio.create_task(hopper(c, tally, random.Random(rng.random()), stop)))
        for i in range(a.stallers):
            task = staller(c, port, tally, random.Random(rng.random()), i % 3 == 0, stop)
            tasks.append(asyncio.create_task(task))
        started = time.monotonic()
        print(f"{'t (s)':>6} {'RSS (MiB)':>10} {'fds':>5} {'threads':>8} {'events out':>11} {'written':>8}")
        while True:
            now = time.monotonic() - started
            s = {"t": round(now), **proc_sample(pid)}
            s["events_delivered"] = tally.counts.get("events_delivered", 0)
            samples.append(s)
            print(
                f"{s['t']:>6} {s['rss_kib'] / 1024:>10.1f} {s['fds']:>5} {s['threads']:>8} "
                f"{s['events_delivered']:>11} {tally.counts.get('events_written', 0):>8}",
                flush=True,
            )
            if now >= a.duration:
                break
            await asyncio.sleep(min(a.sample, a.duration - now))
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    after_warmup = [s for s in samples if s["t"] >= a.warmup] or samples
    return {
        "duration_s": a.duration,
        "subscribers": {"readers": a.readers, "hoppers": a.hoppers, "stallers": a.stallers},
        "server_env": ENV,
        "seeded_head": head,
        "samples": samples,
        "rss": flat([s["rss_kib"] for s in after_warmup], a.rss_margin, 16 * 1024),
        "fds": flat([s["fds"] for s in after_warmup], a.fd_margin, 16),
        "counts": dict(sorted(tally.counts.items())),
        "violations": tally.violations[:50],
        "violation_count": len(tally.violations),
    }


def main() -> None:
    """Seed, serve, load, sample; print and write the figures; exit 1 unless flat and correct."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    p.add_argument("--sample", type=float, default=10.0, help="seconds between samples (default 10)")
    p.add_argument("--warmup", type=float, default=60.0, help="seconds left out of the flatness test")
    p.add_argument("--write-every", type=float, default=0.1, help="seconds between two write batches")
    p.add_argument("--readers", type=int, default=100)
    p.add_argument("--hoppers", type=int, default=40)
    p.add_argument("--stallers", type=int, default=60)
    p.add_argument("--rss-margin", type=float, default=0.10)
    p.add_argument("--fd-margin", type=float, default=0.10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="/tmp/ledger-soak.json", help="where to write the JSON figures")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ledger-soak-") as tmp:
        db = str(Path(tmp) / "soak.db")
        head = seed(db)
        with serving(db, env=ENV, workdir=Path(tmp)) as server:
            figures = asyncio.run(soak(server.port, server.proc.pid, head, a))
            alive = server.proc.poll() is None
            log = server.log()
    figures["server_alive_at_end"] = alive
    figures["server_log"] = {
        "subscribers_dropped": log.count("SSE subscriber dropped"),
        # uvicorn's line for each connection closed that way (a dropped subscriber's)
        "responses_left_unfinished": log.count("ASGI callable returned without completing response"),
        "tracebacks": log.count("Traceback"),
    }
    ok = figures["rss"]["flat"] and figures["fds"]["flat"] and not figures["violation_count"] and alive
    figures["ok"] = ok
    Path(a.out).write_text(json.dumps(figures, indent=2))
    summary = {k: v for k, v in figures.items() if k != "samples"}
    print(json.dumps(summary, indent=2))
    print(f"figures written to {a.out}; {'flat' if ok else 'NOT FLAT or incorrect'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

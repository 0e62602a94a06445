"""`kill -9` of `ledger serve` in the middle of a write load, then a restart, round after round.

After each kill, on the file alone: every acknowledged event is there at the seq and hash it was
acknowledged with, every batch is there whole or not at all (its events share a marker), and
`ledger verify` exits 0. After the restart, each batch that was in flight is sent again: the answer
must be all-duplicate (it had committed) or all-new (it had not), never a mix.

`python -m reliability.crash --rounds 12` prints the figures as JSON (non-zero exit on any failure);
`--db postgresql://...` runs it on an empty PostgreSQL database instead of a new SQLite file.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from reliability import driver
from reliability.check import LedgerRows, verify_cli
from reliability.server import Server

TOKEN = "reliability-crash-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Batch:
    """One POST /events body whose events all carry the same marker; what the client was told."""

    def __init__(self, marker: str, events: list[dict[str, Any]]) -> None:
        self.marker = marker
        self.events = events
        self.ids = [e["event_id"] for e in events]
        self.acked: list[tuple[int, str]] | None = None  # (seq, hash) per event once acknowledged
        self.in_flight = False
        self.refusal: str | None = None  # an answer other than 201 (never expected here)


def _batch(rng: random.Random, marker: str, client: int, serial: int) -> Batch:
    events = []
    for i in range(rng.randint(1, 30)):
        n = serial * 31 + i
        events.append(
            {
                "type": "measurement.observed",
                "event_id": str(uuid4(rng)),
                "observed_at": f"2026-02-{1 + n // 86_400 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:"
                f"{n % 60:02d}.{client:06d}Z",
                "data": {
                    "arxiv_id": f"2800.{client:05d}",
                    "source": marker,
                    "metric": "cited_by_count",
                    "value": i,
                    "source_release": None,
                    "query_url": None,
                },
            }
        )
    return Batch(marker, events)


def uuid4(rng: random.Random) -> str:
    """A random UUID from the seeded generator."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _post(client: httpx.Client, batch: Batch) -> httpx.Response:
    return client.post("/events", json={"events": batch.events}, headers=AUTH)


def _load(
    base: str, round_: int, client: int, rng: random.Random, stop: threading.Event, out: list[Batch]
) -> None:
    """Post batches one after another until the server dies (or `stop`)."""
    with httpx.Client(base_url=base, timeout=30.0) as http:
        serial = 0
        while not stop.is_set():
            serial += 1
            batch = _batch(rng, f"crash-r{round_}-c{client}-b{serial}", client, round_ * 100_000 + serial)
            out.append(batch)
            try:
                r = _post(http, batch)
            except httpx.HTTPError:  # killed while this one was on its way: outcome unknown
                batch.in_flight = True
                return
            if r.status_code != 201:
                batch.refusal = f"{r.status_code} {r.text}"
                return
            batch.acked = [(e["seq"], e["hash"]) for e in r.json()["events"]]


def _check_file(db: str, batches: list[Batch]) -> dict[str, Any]:
    """What the database alone (a file, or PostgreSQL's tables) must show after a kill."""
    rows = LedgerRows(db)
    rows.check_structure()
    refused = [f"{b.marker}: {b.refusal}" for b in batches if b.refusal]
    assert not refused, f"batches refused during the load: {refused[:3]}"
    whole = absent = 0
    for b in batches:
        stored = [rows.by_id.get(i) for i in b.ids]
        if b.acked is not None:
            assert stored == b.acked, f"{b.marker}: acknowledged, but the file holds {stored}"
        present = sum(s is not None for s in stored)
        assert present in (0, len(b.ids)), f"{b.marker}: {present} of {len(b.ids)} events stored (partial)"
        whole += present == len(b.ids)
        absent += present == 0
    return {"events": len(rows.rows), "batches_whole": whole, "batches_absent": absent}


def _retry(base: str, batches: list[Batch], rng: random.Random) -> dict[str, int]:
    """After the restart: in-flight batches again (all-duplicate or all-new), and some acknowledged ones."""
    committed = not_committed = 0
    with httpx.Client(base_url=base, timeout=30.0) as http:
        for b in [b for b in batches if b.in_flight]:
            r = _post(http, b)
            dup = [e["duplicate"] for e in r.json()["events"]]
            assert r.status_code in (200, 201) and len(set(dup)) == 1, f"{b.marker}: mixed answer {r.text}"
            committed += dup[0]
            not_committed += not dup[0]
            b.acked, b.in_flight = [(e["seq"], e["hash"]) for e in r.json()["events"]], False
        done = [b for b in batches if b.acked is not None]
        for b in rng.sample(done, min(20, len(done))):
            r = _post(http, b)
            assert r.status_code == 200, r.text
            assert [(e["seq"], e["hash"]) for e in r.json()["events"]] == b.acked, b.marker
    return {"in_flight_had_committed": committed, "in_flight_had_not": not_committed}


def run(
    workdir: Path, rounds: int, *, clients: int = 4, seed: int = 7, db: str | None = None
) -> dict[str, Any]:
    """`rounds` kills at random moments of the load on `db` (an empty ledger's URL; default: a new
    SQLite file in `workdir`); the figures of each round."""
    rng = random.Random(seed)
    db = db or str(workdir / "crash.db")
    env = {"LEDGER_TOKENS": TOKEN}
    batches: list[Batch] = []
    per_round = []
    workers = 1
    server = Server(db, env=env, args=["--workers", str(workers)], workdir=workdir)
    server.wait_healthy(workers=workers)
    try:
        for round_ in range(rounds):
            stop = threading.Event()
            outs: list[list[Batch]] = [[] for _ in range(clients)]
            threads = [
                threading.Thread(
                    target=_load, args=(server.base, round_, c, random.Random(rng.random()), stop, outs[c])
                )
                for c in range(clients)
            ]
            for t in threads:
                t.start()
            kill_after = rng.uniform(0.3, 2.0)
            time.sleep(kill_after)
            server.kill9()
            stop.set()
            for t in threads:
                t.join(timeout=60)
            this_round = [b for out in outs for b in out]
            batches += this_round
            figures = {
                "round": round_ + 1,
                "workers": workers,
                "kill_after_s": round(kill_after, 2),
                "acknowledged_batches": sum(b.acked is not None for b in this_round),
                "in_flight_batches": sum(b.in_flight for b in this_round),
                **_check_file(db, batches),
                "verify": verify_cli(db, workdir).split(";")[0],
            }
            workers = 2 if workers == 1 else 1  # alternate: one process, then a supervisor and two workers
            server = Server(db, env=env, args=["--workers", str(workers)], workdir=workdir)
            server.wait_healthy(workers=workers)
            figures.update(_retry(server.base, batches, rng))
            per_round.append(figures)
    finally:
        server.stop()
    final = _check_file(db, batches)  # after the retries too: still whole batches only
    return {
        "kills": rounds,
        "batches": len(batches),
        "acknowledged_events": sum(len(b.ids) for b in batches if b.acked is not None),
        "final_events": final["events"],
        "final_verify": verify_cli(db, workdir),
        "rounds": per_round,
    }


def main() -> None:
    """Run the rounds; print the figures."""
    driver.main(__doc__, "crash", run, [("rounds", 12, None), ("clients", 4, None), ("seed", 7, None)])


if __name__ == "__main__":
    main()

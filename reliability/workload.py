"""One writer's load: random batch sizes, re-sent batches, stale expected_versions, invalid batches.

Every attempt is logged with what it expected and what it got, so a checker can prove afterwards that
each acknowledged event is stored exactly once and each refused batch left nothing behind.
Run as a process: `python -m reliability.workload CLIENT TARGET OUT (--url URL | --db PATH) ...`.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHARED_PAPER = "2600.00001"
Body = dict[str, Any]
Answer = tuple[int, dict[str, Any]]


def _ts(n: int) -> str:
    """A past instant, distinct per n (observed_at may not be in the future)."""
    return f"2026-0{1 + n // 2_592_000 % 9}-{1 + n // 86_400 % 28:02d}T{n // 3600 % 24:02d}:" + (
        f"{n // 60 % 60:02d}:{n % 60:02d}.{n % 1_000_000:06d}Z"
    )


class Events:
    """A client's own event sequence: papers, citations and resolutions, plus shared-stream events."""

    def __init__(self, client: int, tag: str, rng: random.Random) -> None:
        self.client, self.tag, self.rng = client, tag, rng
        self.n = 0
        self.queue: list[tuple[Body, str]] = []  # (event, stream)

    def _id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _paper(self) -> str:
        return f"{2700 + self.client}.{self.n % 100_000:05d}"

    def _fill(self) -> None:
        self.n += 1
        n, paper, oid = self.n, self._paper(), self._id()
        stream = f"paper:{paper}"
        ts = _ts(n)
        self.queue += [
            (self.paper_observed(paper, ts), stream),
            (
                self.envelope(
                    "citation.observed",
                    ts,
                    {
                        "observation_id": oid,
                        "citing_arxiv_id": paper,
                        "reference_index": n,
                        "source": "pdf_text",
                        "cited_work": None,
                    },
                ),
                stream,
            ),
            (
                self.envelope(
                    "resolution.observed",
                    ts,
                    {
                        "observation_id": oid,
                        "status": "verified_exact",
                        "resolver_source": "local_arxiv",
                        "cited_work": None,
                        "cited_arxiv_id": SHARED_PAPER,
                    },
                ),
                stream,
            ),
        ]
        if n % 2 == 0:  # streams every client writes to
            self.queue.append((self.measurement(SHARED_PAPER, ts, n), f"paper:{SHARED_PAPER}"))
            work = self._id()
            check = {"source": "crossref", "work_ids": [work], "notices": []}
            self.queue.append((self.envelope("standing.checked", ts, check), "source:crossref"))

    def envelope(self, type_: str, ts: str, data: Body) -> Body:
        """An envelope with an explicit event_id, so a refused one can be looked for afterwards."""
        return {"type": type_, "observed_at": ts, "event_id": self._id(), "data": data}

    def paper_observed(self, paper: str, ts: str) -> Body:
        """A paper snapshot whose title carries the run tag."""
        data = {
            "arxiv_id": paper,
            "title": f"Load {self.tag} client {self.client} paper {self.n} ☃",
            "primary_category": None,
            "submitted_at": ts,
            "last_updated": ts,
            "version": 1,
        }
        return self.envelope("paper.observed", ts, data)

    def measurement(self, paper: str, ts: str, value: Any, source: str | None = None) -> Body:
        """A measurement (the value may be made invalid on purpose)."""
        data = {
            "arxiv_id": paper,
            "source": source or f"load-{self.tag}-{self.client}",
            "metric": "cited_by_count",
            "value": value,
            "source_release": None,
            "query_url": None,
        }
        return self.envelope("measurement.observed", ts, data)

    def take(self, size: int) -> list[tuple[Body, str]]:
        """The next `size` events of the sequence (dependencies stay in order)."""
        while len(self.queue) < size:
            self._fill()
        out, self.queue = self.queue[:size], self.queue[size:]
        return out

    def fresh(self, size: int) -> list[Body]:
        """Events outside the sequence, for batches meant to be refused (never sent again)."""
        self.n += 1
        paper = f"{2700 + self.client}.{(self.n + 50_000) % 100_000:05d}"
        return [self.measurement(paper, _ts(self.n), i) for i in range(size)]


def run_client(
    client: int,
    target: int,
    post: Callable[[Body], Answer],
    *,
    seed: int = 0,
    tag: str = "",
    max_batch: int = 50,
    pause: float = 0.0,
) -> list[dict[str, Any]]:
    """Append until `target` new events are acknowledged; every attempt, as logged."""
    rng = random.Random(seed * 1000 + client)
    ev = Events(client, tag or str(seed), rng)
    versions: dict[str, int] = {}  # streams this client alone writes: their exact version
    acked: list[int] = []  # indexes of acknowledged attempts, for re-sends
    log: list[dict[str, Any]] = []
    new_acked = 0

    def send(kind: str, body: Body, expect: int, streams: list[str] | None = None, of: int = -1) -> int:
        status, answer = post(body)
        log.append(
            {
                "kind": kind,
                "expect": expect,
                "status": status,
                "of": of,
                "event_ids": [e.get("event_id") for e in body["events"]],
                "body": body if of < 0 else None,
                "answer": answer if status < 300 else None,
                "error": answer.get("error") if status >= 300 else None,
            }
        )
        if status < 300 and streams is not None:
            for item, stream in zip(answer["events"], streams, strict=True):
                if not item["duplicate"] and not stream.startswith(("paper:2600", "source:")):
                    versions[stream] = versions.get(stream, 0) + 1
            acked.append(len(log) - 1)
        return status

    while new_acked < target:
        roll = rng.random()
        if roll < 0.08 and acked:  # a retry of an acknowledged batch: every event a duplicate
            prior = rng.choice(acked)
            send("resend", log[prior]["body"], 200, of=prior)
            continue
        if roll < 0.13:  # a stream not at the version the batch expects: 409, nothing written
            fresh = ev.fresh(rng.randint(1, 5))
            stream = f"paper:{fresh[0]['data']['arxiv_id']}"
            stale = {stream: versions.get(stream, 0) + rng.randint(1, 9)}
            send("stale", {"events": fresh, "expected_versions": stale}, 409)
            continue
        if roll < 0.16:  # one invalid event at the end: 422, the valid ones before it not written
            events = ev.fresh(rng.randint(1, 5))
            events[-1]["data"]["value"] = 1.5
            send("invalid", {"events": events}, 422)
            continue
        if roll < 0.19 and acked:  # an event_id reused with other content: 409, nothing written
            prior_event = log[rng.choice(acked)]["body"]["events"][0]
            clash = {**prior_event, "observed_at": _ts(999_999 + rng.randint(0, 9999))}
            send("idconflict", {"events": [*ev.fresh(rng.randint(0, 4)), clash]}, 409)
            continue
        size = min(rng.randint(1, max_batch), target - new_acked)
        chunk = ev.take(size)
        events = [e for e, _ in chunk]
        streams = [s for _, s in chunk]
        body: Body = {"events": events}
        kind, own = "normal", streams[0]
        if roll < 0.30 and not own.startswith(("paper:2600", "source:")):
            # the exact version of a stream only this client writes: must pass
            kind, body = "expected_ok", {"events": events, "expected_versions": {own: versions.get(own, 0)}}
        elif roll < 0.38 and acked:  # stored events ahead of new ones: 201, those flagged duplicate
            prior_events = log[rng.choice(acked)]["body"]["events"]
            dups = prior_events[: rng.randint(1, min(3, len(prior_events)))]
            kind, body = "mixed", {"events": [*dups, *events]}
            streams = ["dup"] * len(dups) + streams
        if send(kind, body, 201, streams) == 201:
            new_acked += sum(not i["duplicate"] for i in log[-1]["answer"]["events"])
        else:  # not expected in a run without faults; the checker reports it
            ev.queue = chunk + ev.queue
        if pause:
            time.sleep(rng.random() * pause)
    return log


def http_post(url: str, token: str) -> Callable[[Body], Answer]:
    """POST /events on a running server."""
    import httpx

    client = httpx.Client(base_url=url, timeout=120.0, headers={"Authorization": f"Bearer {token}"})

    def post(body: Body) -> Answer:
        r = client.post("/events", content=json.dumps(body), headers={"content-type": "application/json"})
        return r.status_code, r.json()

    return post


def direct_post(db: str) -> Callable[[Body], Answer]:
    """The same batch through the library in this process (what `ledger import` does)."""
    from api.errors import error_answer, status_of
    from api.intake.writes import append_answer
    from ledger.model.errors import LedgerError
    from ledger.model.importer import parse_batch
    from service.ledger import Ledger

    ledger = Ledger(db)

    def post(body: Body) -> Answer:
        try:
            result = ledger.append_batch(parse_batch(json.loads(json.dumps(body))))
        except LedgerError as e:
            return status_of(e), dict(error_answer(e))
        return (201 if result.appended else 200), append_answer(result)

    return post


def main() -> None:
    """One client process: wait for the start file, run, write the log as JSON."""
    p = argparse.ArgumentParser()
    p.add_argument("client", type=int)
    p.add_argument("target", type=int)
    p.add_argument("out")
    p.add_argument("--url")
    p.add_argument("--db")
    p.add_argument("--token", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-batch", type=int, default=50)
    p.add_argument("--go", help="start when this file exists")
    a = p.parse_args()
    post = http_post(a.url, a.token) if a.url else direct_post(a.db)
    if a.go:
        while not Path(a.go).exists():
            time.sleep(0.002)
    started = time.monotonic()
    log = run_client(a.client, a.target, post, seed=a.seed, max_batch=a.max_batch)
    result = {"client": a.client, "via": "http" if a.url else "direct", "seconds": time.monotonic() - started}
    Path(a.out).write_text(json.dumps({**result, "log": log}))


if __name__ == "__main__":
    main()

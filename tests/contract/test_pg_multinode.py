"""Two API nodes over one PostgreSQL: concurrent appends through both, nothing lost, SSE across nodes."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from service.ledger import Ledger
from tests.api_fixtures import running_server

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"
TOKEN = "s3cret"
PER_THREAD = 25


def _event(n: int) -> dict[str, object]:
    data = {"arxiv_id": "2509.02480", "source": f"node{n % 7}", "metric": "cited_by_count", "value": n}
    data |= {"source_release": None, "query_url": None}
    return {
        "type": "measurement.observed",
        "observed_at": f"2026-11-01T00:00:{n % 60:02d}.{n:06d}Z",
        "data": data,
    }


def test_two_nodes_one_ledger(pg_url: str, tmp_path: Path) -> None:
    """Two `ledger serve` processes on different ports over one PostgreSQL database."""
    Ledger(pg_url).import_bytes(FIXTURE.read_bytes())
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_SSE_POLL": "0.05"}
    with (
        running_server(pg_url, env=env, args=["--no-samples"], cwd=tmp_path) as node_a,
        running_server(pg_url, env=env, args=["--no-samples"], cwd=tmp_path) as node_b,
    ):
        a, b = node_a.base, node_b.base
        assert a != b
        seen: list[int] = []
        ready = threading.Event()

        def follow() -> None:
            with httpx.stream("GET", a + "/evidence/stream?after=132", timeout=30) as r:
                for line in r.iter_lines():
                    ready.set()
                    if line.startswith("id: "):
                        seen.append(int(line[4:]))
                        if len(seen) == 4 * PER_THREAD:
                            return

        sse = threading.Thread(target=follow, daemon=True)
        sse.start()
        assert ready.wait(10)
        answers: list[dict[str, object]] = []
        lock = threading.Lock()

        per_writer: dict[int, list[int]] = {}

        def write(base: str, first: int) -> None:
            mine = per_writer.setdefault(first, [])
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
                for n in range(first, first + PER_THREAD):
                    r = c.post("/events", json={"events": [_event(n)]})
                    assert r.status_code == 201, r.text
                    with lock:
                        answers.append(r.json()["events"][0])
                    mine.append(int(r.json()["events"][0]["seq"]))

        writers = [
            threading.Thread(target=write, args=(base, i * PER_THREAD)) for i, base in enumerate([a, b, a, b])
        ]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        sse.join(30)
        assert sorted(int(str(x["seq"])) for x in answers) == list(range(133, 133 + 4 * PER_THREAD))
        assert seen == list(range(133, 133 + 4 * PER_THREAD))  # node A streamed node B's appends too
        # each client's acknowledged appends hold seqs in the order it was told of them
        assert all(seqs == sorted(seqs) and len(seqs) == PER_THREAD for seqs in per_writer.values())
        report = httpx.get(b + "/healthz").status_code
        assert report == 200
    ledger = Ledger(pg_url)
    assert ledger.head().seq == 132 + 4 * PER_THREAD
    assert ledger.verify().ok

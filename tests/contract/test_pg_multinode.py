"""Two API nodes over one PostgreSQL: concurrent appends through both, nothing lost, SSE across nodes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ledger.service import Ledger
from tests.api_fixtures import free_port

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"
TOKEN = "s3cret"
PER_THREAD = 25


@contextmanager
def node(url: str) -> Iterator[str]:
    """One API process on a free loopback port over `url` (the app factory `ledger serve` runs)."""
    port = free_port()
    env = {**os.environ, "LEDGER_DB": url, "LEDGER_TOKENS": TOKEN, "LEDGER_SSE_POLL": "0.05"}
    cmd = [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _event(n: int) -> dict[str, object]:
    data = {"arxiv_id": "2509.02480", "source": f"node{n % 7}", "metric": "cited_by_count", "value": n}
    data |= {"source_release": None, "query_url": None}
    return {
        "type": "measurement.observed",
        "observed_at": f"2026-11-01T00:00:{n % 60:02d}.{n:06d}Z",
        "data": data,
    }


def test_two_nodes_one_ledger(pg_url: str) -> None:
    Ledger(pg_url).import_bytes(FIXTURE.read_bytes())
    with node(pg_url) as a, node(pg_url) as b:
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

        def write(base: str, first: int) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
                for n in range(first, first + PER_THREAD):
                    r = c.post("/events", json={"events": [_event(n)]})
                    assert r.status_code == 201, r.text
                    with lock:
                        answers.append(r.json()["events"][0])

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
        report = httpx.get(b + "/healthz").status_code
        assert report == 200
    ledger = Ledger(pg_url)
    assert ledger.head().seq == 132 + 4 * PER_THREAD
    assert ledger.verify().ok

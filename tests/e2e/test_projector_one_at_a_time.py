"""`ledger serve --workers 3`: however the lease moves, no two workers ever run a projector step at the
same time. Each step of every worker is logged with its process and a monotonic clock
(tests/e2e/projector_watch/sitecustomize.py); the worker holding the lease is killed with SIGKILL in the
middle of the projection, and another one takes over once its lease has run out and finishes it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.model.codec import event_to_dict
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.derived.spans import NAME
from ledger.storage.projector import lease_holder
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.waiting import wait_until

TOKEN = "projector-one-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WATCH = Path(__file__).parent / "projector_watch"
P = "2101.00001"
LEASE_S = 2.0


def _events(first: int, n: int) -> list[Any]:
    events: list[Any] = [paper(P, ts(0))] if first == 0 else []
    for i in range(first, first + n):
        citing = f"2201.{i:05d}"
        events += [
            paper(citing, ts(1, i)),
            citation(oid_of(i), citing, ts(2, i), 0),
            resolution(oid_of(i), ts(3, i), cited_arxiv=P),
        ]
    return events


def _steps(watch: Path, killed: int, killed_at_ns: int) -> list[tuple[int, int, int]]:
    """(start, end, pid) of every step logged; the killed worker's unfinished step ends at its kill."""
    open_: dict[int, int] = {}
    out = []
    for line in watch.read_text().splitlines():
        what, pid, at = line.split()
        if what == "start":
            assert int(pid) not in open_, line
            open_[int(pid)] = int(at)
        else:
            out.append((open_.pop(int(pid)), int(at), int(pid)))
    assert set(open_) <= {killed}, f"steps never ended: {open_}"
    out += [(start, killed_at_ns, pid) for pid, start in open_.items()]
    return sorted(out)


@pytest.mark.process
def test_workers_never_run_two_projector_steps_at_once_even_across_a_killed_holder(
    new_db: NewDb, tmp_path: Path
) -> None:
    db = new_db()
    first = Ledger(db, projector_max_lag=1_000_000)
    first.append(_events(0, 200))
    first.close()
    watch = tmp_path / "steps.log"
    env = {
        "LEDGER_TOKENS": TOKEN,
        "LEDGER_PROJECTOR_MAX_LAG": "1000000",  # only the server's projector projects
        "PYTHONPATH": os.pathsep.join(p for p in (str(WATCH), os.environ.get("PYTHONPATH")) if p),
        "PROJECTOR_WATCH": str(watch),
        "PROJECTOR_WATCH_LEASE_S": str(LEASE_S),
        "PROJECTOR_WATCH_STEP": "20",
        "PROJECTOR_WATCH_PAUSE_S": "0.05",
    }
    with running_server(db, env=env, args=["--workers", "3"]) as server:
        reader = Ledger(db, project_on_read=False)
        try:

            def position() -> int:
                return reader.store.spans.projection_position(NAME)

            started = lambda: f"a projector started:\n{server.log()}"  # noqa: E731
            wait_until(lambda: position() > 0, started, 60.0, every=0.01)
            holder = lease_holder(reader.store, SYSTEM_CLOCK.now_us())
            assert holder is not None
            killed = int(holder.split("-")[0])
            os.kill(killed, signal.SIGKILL)  # the holder, in the middle of the projection
            killed_at = time.monotonic_ns()
            at_kill = position()
            more = [event_to_dict(e) for e in _events(200, 40)]
            answer = httpx.post(f"{server.base}/events", json={"events": more}, headers=AUTH, timeout=60)
            assert answer.status_code == 201, answer.text
            head = reader.head().seq

            def done() -> bool:
                positions = [position(), reader.store.search.titles_indexed()]
                return all(p == head for p in positions)

            wait_until(done, lambda: f"projected to {head} after the kill:\n{server.log()}", 90.0)
            assert at_kill < head
            assert lease_holder(reader.store, SYSTEM_CLOCK.now_us()) != holder
        finally:
            reader.close()
    steps = _steps(watch, killed, killed_at)
    takeover_s = (min(s for s, _, pid in steps if pid != killed and s > killed_at) - killed_at) / 1e9
    print({"steps": len(steps), "workers": sorted({pid for *_, pid in steps}), "killed": killed,
           "takeover_after_kill_s": round(takeover_s, 2)})  # fmt: skip
    for (_, end, pid), (start, _, other) in zip(steps, steps[1:], strict=False):
        assert end <= start, f"worker {other} started a step while worker {pid}'s ran"
    workers = {pid for _, _, pid in steps}
    assert killed in workers and len(workers) >= 2, workers
    # the one that took over started after the killed holder's lease ran out
    after = [start for start, _, pid in steps if pid != killed and start > killed_at]
    assert after and min(after) - killed_at >= 0.5 * LEASE_S * 1e9

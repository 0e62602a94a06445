"""`ledger serve --workers 3`: however the lease moves, no two workers ever run the projector at the
same time. Each step of every worker is logged with its process and a monotonic clock, and each batch
with the lease row as its own transaction reads it (tests/e2e/projector_watch/sitecustomize.py). The
worker holding the lease is killed with SIGKILL in the middle of the projection, and another one takes
over once its lease has run out and finishes it; a batch that outlasts the lease hands it over, and
its step writes nothing more. A worker's request that must project (an append past the allowed lag, a
page that projects first) takes the lease or waits for its holder. Every batch is written by the
holder of an unexpired lease, under the lease it checked itself."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from ledger.model.codec import event_to_dict
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.backend import copy_ledger
from ledger.storage.derived.spans import NAME
from ledger.storage.projector import PROJECTIONS, READ_BY_RECORDS, lease_holder, lowest_position
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.factories import cited_by_many
from tests.raw import projected
from tests.waiting import wait_until

TOKEN = "projector-one-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WATCH = Path(__file__).parent / "projector_watch"
P = "2101.00001"
LEASE_S = 2.0
STALL_S = 3.0  # one batch holds its transaction this long: its step outlasts the lease


def _steps(watch: Path, killed: int, killed_at_ns: int) -> list[tuple[int, int, int]]:
    """(start, end, pid) of every step logged; the killed worker's unfinished step ends at its kill."""
    open_: dict[int, int] = {}
    out = []
    for line in watch.read_text().splitlines():
        if line.startswith("batch "):
            continue
        what, pid, at = line.split()
        if what == "start":
            assert int(pid) not in open_, line
            open_[int(pid)] = int(at)
        else:
            out.append((open_.pop(int(pid)), int(at), int(pid)))
    assert set(open_) <= {killed}, f"steps never ended: {open_}"
    out += [(start, killed_at_ns, pid) for pid, start in open_.items()]
    return sorted(out)


Batch = tuple[int, str, int, int, str, str]


def _batches(watch: Path) -> list[Batch]:
    """(pid, holder, expires_us, now_us, projection, checked) of every batch written: the lease row as
    the batch's own transaction read it, and the holder whose lease the batch checked ("-": none)."""
    out = []
    for line in watch.read_text().splitlines():
        if line.startswith("batch "):
            _, pid, _, holder, expires, now, name, mine = line.split()
            out.append((int(pid), holder, int(expires), int(now), name, mine))
    return out


def _under_its_lease(batches: list[Batch]) -> None:
    """Each batch checked the lease the row names (its own worker's), and wrote before it ran out."""
    assert batches
    for pid, holder, expires, now, name, mine in batches:
        assert mine == holder, f"worker {pid} wrote a {name} batch under lease {mine} while {holder} held it"
        assert holder.split("-")[0] == str(pid), f"worker {pid} wrote a {name} batch under {holder}'s lease"
        assert expires >= now, f"worker {pid} wrote a {name} batch {now - expires} us after its lease ran out"


def _env(watch: Path, **more: str) -> dict[str, str]:
    return {
        "LEDGER_TOKENS": TOKEN,
        "LEDGER_PROJECTOR_MAX_LAG": "1000000",  # only the server's projector projects
        "PYTHONPATH": os.pathsep.join(p for p in (str(WATCH), os.environ.get("PYTHONPATH")) if p),
        "PROJECTOR_WATCH": str(watch),
        "PROJECTOR_WATCH_LEASE_S": str(LEASE_S),
        **more,
    }


@pytest.mark.process
def test_workers_never_run_two_projector_steps_at_once_even_across_a_killed_holder(
    new_db: NewDb, tmp_path: Path
) -> None:
    db = new_db()
    first = Ledger(db, projector_max_lag=1_000_000)
    first.append(cited_by_many(P, 0, 200))
    first.close()
    watch = tmp_path / "steps.log"
    env = _env(watch, PROJECTOR_WATCH_STEP="20", PROJECTOR_WATCH_PAUSE_S="0.05")
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
            more = [event_to_dict(e) for e in cited_by_many(P, 200, 40)]
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
    _under_its_lease(_batches(watch))


@pytest.mark.process
def test_a_step_that_outlasts_its_lease_hands_it_over_and_writes_no_batch_after(
    new_db: NewDb, tmp_path: Path
) -> None:
    """The first batch the server writes holds its transaction longer than the lease: the lease cannot
    pass while it runs (taking it needs the projectors' lock), and once it commits the step's next
    batch finds the lease run out or taken and stops, saying so in the log. Every batch is still
    written under its writer's unexpired lease, and the projections end as one projector's."""
    db = new_db()
    first = Ledger(db, projector_max_lag=1_000_000)
    first.append(cited_by_many(P, 0, 200))
    first.close()
    watch = tmp_path / "steps.log"
    env = _env(
        watch, PROJECTOR_WATCH_STEP="100", PROJECTOR_WATCH_STALL_S=str(STALL_S), LEDGER_LOG_FORMAT="json"
    )
    with running_server(db, env=env, args=["--workers", "3"]) as server:
        reader = Ledger(db, project_on_read=False)
        try:
            head = reader.head().seq

            def done() -> bool:
                return all(p.position(reader.store) == head for p in PROJECTIONS)

            wait_until(done, lambda: f"projected to {head}:\n{server.log()}", 90.0)
        finally:
            reader.close()
        lines = [json.loads(x) for x in server.log().splitlines() if x.startswith("{")]
    batches = _batches(watch)
    stalled = batches[0][0]
    lost = [x for x in lines if x.get("projector") == "lease_lost"]
    outside = [b for b in batches if b[5] != b[1] or b[1].split("-")[0] != str(b[0]) or b[2] < b[3]]
    print({"batches": len(batches), "workers": sorted({b[0] for b in batches}), "stalled": stalled,
           "outside_its_lease": [(b[0], b[4], b[3] - b[2]) for b in outside],
           "lost": [(x["pid"], x["why"], x["projection"]) for x in lost]})  # fmt: skip
    _under_its_lease(batches)
    assert lost and lost[0]["pid"] == stalled, lost
    assert lost[0]["projection"] == "work_keys" and lost[0]["level"] == "warning"
    ref = new_db("one.db")
    source, target = Ledger(db), Ledger(ref)
    try:
        copy_ledger(source.store, target.store)
        target.ops.project(PROJECTIONS)
        assert projected(db) == projected(ref)
    finally:
        source.close()
        target.close()


MAX_LAG = 30


@pytest.mark.process
def test_a_workers_back_pressure_and_a_page_that_projects_first_project_only_under_the_lease(
    new_db: NewDb, tmp_path: Path
) -> None:
    """Appends past the allowed lag and record pages (which bring the spans to the head first) sent to
    three workers while the server's projector works in slow steps: each request either projects
    under the lease it took or waits for the holder, so every batch is its writer's own leased one,
    and each append still returns with the projections within the lag."""
    db = new_db()
    first = Ledger(db, projector_max_lag=1_000_000)
    first.append(cited_by_many(P, 0, 100))
    first.close()
    watch = tmp_path / "steps.log"
    env = {
        **_env(watch, PROJECTOR_WATCH_STEP="20", PROJECTOR_WATCH_PAUSE_S="0.05"),
        "LEDGER_PROJECTOR_MAX_LAG": str(MAX_LAG),
    }
    lags = []
    with running_server(db, env=env, args=["--workers", "3"]) as server:
        reader = Ledger(db, project_on_read=False)
        try:
            with httpx.Client(base_url=server.base, timeout=120) as client:
                for i in range(8):
                    more = [event_to_dict(e) for e in cited_by_many(P, 100 + 20 * i, 20)]
                    answer = client.post("/events", json={"events": more}, headers=AUTH)
                    assert answer.status_code == 201, answer.text
                    lags.append(reader.head().seq - lowest_position(reader.store, READ_BY_RECORDS))
                    page = client.get(f"/paper/{P}/citation-record")
                    assert page.status_code == 200, page.text
            head = reader.head().seq
            assert lowest_position(reader.store, READ_BY_RECORDS) == head  # the last page projected all
        finally:
            reader.close()
    batches = _batches(watch)
    unleased = [b for b in batches if b[5] != b[1]]
    print({"batches": len(batches), "writers": sorted({b[0] for b in batches}),
           "leases": len({b[5] for b in batches}), "lag_after_each_append": lags,
           "outside_its_lease": len(unleased),
           "first": [(b[0], b[4], b[1], b[5]) for b in unleased[:2]]})  # fmt: skip
    assert all(lag <= MAX_LAG for lag in lags), lags
    _under_its_lease(batches)

"""A server worker's request that must project (an append past the allowed lag, a read that brings the
spans to the head first) projects only under the projector's lease: it waits while another worker
holds it, takes it once it runs out (a dead holder), and gives up waiting on a holder that makes no
progress. A ledger with no server (the CLI) never waits on a lease (both backends; the lease's clock
is a test clock moved by hand)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from ledger.model.facts import Head
from ledger.storage.interface import Store
from ledger.storage.projector import (
    PROJECTIONS,
    READ_BY_RECORDS,
    lease_holder,
    lowest_position,
    take_lease,
)
from service.ledger import Ledger
from service.ops import projector as runner_module
from service.ops.projector import project_leased, run_projector
from tests.conftest import NewDb
from tests.factories import Clock, cited_by_many
from tests.waiting import pause, wait_until

TTL = 30_000_000  # a lease's length, in the test clock's microseconds
P = "2101.00001"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def worker(new_db: NewDb, clock: Clock) -> Iterator[Ledger]:
    """A server worker's ledger: its requests project under the lease; lag allowed: 5 events."""
    led = Ledger(new_db(), projector_max_lag=5, projector_lease=True, clock=clock)
    try:
        yield led
    finally:
        led.close()


def _projected(led: Ledger) -> int:
    return lowest_position(led.store, READ_BY_RECORDS)


def test_an_append_past_the_lag_waits_while_another_worker_holds_the_lease_and_takes_it_when_it_runs_out(
    worker: Ledger, clock: Clock
) -> None:
    """Another worker holds the lease and died (it never renews): the append past the lag writes no
    batch while that lease lasts, then takes it once it has run out, projects, and gives it up."""
    assert take_lease(worker.store, "dead-worker", clock.now_us(), TTL)
    appended = threading.Thread(target=worker.append, args=(cited_by_many(P, 0, 10),))
    appended.start()
    try:
        wait_until(lambda: worker.head().seq > 0, "the append committed", 10.0, every=0.01)
        pause(0.3)  # the window in which a batch written without the lease would show
        assert appended.is_alive()
        assert _projected(worker) == 0
    finally:
        clock.advance(TTL + 1)  # the dead worker's lease runs out
        appended.join(30)
    assert not appended.is_alive()
    assert _projected(worker) == worker.head().seq
    assert lease_holder(worker.store, clock.now_us()) is None  # run out: the next one takes it at once


def test_a_read_that_projects_first_takes_a_free_lease_and_lets_it_run_out(
    worker: Ledger, clock: Clock
) -> None:
    """No worker holds the lease: the page's request takes it, projects to the head, lets it run out."""
    quiet = Ledger(worker.url, projector_max_lag=1_000_000)
    try:
        quiet.append(cited_by_many(P, 0, 4))
    finally:
        quiet.close()
    view = worker.records.timeline_and_record(P)
    assert view.head.seq == worker.head().seq
    assert _projected(worker) == worker.head().seq
    assert lease_holder(worker.store, clock.now_us()) is None


def test_a_request_stops_waiting_on_a_holder_that_makes_no_progress(
    worker: Ledger, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """The holder's lease stays unexpired (the clock stands still) but no projection moves: after two
    lease lengths of the request's own (0.1 s here) it goes on without them and says so."""
    quiet = Ledger(worker.url, projector_max_lag=1_000_000)
    try:
        quiet.append(cited_by_many(P, 0, 4))
    finally:
        quiet.close()
    assert take_lease(worker.store, "stuck-worker", clock.now_us(), TTL)
    head = worker.head().seq
    with caplog.at_level(logging.WARNING, logger="ledger.projector"):
        got = project_leased(worker.store, READ_BY_RECORDS, head, 0, clock=clock, lease_s=0.05, poll_s=0.01)
    assert got is False
    assert _projected(worker) == 0
    assert "projections stuck at 0" in caplog.text


def test_the_cli_never_waits_on_the_lease(new_db: NewDb, clock: Clock) -> None:
    """A ledger with no server (no lease) projects the lag itself even while a lease is held."""
    cli = Ledger(new_db(), projector_max_lag=5, clock=clock)
    try:
        assert take_lease(cli.store, "a-server-worker", clock.now_us(), 10**15)
        cli.append(cited_by_many(P, 0, 10))
        assert _projected(cli) == cli.head().seq
    finally:
        cli.close()


def test_the_servers_projector_lets_its_lease_run_out_once_caught_up(new_db: NewDb) -> None:
    """The runner that brought every projection to the head lets its lease run out until its next look
    (the row still names it), so a request that must project takes it at once rather than wait."""
    clock = Clock()
    led = Ledger(new_db(), projector_max_lag=1_000_000, clock=clock)
    led.append(cited_by_many(P, 0, 10))
    stop = threading.Event()
    runner = threading.Thread(
        target=run_projector,
        args=(Ledger(led.url).store, stop),
        kwargs={"holder": "runner", "poll_s": 60.0, "clock": clock},
    )
    runner.start()
    try:
        wait_until(lambda: _projected(led) == led.head().seq, "the runner caught up", 30.0, every=0.01)
        wait_until(lambda: lease_holder(led.store, clock.now_us()) is None, "the lease run out", 5.0)
        assert lease_holder(led.store, 0) == "runner"  # the last holder, named
        assert runner.is_alive()  # still running, waiting for its next look
        assert take_lease(led.store, "a-request", clock.now_us(), TTL)
    finally:
        stop.set()
        runner.join(30)
        led.close()


def test_an_idle_servers_projector_takes_no_lease(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every projection at the head, the runner's looks are reads: taking the lease is a write
    transaction (and on SQLite a sync), so an idle server would write twice a poll a worker."""
    clock = Clock()
    led = Ledger(new_db(), projector_max_lag=1_000_000, clock=clock)
    led.append(cited_by_many(P, 0, 3))
    led.ops.project(PROJECTIONS)

    taken: list[str] = []

    def counting(store: Store, holder: str, now_us: int, ttl_us: int) -> bool:
        taken.append(holder)
        return take_lease(led.store, holder, now_us, ttl_us)

    monkeypatch.setattr(runner_module, "take_lease", counting)
    # each look at the log reads the head first: count the looks by that
    runner_store = Ledger(led.url).store
    looks = threading.Semaphore(0)
    real_head = runner_store.head

    def looking() -> Head:
        looks.release()
        return real_head()

    monkeypatch.setattr(runner_store, "head", looking)
    stop = threading.Event()
    runner = threading.Thread(
        target=run_projector,
        args=(runner_store, stop),
        kwargs={"holder": "runner", "poll_s": 0.01, "clock": clock},
    )
    runner.start()
    try:
        for _ in range(5):
            assert looks.acquire(timeout=30)
        assert taken == []
        led.append(cited_by_many(P, 3, 1))  # something to project: the next look takes the lease
        wait_until(lambda: _projected(led) == led.head().seq, "the runner caught up", 30.0, every=0.01)
        assert taken[:1] == ["runner"]
    finally:
        stop.set()
        runner.join(30)
        led.close()

"""The server's projector writes only under its lease: every batch checks and renews it in its own
transaction, so a step that outlasted its lease (another worker took over, or the lease ran out) stops
before its next write, a long healthy step keeps it, and the projections end as one projector's (both
backends). The lease's clock is a test clock moved by hand."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator, Sequence

import pytest

from ledger.storage.interface import Store
from ledger.storage.projector import (
    CHECK_WORKS_PROJECTION,
    PROJECTIONS,
    SCREEN,
    SPAN_PROJECTION,
    TITLES,
    WORK_KEYS_PROJECTION,
    Lease,
    LeaseLost,
    Projection,
    lease_holder,
    release_lease,
    take_lease,
)
from ledger.storage.verify import verify_store
from service.ledger import Ledger
from service.ops.projector import project_step, run_projector
from tests.conftest import NewDb
from tests.factories import Clock
from tests.raw import PROJECTED_TABLES, projected, rows
from tests.screen_scenario import seeded_ledger

TTL = 30_000_000  # the lease's length, in the test clock's microseconds
LOGGED = (SPAN_PROJECTION, WORK_KEYS_PROJECTION, CHECK_WORKS_PROJECTION, SCREEN)


@pytest.fixture
def one_projector(new_db: NewDb) -> dict[str, list[tuple[object, ...]]]:
    """The tables of the scenario projected by one projector in one go (another ledger)."""
    ref, _ = seeded_ledger(new_db("one.db"))
    try:
        ref.ops.project(PROJECTIONS)
        return projected(ref.url)
    finally:
        ref.close()


@pytest.fixture
def ledger(new_db: NewDb) -> Iterator[Ledger]:
    """The screen scenario (19 events: references, checks with notices, a re-resolution), unprojected."""
    led, _ = seeded_ledger(new_db())
    try:
        yield led
    finally:
        led.close()


def _positions(store: Store, projections: Sequence[Projection] = LOGGED) -> dict[str, int]:
    return {p.name: p.position(store) for p in projections}


class _TakenOver:
    """A projection in name only, run between two real ones of a step: there the step has outlasted its
    lease (the clock moves past it) and another worker takes the lease, as it would between two
    batches of a long step. Then the server is asked to stop, so the step's own loop ends after it."""

    name = "taken-over"

    def __init__(self, rival: Store, clock: Clock, stop: threading.Event) -> None:
        self.rival, self.clock, self.stop = rival, clock, stop
        self.at: dict[str, int] | None = None

    def position(self, store: Store) -> int:
        return 0

    def advance(self, store: Store, upto: int, batch: int = 0, lease: Lease | None = None) -> int:
        if self.at is None:
            self.clock.advance(TTL + 1)
            assert take_lease(self.rival, "worker-b", self.clock.now_us(), TTL)
            self.at = _positions(store)
            self.stop.set()
        return upto


def test_a_step_that_lost_its_lease_writes_no_batch_after_and_the_next_holder_ends_as_one(
    ledger: Ledger, one_projector: dict[str, list[tuple[object, ...]]], caplog: pytest.LogCaptureFixture
) -> None:
    """The server's loop (run_projector) of worker A: its step projects the spans, outlasts its lease,
    worker B takes it; A writes no batch of the projections left in its step, says so in its log, and
    B's steps bring every projection to where one projector in one go brings it."""
    clock = Clock(1_000_000_000)
    rival = Ledger(ledger.url).store
    stop = threading.Event()
    taken = _TakenOver(rival, clock, stop)
    head = ledger.head().seq
    try:
        with caplog.at_level(logging.WARNING, logger="ledger.projector"):
            run_projector(
                Ledger(ledger.url).store,
                stop,
                holder="worker-a",
                poll_s=0.01,
                lease_s=TTL / 1e6,
                clock=clock,
                projections=(SPAN_PROJECTION, taken, WORK_KEYS_PROJECTION, CHECK_WORKS_PROJECTION, SCREEN),
            )
        assert taken.at == {SPAN_PROJECTION.name: head, WORK_KEYS_PROJECTION.name: 0,
                            CHECK_WORKS_PROJECTION.name: 0, SCREEN.name: 0}  # fmt: skip
        # nothing written by A once B held the lease
        assert _positions(ledger.store) == taken.at
        assert rows(ledger.url, PROJECTED_TABLES["screen_refs"]) == []
        assert lease_holder(ledger.store, clock.now_us()) == "worker-b"
        lost = [r for r in caplog.records if "lease" in r.getMessage()]
        assert [r.levelno for r in lost] == [logging.WARNING], caplog.text
        assert "worker-a: lease taken by worker-b" in lost[0].getMessage()
        assert "work_keys" in lost[0].getMessage()
        b = Lease("worker-b", TTL, clock)
        while project_step(rival, PROJECTIONS, b):
            pass
        assert _positions(ledger.store, PROJECTIONS) == {p.name: head for p in PROJECTIONS}
        assert projected(ledger.url) == one_projector
        assert verify_store(ledger.store).ok
    finally:
        rival.close()


def test_a_batch_after_the_lease_ran_out_is_not_written(
    ledger: Ledger, one_projector: dict[str, list[tuple[object, ...]]]
) -> None:
    """The lease runs out during the first batch (the clock moves past it): the batch was begun under
    the lease and stays; the next one finds it expired and writes nothing; a new lease finishes."""
    clock = Clock(1_000_000_000)
    store = ledger.store
    assert take_lease(store, "worker-a", clock.now_us(), TTL)

    def outlast(end: int) -> None:
        clock.advance(TTL + 1)

    slow = dataclasses.replace(SPAN_PROJECTION, fault=outlast)
    head = ledger.head().seq
    with pytest.raises(LeaseLost, match="worker-a: lease expired 1 us ago.*inbound_spans"):
        slow.advance(store, head, batch=3, lease=Lease("worker-a", TTL, clock))
    assert SPAN_PROJECTION.position(store) == 3
    assert lease_holder(store, clock.now_us()) is None
    assert take_lease(store, "worker-a", clock.now_us(), TTL)
    for p in LOGGED:
        assert p.advance(store, head, batch=3, lease=Lease("worker-a", TTL, clock)) == head
    assert projected(ledger.url) == one_projector
    assert verify_store(store).ok


def test_each_batch_renews_the_lease_so_a_long_healthy_step_keeps_it(ledger: Ledger) -> None:
    """Each batch of the step takes 0.6 of the lease's length, 7 batches: four lease lengths in all,
    and the step's holder still holds the lease at the end, renewed by its last batch."""
    clock = Clock(1_000_000_000)
    store = ledger.store
    assert take_lease(store, "worker-a", clock.now_us(), TTL)
    batches = [0]

    def work(end: int) -> None:
        batches[0] += 1
        clock.advance(TTL * 6 // 10)

    head = ledger.head().seq
    long_step = dataclasses.replace(SPAN_PROJECTION, fault=work)
    assert long_step.advance(store, head, batch=3, lease=Lease("worker-a", TTL, clock)) == head
    assert batches[0] == 7 and clock.now_us() - 1_000_000_000 > 4 * TTL
    assert lease_holder(store, clock.now_us()) == "worker-a"
    assert not take_lease(store, "worker-b", clock.now_us(), TTL)


@pytest.mark.parametrize("how", ["taken", "expired", "released"])
def test_a_cursor_projection_is_not_driven_without_the_lease(ledger: Ledger, how: str) -> None:
    """The title search and the catalogue keep their own cursors (any reader extends them): the step
    checks the lease before it drives them."""
    clock = Clock(1_000_000_000)
    store = ledger.store
    assert take_lease(store, "worker-a", clock.now_us(), TTL)
    if how == "taken":
        clock.advance(TTL + 1)
        assert take_lease(store, "worker-b", clock.now_us(), TTL)
    elif how == "expired":
        clock.advance(TTL + 1)
    else:
        release_lease(store, "worker-a")
    with pytest.raises(LeaseLost, match=f"worker-a: lease {how}.*search_titles"):
        TITLES.advance(store, ledger.head().seq, lease=Lease("worker-a", TTL, clock))
    assert TITLES.position(store) == 0

"""Group commit: many threads, shared transactions, each batch atomic and acknowledged once committed."""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

import pytest

from ledger.model.errors import Conflict, InvalidEvent
from ledger.model.instants import SYSTEM_CLOCK
from service.ledger import Ledger
from tests.factories import measurement, paper, run_threads, ts

if TYPE_CHECKING:
    from tests.conftest import NewDb


def test_threads_share_transactions_and_lose_nothing(new_db: NewDb) -> None:
    ledger = Ledger(new_db("g.db"), group_commit=True)
    ledger.append([paper("2101.00001", ts(0))])
    acked: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        for i in range(50):
            try:
                r = ledger.append([measurement("2101.00001", ts(1 + k, i), i, source=f"s{k}")])
                with lock:
                    acked.extend(item.seq for item in r.items)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

    run_threads(*(functools.partial(worker, k) for k in range(8)))
    assert not errors
    assert sorted(acked) == list(range(2, 402))
    assert ledger.verify().ok
    ledger.close()


def test_a_refused_batch_does_not_sink_its_group(new_db: NewDb) -> None:
    ledger = Ledger(new_db("g.db"), group_commit=True)
    ledger.append([paper("2101.00001", ts(0))])
    results: dict[str, object] = {}
    barrier = threading.Barrier(3)

    def good() -> None:
        barrier.wait()
        results["good"] = ledger.append([measurement("2101.00001", ts(5), 1)])

    def conflicting() -> None:
        barrier.wait()
        try:
            ledger.append([measurement("2101.00001", ts(6), 2)], {"paper:2101.00001": 99})
        except Conflict as e:
            results["conflict"] = e

    def invalid() -> None:
        barrier.wait()
        try:
            ledger.append([measurement("2101.00001", ts(7), 3), measurement("bad", ts(8), 4)])
        except InvalidEvent as e:
            results["invalid"] = e

    run_threads(good, conflicting, invalid)
    assert isinstance(results["conflict"], Conflict)
    assert isinstance(results["invalid"], InvalidEvent)
    assert ledger.head().seq == 2  # the paper and the one good measurement, nothing of the others
    assert [e.type for e in ledger.store.read_log()] == ["paper.observed", "measurement.observed"]
    ledger.close()


@pytest.mark.parametrize("group_commit", [False, True])
def test_same_answers_with_and_without_group_commit(new_db: NewDb, group_commit: bool) -> None:
    ledger = Ledger(new_db(f"g{group_commit}.db"), group_commit=group_commit)
    first = ledger.append([paper("2101.00001", ts(0)), measurement("2101.00001", ts(1), 1)])
    again = ledger.append([paper("2101.00001", ts(0))])
    assert [i.seq for i in first.items] == [1, 2]
    assert again.duplicates == 1 and again.items[0].seq == 1
    ledger.close()


def test_a_batch_failing_after_its_inserts_is_rolled_back_alone(new_db: NewDb) -> None:
    """The savepoint undoes rows a failing batch had already inserted; its neighbours commit."""
    from ledger.storage.append import append_batch
    from ledger.storage.group_commit import GroupCommitter

    ledger = Ledger(new_db("g.db"))
    committer = GroupCommitter(ledger.store)
    barrier = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def failing_job(tx):  # type: ignore[no-untyped-def]
        append_batch(tx, [paper("2101.00009", ts(9))], clock=SYSTEM_CLOCK)
        raise RuntimeError("disk said no")

    def run_failing() -> None:
        barrier.wait()
        try:
            committer.submit(failing_job)
        except RuntimeError as e:
            outcome["failed"] = e

    def run_good() -> None:
        barrier.wait()
        outcome["good"] = committer.submit(
            lambda tx: append_batch(tx, [paper("2101.00001", ts(0))], clock=SYSTEM_CLOCK)
        )

    run_threads(run_failing, run_good)
    committer.close()
    assert isinstance(outcome["failed"], RuntimeError)
    assert [e.stream for e in ledger.store.read_log()] == ["paper:2101.00001"]
    assert ledger.verify().ok


class _CountingTx:
    """An append transaction over a real one that counts the lookups reaching it."""

    def __init__(self, tx: object) -> None:
        self.tx = tx
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> object:
        method = getattr(self.tx, name)

        def counted(*args: object) -> object:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args)

        return counted


def test_a_group_looks_up_every_batchs_ids_observations_and_streams_at_once(new_db: NewDb) -> None:
    from ledger.model.events import Event
    from ledger.storage.append import append_batch, needs_of
    from ledger.storage.group_tx import group
    from tests.factories import citation, oid_of, resolution

    ledger = Ledger(new_db("g.db"))
    ledger.append([paper("2101.00001", ts(0)), citation(oid_of(1), "2101.00001", ts(1))])
    batches: list[list[Event]] = [
        [measurement("2101.00001", ts(2), 1)],
        [citation(oid_of(2), "2101.00001", ts(3)), resolution(oid_of(1), ts(4), cited_arxiv="2101.00002")],
        [paper("2101.00001", ts(0))],  # a duplicate of a stored event, found by the group's lookup
        [resolution(oid_of(2), ts(5), "unresolved")],  # its citation staged by a batch before it
    ]
    with ledger.store.write() as tx:
        counting = _CountingTx(tx)
        with group(counting) as gtx:  # type: ignore[arg-type]
            gtx.prefetch([needs_of(b) for b in batches])
            jobs = [functools.partial(append_batch, events=b, clock=SYSTEM_CLOCK) for b in batches]
            results = [gtx.run(job) for job in jobs]
    assert counting.calls == {"existing": 1, "citing_papers": 1, "stream_versions": 1, "head": 1, "insert": 1}
    assert [r.appended for r in results] == [1, 2, 0, 1] and results[2].items[0].seq == 1
    assert ledger.verify().ok


@pytest.mark.parametrize("group_commit", [True, False])
def test_the_observer_is_told_each_transactions_batches_and_time(new_db: NewDb, group_commit: bool) -> None:
    ledger = Ledger(new_db("g.db"), group_commit=group_commit)
    seen: list[tuple[int, float]] = []
    lock = threading.Lock()

    def observe(batches: int, seconds: float) -> None:
        with lock:
            seen.append((batches, seconds))

    ledger.intake.on_group_commit(observe)
    ledger.append([paper("2101.00001", ts(0))])

    def worker(k: int) -> None:
        for i in range(10):
            ledger.append([measurement("2101.00001", ts(1 + k, i), i, source=f"s{k}")])

    run_threads(*(functools.partial(worker, k) for k in range(4)))
    assert sum(b for b, _ in seen) == 41  # every append, in one transaction or another
    assert all(b >= 1 and s >= 0 for b, s in seen)
    if not group_commit:
        assert len(seen) == 41
    ledger.close()


def test_an_observer_that_fails_leaves_the_writer_running(new_db: NewDb) -> None:
    ledger = Ledger(new_db("g.db"), group_commit=True)

    def broken(batches: int, seconds: float) -> None:
        raise RuntimeError("observer bug")

    ledger.intake.on_group_commit(broken)
    first = ledger.append([paper("2101.00001", ts(0))])
    second = ledger.append([measurement("2101.00001", ts(1), 1)])
    assert (first.head.seq, second.head.seq) == (1, 2)
    ledger.close()

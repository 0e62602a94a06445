"""Bounds on resolving, shared by every process over one ledger (service/resolver/bounds.py, jobs.py): the
slots of the resolves running now, each token's budget of references, and jobs keyed by owner and kind.
Two Ledgers over one database stand for two server processes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from service.ledger import Ledger
from service.resolver import bounds, jobs
from service.resolver.bounds import Busy, Gate, Lease, Limits, OverBudget, admit, over_budget
from service.resolver.run import Summary
from tests.conftest import NewDb
from tests.factories import Clock

A, B = "a" * 64, "b" * 64
ALL = {"all": True, "dry_run": False}
DRY = {"all": True, "dry_run": True}


def test_at_most_the_slots_run_across_processes_and_a_freed_one_is_taken_again(new_db: NewDb) -> None:
    db = new_db()
    one, other = Ledger(db), Ledger(db)
    first = Lease(one, A, 2)
    second = Lease(other, B, 2)
    with pytest.raises(Busy) as refused:
        Lease(one, A, 2)
    assert refused.value.most == 2 and refused.value.retry_after_s > 0
    assert [s[2] for s in other.store.jobs.slots()] == [A, B]
    second.free()
    third = Lease(one, B, 2)
    first.free()
    third.free()
    assert one.store.jobs.slots() == []


def test_a_slot_whose_process_stopped_is_freed_once_stale(new_db: NewDb) -> None:
    """A process killed while holding the only slot stops beating it: past STALE_S another takes it."""
    db, clock = new_db(), Clock()
    Lease(Ledger(db, clock=clock), A, 1)  # never beaten nor freed: its process is gone
    later = Ledger(db, clock=clock)
    clock.advance(round(bounds.STALE_S * 1e6) - 1)
    with pytest.raises(Busy):
        Lease(later, B, 1)
    clock.advance(2)
    Lease(later, B, 1).free()


def test_a_beaten_slot_is_kept_past_the_stale_limit(new_db: NewDb) -> None:
    db, clock = new_db(), Clock()
    ledger = Ledger(db, clock=clock)
    held = Lease(ledger, A, 1, lambda: 42)
    clock.advance(round(bounds.STALE_S * 1e6) * 2)
    ledger.store.jobs.beat_slot(held.holder, clock.now_us(), 42)
    with pytest.raises(Busy):
        Lease(Ledger(db, clock=clock), B, 1)
    assert ledger.store.jobs.slots()[0][4] == 42  # how far its run went


def test_a_budget_admits_within_a_minutes_worth_and_refills_at_its_rate(new_db: NewDb) -> None:
    """60 a minute: one reference costs a second; a minute's worth is saved up."""
    db, clock = new_db(), Clock()
    ledger = Ledger(db, clock=clock)
    limits = Limits(at_once=2, per_minute=60)
    gate = Gate(ledger, A, 60, pace=False)
    gate.spend(60)  # a minute's worth: still within it
    admit(ledger, A, limits)
    gate.spend(30)  # a request runs whole, into debt
    assert gate.examined == 90
    with pytest.raises(OverBudget) as refused:
        admit(ledger, A, limits)
    assert refused.value.retry_after_s == pytest.approx(30)
    admit(Ledger(db, clock=clock), B, limits)  # another token's budget is its own
    clock.advance(29_000_000)
    assert over_budget(Ledger(db, clock=clock), A, 60) == pytest.approx(1)  # every process sees it
    clock.advance(1_000_001)
    admit(ledger, A, limits)  # never refused for ever
    assert over_budget(ledger, A, 0) == 0  # no budget, no debt


def test_a_pacing_gate_waits_out_its_debt_before_it_goes_on(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, clock = new_db(), Clock()
    ledger = Ledger(db, clock=clock)
    Gate(ledger, A, 60, pace=False).spend(90)  # 30 s in debt
    paced = Gate(ledger, A, 60, pace=True)
    waited: list[float] = []

    def wait(seconds: float) -> bool:
        waited.append(seconds)
        clock.advance(round(seconds * 1e6))
        return False

    monkeypatch.setattr(paced.cancel, "wait", wait)
    paced.spend(10)
    assert waited == [pytest.approx(30)] and paced.examined == 10
    paced.cancel.set()
    with pytest.raises(bounds.Cancelled):
        paced.spend(1)


def test_a_paced_gate_gives_its_slot_up_while_it_waits_and_takes_one_again(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job waiting for its token's budget holds no slot: another run takes the one slot meanwhile,
    and the job goes on once a slot is free again."""
    db, clock = new_db(), Clock()
    ledger = Ledger(db, clock=clock)
    Gate(ledger, A, 60, pace=False).spend(90)  # 30 s in debt
    paced = Gate(ledger, A, 60, pace=True)
    paced.lease = Lease(ledger, A, 1)
    other: list[Lease] = []

    def wait(seconds: float) -> bool:
        if not other:  # while the job waits for its budget, its slot is free for another
            other.append(Lease(Ledger(db, clock=clock), B, 1))
            clock.advance(round(seconds * 1e6))
        else:  # the job waits for a slot again: the other run ends
            other[0].free()
        return False

    monkeypatch.setattr(paced.cancel, "wait", wait)
    paced.spend(10)
    assert len(other) == 1 and paced.examined == 10
    assert [s[2] for s in ledger.store.jobs.slots()] == [A]  # the job holds the slot again
    paced.lease.free()


def test_a_dry_run_job_is_never_handed_to_a_real_run_nor_one_tokens_job_to_another(new_db: NewDb) -> None:
    db = new_db()
    started: list[Any] = []
    one, other = jobs.Jobs(Ledger(db), spawn=started.append), jobs.Jobs(Ledger(db), spawn=started.append)
    dry, made = one.start(lambda: Summary(examined=1, dry_run=True), A, DRY, appends=False)
    real, also = other.start(lambda: Summary(examined=1), B, ALL)
    assert (made, also) == ("new", "new") and real.id != dry.id
    assert (dry.dry_run, real.dry_run) == (True, False)
    # the same token asking for the same run gets it; another token's run that appends is busy
    assert other.start(lambda: Summary(), B, ALL)[0].id == real.id
    theirs, busy = one.start(lambda: Summary(), A, ALL)
    assert busy == "busy" and len(started) == 2
    # a token sees only its own jobs
    assert one.get(dry.id, A) is not None and one.get(dry.id, B) is None
    assert other.get(real.id, A) is None and other.get(real.id, B) is not None


def test_a_job_holds_a_slot_while_it_runs_and_none_is_taken_for_a_job_already_running(
    new_db: NewDb,
) -> None:
    db = new_db()
    ledger = Ledger(db)
    started: list[Any] = []
    runner = jobs.Jobs(ledger, spawn=started.append)
    leases: list[Lease] = []

    def lease() -> Lease:
        leases.append(Lease(ledger, A, 1))
        return leases[-1]

    job, _ = runner.start(lambda: Summary(), A, DRY, appends=False, lease=lease)
    assert len(ledger.store.jobs.slots()) == 1
    assert runner.start(lambda: Summary(), A, DRY, appends=False, lease=lease)[0].id == job.id
    with pytest.raises(Busy):  # another kind of run needs a slot, and the one slot is held
        runner.start(lambda: Summary(), A, ALL, lease=lease)
    started.pop()()
    assert ledger.store.jobs.slots() == [] and len(leases) == 1
    polled = runner.get(job.id, A)
    assert polled is not None and polled.state == "done"


def test_slots_taken_at_once_from_many_processes_never_pass_the_most(new_db: NewDb) -> None:
    """Sixteen runs asking at once, each through a Ledger of its own: two slots, two taken."""
    db = new_db()
    ledgers = [Ledger(db) for _ in range(16)]
    start = threading.Barrier(len(ledgers))
    taken: list[Lease] = []
    refused: list[Busy] = []

    def ask(ledger: Ledger) -> None:
        start.wait()
        try:
            taken.append(Lease(ledger, A, 2))
        except Busy as e:
            refused.append(e)

    threads = [threading.Thread(target=ask, args=(ledger,)) for ledger in ledgers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(taken), len(refused)) == (2, 14)
    assert sorted(s[0] for s in ledgers[0].store.jobs.slots()) == [0, 1]
    for lease in taken:
        lease.free()
    for ledger in ledgers:
        ledger.close()

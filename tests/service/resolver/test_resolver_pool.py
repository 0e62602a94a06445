"""Deciding on worker processes (service/resolver/pool.py) gives the decisions one process gives, and
the flow still appends them in the order it selected them, on either backend."""

from __future__ import annotations

import io
import multiprocessing
import os
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pytest

from ledger.model.codec import decode_data
from service.ledger import Ledger
from service.resolver import pool, run
from service.resolver.defaults import Resolver, default_resolver
from service.resolver.run import Summary, resolve
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works
from tests.conftest import NewDb
from tests.eval_slice import AT, citations, tune_references, works_slice

WORKS = 1_500
REFS = 360


@pytest.fixture
def ledger(new_db: NewDb) -> Ledger:
    works, dois = works_slice(WORKS)
    led = Ledger(new_db("pool.db"))
    ingest_works(led, SourceFile(NAME, io.BytesIO(works), AT))
    led.append(citations(tune_references(dois, REFS), per_paper=40))
    return led


def _answers(s: Summary) -> list[tuple[Any, ...]]:
    return [(c.observation_id, c.after, c.event.data.cited_work, c.event.data.evidence) for c in s.changes]


@pytest.mark.process  # worker processes
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_workers_decide_as_one_process_does(
    ledger: Ledger, start: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "BATCH", 50)  # several batches in flight at once
    monkeypatch.setattr(pool, "start_context", lambda: multiprocessing.get_context(start))
    r = default_resolver()
    alone = resolve(
        ledger, None, decide=r.decide, catalogue=r.catalogue(ledger), method=r.method, dry_run=True
    )
    with pool.DecidePool(ledger.url, r, workers=2) as workers:
        pooled = resolve(ledger, None, decide=r.decide, catalogue=r.catalogue(ledger), method=r.method,
                         dry_run=True, workers=workers)  # fmt: skip
    assert alone.examined == pooled.examined == REFS
    assert _answers(pooled) == _answers(alone)
    assert {"verified_exact", "verified_fuzzy", "unresolved"} <= set(alone.changed())


@pytest.mark.process
def test_a_run_on_cores_appends_in_the_order_it_selected(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "BATCH", 50)
    s = pool.resolve_on_cores(ledger, None, default_resolver(), dry_run=False)
    log = ledger.store.read_log(type="resolution.observed")
    appended = [decode_data(e.type, e.data).observation_id for e in log]
    assert s.appended == len(appended) > 0
    # each paper's observations in turn, as `pending` selects them, whichever worker decided them
    assert appended == [c.observation_id for c in s.changes]
    assert [e.stream for e in log] == sorted(e.stream for e in log)
    assert len({e.stream for e in log}) > 1
    again = pool.resolve_on_cores(ledger, None, default_resolver(), dry_run=False)
    assert again.appended == 0


def test_a_run_of_less_than_a_batch_starts_no_worker(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    class Refused:
        workers = 2

        def submit(self, refs: Any) -> Any:
            raise AssertionError("a worker was asked")

    r = default_resolver()
    s = resolve(ledger, ["2601.00000"], decide=r.decide, catalogue=r.catalogue(ledger), method=r.method,
                dry_run=True, workers=Refused())  # fmt: skip
    assert s.examined == 40


def _dies_in_a_worker(refs: Any, catalogue: Any) -> Any:
    """The ledger's matcher, except that a worker process asked to use it dies at once (kill -9)."""
    if multiprocessing.parent_process() is not None:
        os._exit(9)
    return default_resolver().decide(refs, catalogue)


@pytest.mark.process
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_run_whose_workers_die_ends_as_one_process_would(
    ledger: Ledger, start: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The batches the dead workers held, and the rest, are decided in the parent: same answers, all
    appended, said once in the log."""
    monkeypatch.setattr(run, "BATCH", 50)
    monkeypatch.setattr(pool, "start_context", lambda: multiprocessing.get_context(start))
    r = default_resolver()
    alone = resolve(
        ledger, None, decide=r.decide, catalogue=r.catalogue(ledger), method=r.method, dry_run=True
    )
    dying = Resolver(_dies_in_a_worker, r.method, r.catalogue)
    catalogue = r.catalogue(ledger)
    here = lambda refs: r.decide(refs, catalogue)  # noqa: E731
    with pool.DecidePool(ledger.url, dying, workers=2, here=here) as workers:
        ended = resolve(ledger, None, decide=r.decide, catalogue=catalogue, method=r.method, dry_run=False,
                        workers=workers)  # fmt: skip
    assert ended.examined == REFS and _answers(ended) == _answers(alone)
    assert ended.appended == len(ledger.store.read_log(type="resolution.observed")) > 0
    assert [m for m in caplog.messages if "worker stopped" in m] == [
        "a resolver worker stopped; the rest of the run is decided in this process"
    ]


@pytest.mark.process
def test_without_a_fallback_a_dead_worker_fails_the_run(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "BATCH", 50)
    r = default_resolver()
    dying = Resolver(_dies_in_a_worker, r.method, r.catalogue)
    with pool.DecidePool(ledger.url, dying, workers=2) as workers, pytest.raises(BrokenProcessPool):
        resolve(ledger, None, decide=r.decide, catalogue=r.catalogue(ledger), method=r.method, dry_run=True,
                workers=workers)  # fmt: skip

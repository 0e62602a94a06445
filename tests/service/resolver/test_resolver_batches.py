"""How a run hands batches to the workers (service/resolver/run.py) and how a worker decides one
(service/resolver/pool.py): full batches, the last shared among the workers, the collector paused."""

from __future__ import annotations

import gc
import io
from collections.abc import Sequence
from concurrent.futures import Future

import pytest

from ledger.model.resolving import Decision, RefInput
from ledger.storage.interface import CatalogueTables
from service.ledger import Ledger
from service.resolver import run
from service.resolver.defaults import default_resolver
from service.resolver.pool import collector_paused
from service.resolver.run import resolve
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works
from tests.conftest import NewDb
from tests.eval_slice import AT, citations, tune_references, works_slice


class Recording:
    """Workers that decide each batch at once, here, and keep its size."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.sizes: list[int] = []
        r = default_resolver()
        self._decide = r.decide
        self.catalogue: CatalogueTables | None = None

    def submit(self, refs: Sequence[RefInput]) -> Future[list[Decision]]:
        self.sizes.append(len(refs))
        f: Future[list[Decision]] = Future()
        assert self.catalogue is not None
        f.set_result(self._decide(refs, self.catalogue))
        return f


@pytest.fixture
def ledger(new_db: NewDb) -> Ledger:
    works, dois = works_slice(300)
    led = Ledger(new_db("batches.db"))
    ingest_works(led, SourceFile(NAME, io.BytesIO(works), AT))
    led.append(citations(tune_references(dois, 130), per_paper=40))
    return led


@pytest.mark.parametrize(
    ("batch", "workers", "sizes"),
    [
        (50, 2, [50, 50, 15, 15]),  # 130: two full batches, the last 30 shared
        (40, 3, [40, 40, 40, 4, 4, 2]),  # the last 10 among three
        (65, 2, [65, 33, 32]),  # a full last batch is shared too
        (200, 2, None),  # less than a batch: decided in the run's own process
    ],
)
def test_the_last_batch_is_shared_among_the_workers(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, batch: int, workers: int, sizes: list[int] | None
) -> None:
    monkeypatch.setattr(run, "BATCH", batch)
    r = default_resolver()
    pool = Recording(workers)
    pool.catalogue = r.catalogue(ledger)
    alone = resolve(ledger, None, decide=r.decide, catalogue=pool.catalogue, method=r.method, dry_run=True)
    pooled = resolve(ledger, None, decide=r.decide, catalogue=pool.catalogue, method=r.method, dry_run=True,
                     workers=pool)  # fmt: skip
    assert pool.sizes == (sizes or [])
    assert pooled.examined == alone.examined == 130
    assert [c.event.data for c in pooled.changes] == [c.event.data for c in alone.changes]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_for_a_batch_and_left_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(ValueError, match="mid-batch"), collector_paused():
            raise ValueError("mid-batch")
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()

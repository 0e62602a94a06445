"""SQLite and PostgreSQL give the resolver the same candidates in the same order, and so the same
decisions (resolver-v1.md: the database returns candidates, code decides, both backends resolve alike),
over a real-shaped slice of the evaluation catalogue and references of its tune split."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from ledger.model.resolving import RefInput
from service.ledger import Ledger
from service.resolver.match import SEARCH_LIMIT, query_text, read, resolve_many
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works
from tests.eval_slice import AT, ref_inputs, tune_references, works_slice
from tests.pg_harness import PgCluster

WORKS = 3_000  # the first works of the catalogue file
REFS = 300  # references of the tune split


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, pg_cluster: PgCluster) -> Iterator[list[Ledger]]:
    """Two ledgers, SQLite and PostgreSQL, holding the same slice of the catalogue at the same seqs."""
    works, _ = works_slice(WORKS)
    ledgers = [Ledger(tmp_path_factory.mktemp("same") / "a.db"), Ledger(pg_cluster.create_db())]
    for ledger in ledgers:
        ingest_works(ledger, SourceFile(NAME, io.BytesIO(works), AT))
    yield ledgers
    for ledger in ledgers:
        ledger.close()


@pytest.fixture(scope="module")
def inputs() -> list[RefInput]:
    _, dois = works_slice(WORKS)
    return ref_inputs(tune_references(dois, REFS))


@pytest.mark.process  # a PostgreSQL server beside SQLite
@pytest.mark.parametrize("limit", [1, SEARCH_LIMIT, 200])
def test_both_backends_list_the_same_candidates_in_the_same_order(
    both: list[Ledger], inputs: list[RefInput], limit: int
) -> None:
    texts = [t for t in (query_text(read(i).view) for i in inputs) if t]
    lite, pg = ([[(w.seq, w.doi) for w in found] for found in led.catalogue.catalogue_search(texts, limit)]
                for led in both)  # fmt: skip
    assert lite == pg
    # the lists are not trivially equal: most texts find works, and some fill the limit
    assert sum(1 for x in lite if x) > len(texts) * 0.9
    assert any(len(x) == limit for x in lite)


@pytest.mark.process
def test_both_backends_resolve_alike(both: list[Ledger], inputs: list[RefInput]) -> None:
    lite, pg = (resolve_many(inputs, led.catalogue) for led in both)
    assert lite == pg
    statuses = {d.status for d in lite}
    assert {"verified_exact", "verified_fuzzy", "unresolved"} <= statuses

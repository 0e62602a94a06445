"""`ledger verify` holds the resolver's catalogue to its events (on the backend under test): each row the
latest work.observed of its DOI or paper.observed of its paper, each word counted by the works that hold
it. Tamper cases are named after the damage; each is found, named, and a clean catalogue passes."""

from __future__ import annotations

import pytest

from service.ledger import Ledger
from tests import raw
from tests.factories import paper, ts
from tests.ledger.storage.test_catalogue_store import GPIPE, ZERO, work

OTHER = "10.5555/other.work"


@pytest.fixture
def ledger(fresh_ledger: Ledger) -> Ledger:
    """Three works (one observed twice: its latest stands) and a paper, the catalogue extended."""
    fresh_ledger.append(
        [
            work(ZERO, ts(1)),
            work(GPIPE, ts(2), title="GPipe: Efficient Training of Giant Nets", authors=("Huang",)),
            work(ZERO, ts(3), title="ZeRO: Memory Optimizations", volume="7"),
            work(OTHER, ts(4), title="Another Work Entirely", authors=("Other",)),
            paper("2101.00001", ts(5), title="A paper the ledger holds"),
        ]
    )
    fresh_ledger.catalogue  # noqa: B018 - extended to the head
    return fresh_ledger


def test_a_catalogue_made_by_its_events_verifies(ledger: Ledger) -> None:
    assert ledger.store.catalogue.catalogue_check() is None
    assert ledger.verify().ok


def test_a_catalogue_behind_its_events_verifies_as_far_as_it_goes(ledger: Ledger) -> None:
    ledger.append([work("10.5555/later", ts(6), title="Later")])  # not yet extended to
    assert ledger.store.catalogue.catalogue_indexed() < ledger.head().seq
    assert ledger.verify().ok


TAMPERS = [
    pytest.param(
        f"DELETE FROM catalogue_works WHERE ident = 'doi:{GPIPE}'",
        f"no row for doi:{GPIPE}, which seq 2 gives (row removed)",
        id="row-removed",
    ),
    pytest.param(
        f"UPDATE catalogue_works SET title = 'Not what was observed' WHERE ident = 'doi:{OTHER}'",
        f"row for doi:{OTHER} is not the one seq 4 gives (row altered)",
        id="row-altered",
    ),
    pytest.param(
        # the row of the older observation of ZeRO put back in place of the latest
        f"UPDATE catalogue_works SET seq = 1 WHERE ident = 'doi:{ZERO}'",
        f"row for doi:{ZERO} is not the one seq 3 gives (row altered)",
        id="older-observation-restored",
    ),
    pytest.param(
        "INSERT INTO catalogue_works SELECT 'doi:10.5555/zz-invented', 999, observed_at, observed_us, "
        "source, '10.5555/zz-invented', arxiv_id, doi_key, arxiv_key, title, authors, container, year, "
        "volume, issue, first_page, type, vol_key, page_key, search_text, 999 FROM catalogue_works "
        f"WHERE ident = 'doi:{OTHER}'",
        "holds doi:10.5555/zz-invented, which no event gives (row added)",
        id="row-added",
    ),
    pytest.param(
        "UPDATE catalogue_terms SET docs = docs + 1 WHERE term = 'gpipe'",
        "catalogue_terms counts 2 works holding 'gpipe'; the catalogue's rows hold 1",
        id="word-count-altered",
    ),
    pytest.param(
        "INSERT INTO catalogue_terms (term, docs) VALUES ('invented', 3)",
        "catalogue_terms counts 3 works holding 'invented'; the catalogue's rows hold 0",
        id="word-count-added",
    ),
]


@pytest.mark.parametrize(("statement", "named"), TAMPERS)
def test_a_tampered_catalogue_is_named_by_verify(ledger: Ledger, statement: str, named: str) -> None:
    raw.edit(ledger.url, statement)
    found = ledger.store.catalogue.catalogue_check()
    assert found is not None and named in found[1], found
    assert found[0] == ledger.store.catalogue.catalogue_indexed()
    report = ledger.verify()
    assert not report.ok and report.reason is not None and named in report.reason


def test_the_check_reads_page_by_page(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of two rows: the same answers as one read, clean and tampered."""
    from ledger.storage import catalogue_store

    monkeypatch.setattr(catalogue_store, "PAGE", 2)
    assert ledger.store.catalogue.catalogue_check() is None
    raw.edit(ledger.url, f"DELETE FROM catalogue_works WHERE ident = 'doi:{OTHER}'")
    found = ledger.store.catalogue.catalogue_check()
    assert found is not None and f"no row for doi:{OTHER}" in found[1]

"""Each catalogue row's first_seq (layout step `catalogue_first_seq`): the seq of its DOI's first
work.observed, kept as later ones replace the row, checked by `catalogue_check`, handed to the resolver
with every work, and filled in when a ledger of an earlier layout is upgraded."""

from __future__ import annotations

from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.derived.catalogue import COLUMNS
from service.ledger import Ledger
from tests import raw
from tests.conftest import NewDb
from tests.factories import ts
from tests.ledger.storage.test_catalogue_by_seq_upgrade import _insert
from tests.ledger.storage.test_catalogue_store import GPIPE, ZERO, work
from tests.old_layout import build_old_ledger, version_before

COPY = "10.5555/zero.copy"


def _world(ledger: Ledger) -> None:
    ledger.append([work(ZERO, ts(1)), work(GPIPE, ts(2), title="GPipe", authors=("Huang",))])
    ledger.catalogue  # noqa: B018 - extended: ZERO's row held before its later events arrive
    # a copy of ZERO under another DOI, then ZERO observed again (later, and once backdated)
    ledger.append([work(COPY, ts(3)), work(ZERO, ts(4), volume="7"), work(ZERO, ts(0), volume="8")])


def _first(ledger: Ledger) -> dict[str, tuple[int, int | None]]:
    catalogue = ledger.store.catalogue
    assert isinstance(catalogue, SqlCatalogue)
    return {r.doi or "": (r.seq, r.first_seq) for r in catalogue.catalogue_rows()}


def test_a_row_keeps_the_seq_of_its_first_event(fresh_ledger: Ledger) -> None:
    _world(fresh_ledger)
    fresh_ledger.catalogue  # noqa: B018
    assert _first(fresh_ledger) == {ZERO: (4, 1), GPIPE: (2, 2), COPY: (3, 3)}
    assert fresh_ledger.store.catalogue.catalogue_check() is None
    (found,) = fresh_ledger.store.catalogue.catalogue_by_keys([ZERO])
    assert [(w.seq, w.first_seq) for w in found] == [(4, 1)]


def test_an_altered_first_seq_is_found(fresh_ledger: Ledger) -> None:
    _world(fresh_ledger)
    fresh_ledger.catalogue  # noqa: B018
    raw.edit(fresh_ledger.url, "UPDATE catalogue_works SET first_seq = 9 WHERE seq = 3")
    found = fresh_ledger.store.catalogue.catalogue_check()
    assert found is not None and "row altered" in found[1]


def test_an_earlier_layout_is_upgraded_with_first_seqs(new_db: NewDb) -> None:
    source = Ledger(new_db("source.db"))
    _world(source)
    source.catalogue  # noqa: B018
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "catalogue_first_seq"), source)
    cols = ", ".join(c for c in COLUMNS if c != "first_seq")  # the earlier layout's columns
    rows = raw.rows(source.url, f"SELECT {cols} FROM catalogue_works")
    _insert(
        old, f"INSERT INTO catalogue_works ({cols}) VALUES ({', '.join('?' for _ in cols.split(','))})", rows
    )
    _insert(
        old,
        "INSERT INTO catalogue_terms (term, docs) VALUES (?, ?)",
        raw.rows(source.url, "SELECT term, docs FROM catalogue_terms"),
    )
    _insert(old, "UPDATE catalogue_cursor SET seq = ?", [(source.head().seq,)])
    upgraded = Ledger(old)
    try:
        upgraded.catalogue  # noqa: B018
        assert _first(upgraded) == _first(source)
        assert upgraded.store.catalogue.catalogue_check() is None
    finally:
        upgraded.close()

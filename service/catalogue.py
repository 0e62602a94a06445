"""The resolver's catalogue of works (resolver-v1.md), brought up to the head before each read. The
store stays inside."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.storage.interface import CatalogueTables, Store


class Catalogue:
    """The catalogue of one ledger: what the resolver matches against and a works ingest compares with."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def tables(self) -> CatalogueTables:
        """The catalogue, first brought up to the head (a ledger that cannot be written is read as far
        as it reaches)."""
        catalogue = self._store.catalogue
        head = self._store.head().seq
        if catalogue.catalogue_indexed() < head:
            catalogue.index_catalogue(head)
        return catalogue

    def work_data(self, dois: Sequence[str]) -> dict[str, bytes]:
        """The data (canonical bytes) of the latest work.observed of each of these normalised DOIs the
        ledger holds (what a works ingest compares with, so that a re-ingest appends nothing)."""
        self.tables()  # brought up to the head first
        return self._store.catalogue.latest_work_data(dois)

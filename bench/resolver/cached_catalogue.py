"""A catalogue's answers kept in a file between runs, so tuning the matcher does not search again."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.model.works import CatalogueWork
from ledger.storage.interface import CatalogueTables


class CachedCatalogue:
    """`CatalogueTables` answering from a file of earlier answers, asking `inner` for the rest."""

    def __init__(self, inner: CatalogueTables, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.memo: dict[Any, list[CatalogueWork]] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self.dirty = False

    def _ask(self, kind: str, items: Sequence[Any], limit: int, call: Any) -> list[list[CatalogueWork]]:
        missing = [i for i in dict.fromkeys(items) if (kind, i, limit) not in self.memo]
        if missing:
            self.dirty = True
            for i, found in zip(missing, call(missing), strict=True):
                self.memo[(kind, i, limit)] = found
        return [self.memo[(kind, i, limit)] for i in items]

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        return self._ask("keys", keys, 0, lambda k: self.inner.catalogue_by_keys(k))

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        return self._ask("search", texts, limit, lambda t: self.inner.catalogue_search(t, limit))

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        return self._ask("pairs", pairs, limit, lambda p: self.inner.catalogue_by_volume_page(p, limit))

    def save(self) -> None:
        if self.dirty:
            self.path.write_bytes(pickle.dumps(self.memo))

"""A SQLite store reads its file through a memory map only when asked (ledger/storage/sqlite/store.py):
the resolver's worker processes ask; every other process keeps file pages out of its resident memory."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.sqlite.store import MMAP_BYTES, SQLiteStore
from service.resolver import pool


def _sizes(store: SQLiteStore) -> list[int]:
    sizes = [store.connection().execute("PRAGMA mmap_size").fetchone()[0]]
    t = threading.Thread(
        target=lambda: sizes.append(store.connection().execute("PRAGMA mmap_size").fetchone()[0])
    )
    t.start()
    t.join()
    return sizes


def test_each_thread_connection_of_a_mapped_store_maps_the_file(tmp_path: Path) -> None:
    sizes = _sizes(SQLiteStore(tmp_path / "a.db", mapped=True))
    # SQLite caps the map at its compile-time maximum (2 GB less 64 KB by default)
    assert sizes[0] == sizes[1] > 0
    assert sizes[0] <= MMAP_BYTES


def test_a_store_not_asked_reads_without_a_map(tmp_path: Path) -> None:
    assert _sizes(SQLiteStore(tmp_path / "a.db")) == [0, 0]


def test_a_resolver_worker_reads_its_ledger_through_a_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "_worker", [])
    db = str(tmp_path / "a.db")
    SQLiteStore(db).close()
    pool._start(db, pool.default_resolver(), multiprocessing.Event())
    catalogue = pool._worker[0].catalogue
    assert isinstance(catalogue, SqlCatalogue)
    store = catalogue.store
    assert isinstance(store, SQLiteStore)
    assert store.connection().execute("PRAGMA mmap_size").fetchone()[0] > 0

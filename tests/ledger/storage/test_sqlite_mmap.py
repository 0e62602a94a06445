"""Every SQLite connection of a store reads its file through a memory map (ledger/storage/sqlite/store.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from ledger.storage.sqlite.store import MMAP_BYTES, SQLiteStore


def test_each_thread_connection_maps_the_file(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    sizes = [store.connection().execute("PRAGMA mmap_size").fetchone()[0]]
    t = threading.Thread(
        target=lambda: sizes.append(store.connection().execute("PRAGMA mmap_size").fetchone()[0])
    )
    t.start()
    t.join()
    # SQLite caps the map at its compile-time maximum (2 GB less 64 KB by default)
    assert sizes[0] == sizes[1] > 0
    assert sizes[0] <= MMAP_BYTES

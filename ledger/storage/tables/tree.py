"""The Merkle tree's stored nodes and fill marker (ledger/tlog/merkle_store.py); each backend adds
where it keeps the signed checkpoint and how one signer at a time is kept."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ledger.storage.interface import side_path
from ledger.storage.tables.shared import (
    TableBase,
)


class SqlTree(TableBase):
    """Stored complete-subtree hashes, the fill marker, and the files beside the ledger."""

    def side_file(self, suffix: str) -> Path:
        """A file of this ledger (signing key, tokens): see interface.side_path."""
        return side_path(self.store.db, suffix)

    def fill_state(self) -> tuple[int, str | None]:
        """(leaves covered by stored nodes, chain hash of the last of them)."""
        row = self._q("SELECT leaves, chain_hash FROM merkle_fill WHERE id = 1").fetchone()
        return (0, None) if row is None else (int(row[0]), str(row[1]))

    def event_hash(self, seq: int) -> str | None:
        """The stored chain hash of one seq (None if absent)."""
        row = self._q("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """One stored complete-subtree hash, or None."""
        row = self._q("SELECT hash FROM merkle_nodes WHERE level = ? AND idx = ?", (level, index)).fetchone()
        return None if row is None else bytes(row[0])

    def nodes(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The stored hashes of the given (level, idx) nodes that exist."""
        d = self.store.dialect
        rows = self._q(
            f"WITH k(level, idx) AS ({d.pairs('int', 'bigint')}) "
            "SELECT n.level, n.idx, n.hash FROM k "
            "JOIN merkle_nodes AS n ON n.level = k.level AND n.idx = k.idx",
            d.bind_pairs(list(keys)),
        )
        return {(r[0], r[1]): bytes(r[2]) for r in rows}

    @contextmanager
    def filling(self) -> Iterator[None]:
        """One transaction storing nodes, fillers (not appends) taking turns."""
        with self.store.transaction(self.store.fill_begin):
            yield

    def store_nodes(self, rows: Sequence[tuple[int, int, bytes]], leaves: int, chain_hash: str) -> None:
        """Insert new nodes and move the fill marker (inside `filling`)."""
        self.store.query_many(
            self.store.connection(), "INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)", rows
        )
        self._q(
            "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves, chain_hash = excluded.chain_hash",
            (leaves, chain_hash),
        )

    # the signed checkpoint and its signer's lock: each backend's own (sqlite/, postgresql/)

    def last_checkpoint(self) -> str | None:
        """The last signed checkpoint note, if any."""
        raise NotImplementedError

    def save_checkpoint(self, note: str) -> None:
        """Replace the last signed checkpoint (inside `signing`)."""
        raise NotImplementedError

    def signing(self) -> AbstractContextManager[None]:
        """One signer at a time."""
        raise NotImplementedError

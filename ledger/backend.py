"""`open_store` choosing SQLite or PostgreSQL, and `copy_ledger` between any two stores."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from . import ijson
from .append import check_rows
from .chain import GENESIS, row_break
from .codec import decode_data
from .errors import ChainBroken, Conflict, LedgerError
from .events import StandingChecked
from .facts import CheckWorkRow, Head, Row
from .interface import Store, Tables, Unsupported, is_pg_url, side_path
from .store import SQLiteStore

# the interface's names, for the callers that import them from here
__all__ = [
    "ChainWalker",
    "Store",
    "Tables",
    "Unstorable",
    "Unsupported",
    "copy_ledger",
    "is_pg_url",
    "open_store",
    "side_path",
]


def open_store(db: str | os.PathLike[str], *, synchronous: str = "FULL") -> Store:
    """A SQLiteStore for a path, a PostgresStore for a postgresql:// URL."""
    if is_pg_url(db):
        try:
            import psycopg  # noqa: F401 - only to say which extra is missing
        except ImportError:
            raise Unsupported(
                "a postgresql:// ledger needs the PostgreSQL driver (psycopg 3): "
                "pip install 'citation-ledger[postgresql]'"
            ) from None
        from .pg_store import PostgresStore  # psycopg is an optional dependency

        return PostgresStore(str(db))
    return SQLiteStore(db, synchronous=synchronous)


class ChainWalker:
    """Checks rows of `iter_chain` one by one, in seq order: sequence, versions, hashes, index columns."""

    def __init__(self) -> None:
        self.prev, self.last_seq, self.last_recorded = GENESIS, 0, -1
        self.versions: dict[str, int] = {}
        self.checks: dict[int, list[CheckWorkRow]] = {}
        self.checked = 0

    def step(self, row: Sequence[Any]) -> str | None:
        """Why this row breaks the chain, or None (then it becomes the new head)."""
        seq, _, stream, version, type_, observed_at, _, data, _, h, o_us, r_us = row
        reason, _ = row_break(
            row,
            prev=self.prev,
            last_seq=self.last_seq,
            last_recorded=self.last_recorded,
            version_before=self.versions.get(stream, 0),
        )
        if reason is not None:
            return reason
        if type_ == "standing.checked":
            event = StandingChecked(observed_at=observed_at, data=decode_data(type_, data.encode()))
            self.checks[seq] = check_rows(event, seq, o_us, r_us)
        self.versions[stream] = version
        self.prev, self.last_seq, self.last_recorded = h, seq, r_us
        self.checked += 1
        return None


def copy_ledger(
    src: Store, dst: Store, batch: int = 2000, progress: Callable[[int], None] | None = None
) -> Head:
    """Copy every event verbatim (same seq, recorded_at, hashes) into an empty store; returns its head."""
    held = dst.head()
    if held.seq != 0:
        raise Conflict(
            f"the target already holds {held.seq} events: migrate copies into an empty ledger only",
            details={"target_head": held.seq},
        )
    if dst.kind == "postgresql":
        _refuse_unstorable(src, batch)
    walker = ChainWalker()
    rows: list[Row] = []
    for r in src.iter_chain(batch=batch):
        reason = walker.step(r)
        if reason is not None:
            raise ChainBroken(r[0], f"in the source: {reason}")
        seq, event_id, stream, version, type_, observed_at, recorded_at, data, prev_hash, h, o_us, r_us = r
        rows.append(
            Row(
                seq,
                event_id,
                stream,
                version,
                type_,
                observed_at,
                o_us,
                recorded_at,
                r_us,
                data.encode(),
                prev_hash,
                h,
            )
        )
        if len(rows) >= batch:
            _insert_chained(dst, rows, walker)
            rows = []
            if progress is not None:
                progress(walker.last_seq)
    if rows:
        _insert_chained(dst, rows, walker)
    return Head(walker.last_seq, walker.prev)


def _refuse_unstorable(src: Store, batch: int) -> None:
    """Before anything is copied: name every stored event PostgreSQL text cannot hold (U+0000)."""
    seqs = [row[0] for row in src.iter_chain(batch=batch) if ijson.nul_place(row[7]) is not None]
    if seqs:
        shown = ", ".join(map(str, seqs[:20])) + (f" and {len(seqs) - 20} more" if len(seqs) > 20 else "")
        raise Unstorable(
            f"{len(seqs)} stored event(s) hold the character U+0000, which PostgreSQL text cannot store: "
            f"seq {shown}; nothing was copied (they stay verifiable where they are)",
            details={"seqs": seqs},
        )


class Unstorable(LedgerError):
    """Events the target backend cannot store byte for byte."""

    code = "unstorable"


def _insert_chained(dst: Store, rows: list[Row], walker: ChainWalker) -> None:
    """Insert already-chained rows after checking they continue the target's head."""
    checks = [c for r in rows for c in walker.checks.pop(r.seq, [])]
    with dst.write() as tx:
        head, _ = tx.head()
        if head != Head(rows[0].seq - 1, rows[0].prev_hash):
            raise Conflict(f"the target's head moved to seq {head.seq} during the copy; nothing more copied")
        tx.insert(rows, checks)

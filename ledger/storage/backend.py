"""`open_store` choosing SQLite or PostgreSQL, and `copy_ledger` between any two stores."""

from __future__ import annotations

import os
from collections.abc import Callable

from ledger.model import ijson
from ledger.model.errors import ChainBroken, Conflict, LedgerError
from ledger.model.events import ChainLink
from ledger.model.facts import Head
from ledger.storage.append import rows_of
from ledger.storage.interface import Store, Unsupported, is_pg_url, side_path
from ledger.storage.postgresql import require_driver
from ledger.storage.projector import READ_BY_RECORDS, catch_up
from ledger.storage.sqlite.store import SQLiteStore
from ledger.tlog.chain import Follower

# the interface's names, for the callers that import them from here
__all__ = [
    "ChainWalker",
    "Store",
    "Unstorable",
    "Unsupported",
    "copy_ledger",
    "is_pg_url",
    "open_store",
    "side_path",
]


def open_store(db: str | os.PathLike[str], *, synchronous: str = "FULL", mapped: bool = False) -> Store:
    """A SQLiteStore for a path (`mapped`: read through a memory map), a PostgresStore for a
    postgresql:// URL."""
    if is_pg_url(db):
        require_driver()
        from ledger.storage.postgresql.store import PostgresStore  # psycopg is an optional dependency

        return PostgresStore(str(db))
    return SQLiteStore(db, synchronous=synchronous, mapped=mapped)


class ChainWalker(Follower):
    """Checks stored events one by one, in seq order."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def step(self, link: ChainLink) -> str | None:
        """Why this event breaks the chain, or None (then it becomes the new head)."""
        reason, _ = self.check(link)
        if reason is not None:
            return reason
        self.take(link)
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
    links: list[ChainLink] = []
    for link in src.iter_chain(batch=batch):
        reason = walker.step(link)
        if reason is not None:
            raise ChainBroken(link.event.seq, f"in the source: {reason}")
        links.append(link)
        if len(links) >= batch:
            _insert_chained(src, dst, links)
            links = []
            if progress is not None:
                progress(walker.last_seq)
    if links:
        _insert_chained(src, dst, links)
    # the projections a record reads along with the events, projected before the copy is handed over
    catch_up(dst, READ_BY_RECORDS)
    return Head(walker.last_seq, walker.prev)


def _refuse_unstorable(src: Store, batch: int) -> None:
    """Before anything is copied: name every stored event PostgreSQL text cannot hold (U+0000)."""
    seqs = [k.event.seq for k in src.iter_chain(batch=batch) if ijson.nul_place(k.event.data) is not None]
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


def _insert_chained(src: Store, dst: Store, links: list[ChainLink]) -> None:
    """Insert already-chained events after checking they continue the target's head, with the writers
    recorded for the writes that begin among them."""
    first = links[0].event
    with dst.write() as tx:
        head, _ = tx.head()
        if head != Head(first.seq - 1, first.prev_hash):
            raise Conflict(f"the target's head moved to seq {head.seq} during the copy; nothing more copied")
        tx.insert(rows_of(links))
        tx.save_writers(src.writers.rows_between(first.seq, links[-1].event.seq))

"""The narrow store interface every backend offers, and `open_store` choosing SQLite or PostgreSQL."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from . import ijson
from .append import AppendTx, check_rows
from .chain import GENESIS, row_break
from .codec import decode_data
from .errors import ChainBroken, Conflict, LedgerError
from .events import StandingChecked, StoredEvent
from .facts import CheckWorkRow, Fact, Head, Row, ScrubPass, VerifiedPoint

PG_SCHEMES = ("postgresql://", "postgres://")


class Unsupported(LedgerError):
    """A feature this backend does not offer (yet)."""

    code = "not_supported"
    http_status = 501


class WriteTxLike(AppendTx, Protocol):
    """A write transaction: what an append needs, and a savepoint per batch of a group."""

    def savepoint(self) -> AbstractContextManager[None]: ...


class ReaderLike(Protocol):
    """A consistent read as of T and K: the head it sees and the five record reads."""

    def head(self) -> Head: ...
    def paper_stream(self, arxiv_id: str) -> list[Fact]: ...
    def citing_events(self, arxiv_id: str) -> list[Fact]: ...
    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]: ...
    def source_heads(self) -> list[Any]: ...
    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[Any]: ...


class Tables(Protocol):
    """The ledger's other tables and ledger-wide lookups: Merkle nodes, verify's resume point, checkpoint,
    scrub passes."""

    def side_file(self, suffix: str) -> Path: ...
    def fill_state(self) -> tuple[int, str | None]: ...
    def event_hash(self, seq: int) -> str | None: ...
    def node(self, level: int, index: int) -> bytes | None: ...
    def nodes(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]: ...
    def filling(self) -> AbstractContextManager[None]: ...
    def store_nodes(self, rows: Sequence[tuple[int, int, bytes]], leaves: int, chain_hash: str) -> None: ...
    def consistent_read(self) -> AbstractContextManager[None]: ...
    def verified_point(self) -> VerifiedPoint | None: ...
    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes]) -> None: ...
    def recorded_us_at(self, seq: int) -> int: ...
    def stream_version_at(self, stream: str, seq: int) -> int: ...
    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]: ...
    def last_checkpoint(self) -> str | None: ...
    def save_checkpoint(self, note: str) -> None: ...
    def signing(self) -> AbstractContextManager[None]: ...
    def save_pass(self, p: ScrubPass) -> bool: ...
    def last_pass(self) -> ScrubPass | None: ...
    def scrubbing(self, create: bool) -> AbstractContextManager[bool]: ...
    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]: ...
    def paper_ids(self, as_of_us: int) -> list[str]: ...
    def observation_facts(
        self, observation_ids: Sequence[str], after_us: int, until_us: int
    ) -> list[Fact]: ...


class Store(Protocol):
    """What the Ledger, the append, the projections, the API and the CLI need from a backend."""

    kind: str
    local: bool  # reads are a local file's (microseconds): the event loop may do a small one itself

    @property
    def db(self) -> str:
        """The path or URL it was opened with."""
        ...

    @property
    def tables(self) -> Tables: ...

    def write(self) -> AbstractContextManager[Any]: ...
    def head(self) -> Head: ...
    def snapshot(self, as_of_us: int, known_us: int | None = None) -> AbstractContextManager[Any]: ...
    def read_log(
        self,
        after: int = 0,
        limit: int | None = None,
        stream: str | None = None,
        type: str | None = None,
    ) -> list[StoredEvent]: ...
    def envelopes(self, seqs: Sequence[int]) -> list[StoredEvent]: ...
    def paper_history(self, arxiv_id: str) -> list[Fact]: ...
    def papers(self, limit: int = 100) -> list[str]: ...
    def iter_chain(self, after: int = 0, batch: int = 5000) -> Iterator[tuple[Any, ...]]: ...
    def iter_check_works(self) -> Iterator[tuple[Any, ...]]: ...
    def close(self) -> None: ...


def is_pg_url(db: str | os.PathLike[str]) -> bool:
    """Whether `db` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(PG_SCHEMES)


def side_path(db: str | os.PathLike[str], suffix: str) -> Path:
    """A file of ledger `db` (signing key, tokens; SQLite's checkpoint): `<db><suffix>` next to a SQLite
    file; for PostgreSQL, `<host>-<port>-<database><suffix>` in $LEDGER_STATE_DIR (default: .)."""
    if not is_pg_url(db):
        p = Path(db)
        return p.with_name(p.name + suffix)
    parts = urlsplit(str(db))
    name = f"{parts.hostname or 'localhost'}-{parts.port or 5432}-{parts.path.lstrip('/') or 'postgres'}"
    return Path(os.environ.get("LEDGER_STATE_DIR") or ".") / (re.sub(r"[^A-Za-z0-9._-]", "_", name) + suffix)


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
        from .pg_store import PostgresStore

        return PostgresStore(str(db))
    from .store import SQLiteStore

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
    seqs = [
        row[0]
        for row in src.iter_chain(batch=batch)
        if "\\u0000" in row[7] and ijson.first_problem(json.loads(row[7])) is not None
    ]
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
    http_status = 422


def _insert_chained(dst: Store, rows: list[Row], walker: ChainWalker) -> None:
    """Insert already-chained rows after checking they continue the target's head."""
    checks = [c for r in rows for c in walker.checks.pop(r.seq, [])]
    with dst.write() as tx:
        head, _ = tx.head()
        if head != Head(rows[0].seq - 1, rows[0].prev_hash):
            raise Conflict(f"the target's head moved to seq {head.seq} during the copy; nothing more copied")
        tx.insert(rows, checks)

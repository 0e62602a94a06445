"""The narrow store interface every backend offers, and the helpers that name a ledger's files.

It imports no store, so the stores, their tables and everything above them can depend on it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ledger.model.errors import LedgerError
from ledger.model.events import StoredEvent
from ledger.model.facts import CheckRow, Fact, ImportProgress, IngestReceipt, ScrubPass, VerifiedPoint
from ledger.model.works import CatalogueWork
from ledger.storage.append import AppendTx
from ledger.storage.derived.search import Found
from ledger.storage.derived.spans import Bucket, Row, Step
from ledger.storage.state.alerts import AlertTables
from ledger.storage.state.jobs import JobTables
from ledger.storage.writers import WriterRow, WriterTables
from ledger.tlog.stored import LogStore

PG_SCHEMES = ("postgresql://", "postgres://")


class Unsupported(LedgerError):
    """A feature this backend does not offer (yet)."""

    code = "not_supported"


class VerifyTables(Protocol):
    """Where verify's walk may resume, and what it rechecks of each event beyond its chain link."""

    def consistent_read(self) -> AbstractContextManager[None]: ...
    def verified_point(self) -> VerifiedPoint | None: ...
    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes], at_us: int) -> None: ...
    def recorded_us_at(self, seq: int) -> int: ...
    def stream_version_at(self, stream: str, seq: int) -> int: ...
    def repeated_event_id(self, event_ids: Sequence[str] | None = None) -> tuple[str, list[int]] | None: ...
    @property
    def list_part(self) -> int | None: ...


class KeyTables(Protocol):
    """The lookup keys and the standing checks' per-work rows, at every level."""

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]: ...
    def index_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]: ...
    def index_rows(self, after: int = 0) -> Iterator[tuple[Any, ...]]: ...


class SpanTables(Protocol):
    """Inbound observations' spans and the per-day counts of them (ledger/storage/derived/spans.py)."""

    def observation_steps(self, oids: Sequence[str] | None = None) -> Iterator[tuple[str, list[Step]]]: ...
    def span_rows(self, oids: Sequence[str] | None = None, *, ordered: bool = True) -> Iterator[Row]: ...
    def fill_spans(self) -> bool: ...
    def projection_position(self, name: str) -> int: ...
    def count_rows(self, cited: Sequence[str] | None = None) -> tuple[Iterator[Bucket], Iterator[Bucket]]: ...


class ScreenTables(Protocol):
    """The screen's index (ledger/storage/derived/screen.py), read back for verify."""

    def screen_events(self, after: int = 0) -> Iterator[tuple[Any, ...]]: ...
    def screen_rows(self, after: int = 0) -> Iterator[tuple[Any, ...]]: ...


class SearchTables(Protocol):
    """The title index, extended from the events past its cursor."""

    def titles_indexed(self) -> int: ...
    def index_titles(self, upto: int) -> int: ...
    def search_titles(self, words: Sequence[str], limit: int, offset: int) -> Found: ...


class ScrubTables(Protocol):
    """The record of each full walk, and the lock that keeps one walker (or deliverer) per ledger."""

    def save_pass(self, p: ScrubPass) -> bool: ...
    def last_pass(self) -> ScrubPass | None: ...
    def exclusive(self, role: str, create: bool) -> AbstractContextManager[bool]: ...


class WorkTables(Protocol):
    """The works known as of T and the facts about them: what a source ingest matches against."""

    def current_checks(self, work_ids: Sequence[str]) -> list[CheckRow]: ...
    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]: ...
    def paper_ids(self, as_of_us: int) -> list[str]: ...
    def work_facts(self, index_keys: Sequence[str], as_of_us: int) -> list[Fact]: ...
    def work_observations(self, as_of_us: int) -> list[str]: ...
    def papers_among(self, arxiv_ids: Sequence[str], as_of_us: int) -> list[str]: ...
    def observation_facts(
        self, observation_ids: Sequence[str], after_us: int, until_us: int
    ) -> list[Fact]: ...


class CatalogueTables(Protocol):
    """The resolver's catalogue (resolver-v1.md): the latest `work.observed` of each DOI and the latest
    `paper.observed` of each arXiv paper, indexed for candidate retrieval. Each method answers a batch,
    one list of candidates (a superset, in no promised order) per item asked."""

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]: ...
    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]: ...
    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]: ...


class CatalogueIndex(CatalogueTables, Protocol):
    """The catalogue and its cursor: extended from the events past it, as the title index is."""

    def catalogue_indexed(self) -> int: ...
    def index_catalogue(self, upto: int) -> int: ...
    def latest_work_data(self, dois: Sequence[str]) -> dict[str, bytes]: ...
    def catalogue_check(self) -> tuple[int, str] | None: ...


class ImportTables(Protocol):
    """How far each file's import has committed, and the lookups that check a file before it is written."""

    def import_progress(self, file_key: str) -> ImportProgress | None: ...
    def stored_events(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]: ...
    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]: ...


class EventReads(Protocol):
    """The events beyond the log's own reads: by seq, by a prefix of their streams, by streams and types,
    and as rows for verify's and migrate's walks."""

    def envelopes(self, seqs: Sequence[int]) -> list[StoredEvent]: ...
    def read_streams(self, prefix: str, upto: int | None = None) -> list[StoredEvent]: ...
    def read_of(self, streams: Sequence[str], types: Sequence[str]) -> list[StoredEvent]: ...
    def iter_rows(self, after: int = 0, batch: int = 5000) -> Iterator[tuple[Any, ...]]: ...
    def iter_pages(self, after: int = 0, batch: int = 5000) -> Iterator[list[tuple[Any, ...]]]: ...
    def iter_check_works(self) -> Iterator[tuple[Any, ...]]: ...


class RecordReads(Protocol):
    """What the projections read: a consistent snapshot as of T, a paper's history, the papers."""

    def snapshot(self, as_of_us: int, known_us: int | None = None) -> AbstractContextManager[Any]: ...
    def paper_history(self, arxiv_id: str) -> list[Fact]: ...
    def papers(self, limit: int = 100, offset: int = 0) -> list[str]: ...


class WriteTx(AppendTx, Protocol):
    """A backend's write transaction: the append protocol, and what else is written with a batch."""

    def last_receipt(self, source: str) -> IngestReceipt | None: ...
    def save_receipt(self, receipt: IngestReceipt) -> None: ...
    def save_import_progress(self, progress: ImportProgress) -> None: ...
    def save_writers(self, rows: Sequence[WriterRow]) -> None: ...


class Store(LogStore, EventReads, RecordReads, Protocol):
    """A backend: the log, its reads, one write transaction at a time, and one small object per
    capability of the other tables (`tree` is the log's, in LogStore)."""

    kind: str
    local: bool  # reads are a local file's (microseconds): the event loop may do a small one itself

    @property
    def db(self) -> str:
        """The path or URL it was opened with."""
        ...

    @property
    def verifying(self) -> VerifyTables: ...
    @property
    def keys(self) -> KeyTables: ...
    @property
    def screen(self) -> ScreenTables: ...
    @property
    def spans(self) -> SpanTables: ...
    @property
    def search(self) -> SearchTables: ...
    @property
    def scrub(self) -> ScrubTables: ...
    @property
    def works(self) -> WorkTables: ...
    @property
    def imports(self) -> ImportTables: ...

    @property
    def alerts(self) -> AlertTables: ...

    @property
    def jobs(self) -> JobTables:
        """The background resolve jobs, shared by every process of the ledger."""

    @property
    def writers(self) -> WriterTables:
        """Who made each write, kept outside the chain (not proven by it)."""

    @property
    def catalogue(self) -> CatalogueIndex:
        """The resolver's catalogue (resolver-v1.md)."""

    def write(self) -> AbstractContextManager[WriteTx]: ...
    def stats(self) -> dict[str, int]: ...
    def disk_bytes(self) -> int: ...
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

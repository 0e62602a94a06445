"""Real sources in: each published format -> ledger events, appended as one atomic batch.
May import `ledger`, `service.intake` and the `service.ledger` facade."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import IO, NamedTuple

from ledger.model.errors import InvalidEvent
from ledger.model.events import Event
from ledger.model.facts import IngestReceipt
from ledger.storage.append import AppendResult
from ledger.storage.interface import WriteTx
from service.intake.inflate import SERVED, Inflation
from service.ledger import Ledger
from service.sources import counts, crossref, retraction_watch
from service.sources.base import (
    NotThatFormat,
    PaperIndex,
    Parsed,
    Refused,
    Summary,
    WorkIndex,
    check_observed_at,
    new_receipt,
)
from service.sources.reader import Digest, Input, Progress, input_size, open_text

STANDING: dict[str, Callable[[IO[str], WorkIndex, Summary], Parsed]] = {
    "retraction-watch": retraction_watch.parse,
    "crossref": crossref.parse,
}
SOURCES: dict[str, str] = {
    "retraction-watch": retraction_watch.EVENT_SOURCE,
    "crossref": crossref.EVENT_SOURCE,
    **{name: spec.event_source for name, spec in counts.SPECS.items()},
}

# Sources whose file is the whole database: a check covering every work known, so a file with less
# in it than the last one accepted would write "checked, no notice" over real notices (sources-v1.md).
# A Crossref answer names its works, and a count file its papers: neither says anything of the rest.
WHOLE_DATABASE = frozenset({"retraction-watch"})
UNDER_HALF = "under_half_the_last"

# told of each append once committed (an ingest's one, a works ingest's every batch): its events,
# the answer, the seconds it took
Appended = Callable[[Sequence[Event], AppendResult, float], None]

__all__ = [
    "SOURCES",
    "NotThatFormat",
    "Refused",
    "SourceFile",
    "Summary",
    "ingest",
    "input_size",
    "parse_source",
]


class SourceFile(NamedTuple):
    """A file as a source publishes it: which source, its bytes (a path, bytes or a stream), when it was
    fetched, for opencitations the paper it counts, and how far it may decompress (gzip, zstd)."""

    source: str
    data: Input
    observed_at: str
    paper_id: str | None = None
    caps: Inflation = SERVED


def _check_args(file: SourceFile, now: int) -> int:
    source, _, observed_at, paper_id, _ = file
    if source not in SOURCES:
        raise InvalidEvent("source", f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    t = check_observed_at(observed_at, now)
    if source == "opencitations" and not paper_id:
        raise InvalidEvent(
            "id", "opencitations needs --id naming the paper, e.g. doi:10.48550/arXiv.2310.04610"
        )
    if source != "opencitations" and paper_id:
        raise InvalidEvent("id", f"--id is only for opencitations, not {source}")
    return t


def parse_source(
    ledger: Ledger, file: SourceFile, progress: Progress | None = None, digest: Digest | None = None
) -> Parsed:
    """Read a file as its source publishes it into the events of one batch (nothing is written);
    `digest` takes the file's bytes."""
    t = _check_args(file, ledger.clock.now_us())
    source, data, observed_at, paper_id, caps = file
    summary = Summary(source, SOURCES[source], observed_at)
    # the Retraction Watch export is known to carry stray non-UTF-8 bytes in names: they are replaced
    # rather than refusing 60k rows over one author; in a column the ledger reads they leave the row
    # unreadable (retraction_watch.py)
    errors = "replace" if source == "retraction-watch" else "strict"
    # every chunk's lookups see one state of the ledger, as the one statement of the full scan they
    # replaced did: an append meanwhile cannot leave a notice for a work the check no longer covers
    with ledger.store.verifying.consistent_read(), open_text(data, progress, errors, digest, caps) as text:
        if source in STANDING:
            return STANDING[source](text, WorkIndex(ledger.store, t), summary)
        return counts.parse(source, text, PaperIndex(ledger.store, t), summary, paper_id)


def ingest(
    ledger: Ledger,
    file: SourceFile,
    progress: Progress | None = None,
    appended: Appended | None = None,
    *,
    force: bool = False,
) -> Summary:
    """Parse the file and append its events as one atomic batch, with its receipt; a re-ingest
    appends no event.

    Event ids derive from content, and the content depends only on the file, T and the works (or
    papers) known as of T: the same file at the same T is a duplicate, unless events observed at or
    before T were appended in between (then the check lists other works: a new fact, appended).
    A whole-database file with fewer than half the rows of the last one accepted is refused unless
    `force`.
    """
    digest = Digest()
    parsed = parse_source(ledger, file, progress, digest)
    summary = parsed.summary
    source, observed_at = file.source, file.observed_at

    def receipt(tx: WriteTx, result: AppendResult) -> None:
        # under the append lock: two ingests at once are each compared with the one before them
        last = tx.last_receipt(source)
        if source in WHOLE_DATABASE and not force and last is not None and summary.read * 2 < last.rows_read:
            raise Refused(UNDER_HALF, _under_half(summary.read, last), forceable=True)
        seq = result.items[-1].seq if result.items else None
        tx.save_receipt(
            new_receipt(
                source,
                observed_at,
                digest,
                summary.read,
                summary.matched,
                result.appended,
                seq,
                ledger.clock.now_us(),
            )  # fmt: skip
        )

    began = time.perf_counter()
    result = ledger.append(parsed.events, places=parsed.places, within=receipt)
    if appended is not None:
        appended(parsed.events, result, time.perf_counter() - began)
    summary.appended = result.appended
    summary.duplicates = result.duplicates
    summary.head = result.head
    return summary


def _under_half(rows: int, last: IngestReceipt) -> str:
    return (
        f"{rows:,} row{'s' * (rows != 1)}, fewer than half the {last.rows_read:,} of the last file of this "
        f"source accepted (observed at {last.observed_at}, accepted at {last.accepted_at}, "
        f"sha256 {last.sha256})"
    )

"""Real sources in: each published format -> ledger events, appended as one atomic batch."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Callable, Sequence
from typing import IO

from ledger.append import AppendResult
from ledger.codec import FUTURE_SLACK_US
from ledger.errors import InvalidEvent
from ledger.events import Event
from ledger.instants import now_us, parse_ts
from service.ledger import Ledger
from service.sources import counts, crossref, retraction_watch
from service.sources.base import NotThatFormat, PaperIndex, Parsed, Summary, WorkIndex
from service.sources.reader import Input, Progress, input_size, open_text

STANDING: dict[str, Callable[[IO[str], WorkIndex, Summary], Parsed]] = {
    "retraction-watch": retraction_watch.parse,
    "crossref": crossref.parse,
}
SOURCES: dict[str, str] = {
    "retraction-watch": retraction_watch.EVENT_SOURCE,
    "crossref": crossref.EVENT_SOURCE,
    **{name: spec.event_source for name, spec in counts.SPECS.items()},
}

# told of the ingest's append once committed: its events, the answer, the seconds it took
Appended = Callable[[Sequence[Event], AppendResult, float], None]

__all__ = ["SOURCES", "NotThatFormat", "Summary", "ingest", "input_size", "parse_source"]


def _check_args(source: str, observed_at: str, paper_id: str | None) -> int:
    if source not in SOURCES:
        raise InvalidEvent("source", f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    try:
        t = parse_ts(observed_at)
    except (ValueError, TypeError) as e:
        raise InvalidEvent(
            "observed_at", f"{e}; give when the file was fetched, e.g. 2026-09-01T12:00:00Z"
        ) from None
    # refused again by the append, but checked here so a 60 MB file is not read for nothing
    if t > now_us() + FUTURE_SLACK_US:
        raise InvalidEvent("observed_at", "more than 5 minutes in the future")
    if source == "opencitations" and not paper_id:
        raise InvalidEvent(
            "id", "opencitations needs --id naming the paper, e.g. doi:10.48550/arXiv.2310.04610"
        )
    if source != "opencitations" and paper_id:
        raise InvalidEvent("id", f"--id is only for opencitations, not {source}")
    return t


def parse_source(
    ledger: Ledger,
    source: str,
    data: Input,
    observed_at: str,
    paper_id: str | None = None,
    progress: Progress | None = None,
) -> Parsed:
    """Read a file as `source` publishes it into the events of one batch (nothing is written)."""
    t = _check_args(source, observed_at, paper_id)
    summary = Summary(source, SOURCES[source], observed_at)
    # the Retraction Watch export is known to carry stray non-UTF-8 bytes in names: they are
    # replaced rather than refusing 60k rows over one author; the fields matched on are ASCII
    errors = "replace" if source == "retraction-watch" else "strict"
    try:
        # every chunk's lookups see one state of the ledger, as the one statement of the full scan they
        # replaced did: an append meanwhile cannot leave a notice for a work the check no longer covers
        with ledger.store.tables.consistent_read(), open_text(data, progress, errors) as text:
            if source in STANDING:
                return STANDING[source](text, WorkIndex(ledger.store, t), summary)
            return counts.parse(source, text, PaperIndex(ledger.store, t), summary, paper_id)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        # a .gz file cut short or damaged: what there is of it may parse, but it is not the file
        raise InvalidEvent(
            "file", f"a damaged gzip stream ({e or type(e).__name__}); nothing written"
        ) from None
    except RecursionError:
        raise InvalidEvent("file", "JSON nested too deeply to read; nothing written") from None


def ingest(
    ledger: Ledger,
    source: str,
    data: Input | IO[bytes],
    observed_at: str,
    paper_id: str | None = None,
    progress: Progress | None = None,
    appended: Appended | None = None,
) -> Summary:
    """Parse the file and append its events as one atomic batch; a re-ingest appends nothing.

    Event ids derive from content, and the content depends only on the file, T and the works (or
    papers) known as of T: the same file at the same T is a duplicate, unless events observed at or
    before T were appended in between (then the check lists other works: a new fact, appended).
    """
    parsed = parse_source(ledger, source, data, observed_at, paper_id, progress)
    began = time.perf_counter()
    result = ledger.append(parsed.events, places=parsed.places)
    if appended is not None:
        appended(parsed.events, result, time.perf_counter() - began)
    summary = parsed.summary
    summary.appended = result.appended
    summary.duplicates = result.duplicates
    summary.head = result.head
    return summary

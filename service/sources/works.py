"""Works in (resolver-v1.md): a Crossref or OpenAlex works file -> `work.observed` events on `work:{doi}`.

The file is read twice, as a stream each time: first whole, to refuse one that is not a works file
before anything is written (ledger-v1.md's import rule), then again to append its works in batches of
BATCH, each compared with the latest `work.observed` of its DOI so that a re-ingest appends nothing.
Memory holds one item and one batch, never the file: Crossref's public data files are gigabytes.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

import msgspec

from ledger.model.codec import canonical, check_ijson_data, check_rules
from ledger.model.errors import InvalidEvent
from ledger.model.events import Event, WorkObserved
from ledger.model.jsonvalue import Json, JsonInObject, JsonObject
from ledger.model.works import WorkData
from ledger.storage.append import AppendResult
from ledger.storage.interface import WriteTx
from service.intake.inflate import Inflation
from service.ledger import Ledger
from service.sources import Appended, SourceFile
from service.sources.base import NotThatFormat, Tally, check_observed_at, new_receipt
from service.sources.jsonstream import JsonStream, JsonSyntaxError, items_or_object
from service.sources.reader import Digest, Input, Progress, open_text
from service.sources.work_limits import Refusal, WorkLimits, check_work
from service.sources.works_map import (
    CROSSREF,
    OPENALEX,
    crossref_work,
    is_crossref,
    is_openalex,
    openalex_work,
)

NAME = "works"
BATCH = 5_000  # events per append
CHANGED_LISTED = 20  # DOIs a summary names whose title or first author an ingest changed; the rest counted
_WORK_DATA = msgspec.json.Decoder(WorkData)
FORMATS = (
    "a Crossref /works/{doi} or /works answer, Crossref work items one per line, an OpenAlex Work, "
    '{"results": [...]}, or OpenAlex Works one per line'
)


@dataclass
class WorksSummary(Tally):
    """What one works ingest read, skipped (with reasons and a few examples), found unchanged and
    appended."""

    observed_at: str
    read: int = 0
    works: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    unchanged: int = 0
    last_seq: int | None = None  # the last event this ingest appended (its receipt names it)
    # works appended over a DOI the ledger held with another title or first author: a works file can
    # re-observe any DOI, so its writer is shown what it changed (a count, and the first few named)
    changed: int = 0
    changed_listed: list[dict[str, str | list[str]]] = field(default_factory=list)

    def note_changed(self, doi: str, fields_: list[str]) -> None:
        """Count a work that changed its DOI's title or first author, naming the first few."""
        self.changed += 1
        if len(self.changed_listed) < CHANGED_LISTED:
            self.changed_listed.append({"doi": doi, "fields": fields_})

    def to_dict(self) -> JsonInObject:
        """The JSON answer of POST /ingest/works and `ledger ingest works --json`."""
        return {
            "source": NAME,
            "observed_at": self.observed_at,
            "read": self.read,
            "works": self.works,
            "sources": dict(sorted(self.sources.items())),
            "unchanged": self.unchanged,
            "changed": {"count": self.changed, "listed": self.changed_listed},
            **self.tally_dict(),
        }

    def lines(self) -> list[str]:
        """The summary as a few human lines."""
        by = ", ".join(f"{n:,} {s}" for s, n in sorted(self.sources.items())) or "none"
        out = [f"works at {self.observed_at}: read {self.read:,}, works {self.works:,} ({by})"]
        for reason, n in sorted(self.skipped.items()):
            eg = self.examples.get(reason)
            out.append(f"  skipped: {n:,} {reason}" + (f" (e.g. {'; '.join(eg)})" if eg else ""))
        head = "" if self.head is None else f"; head seq {self.head.seq:,}"
        out.append(
            f"  {self.appended:,} appended, {self.unchanged:,} unchanged, {self.duplicates:,} duplicate{head}"
        )
        if self.changed:
            named = ", ".join(f"{c['doi']} ({' and '.join(c['fields'])})" for c in self.changed_listed)
            more = self.changed - len(self.changed_listed)
            out.append(
                f"  changed the title or first author of {self.changed:,} work{'s' * (self.changed != 1)}: "
                + named
                + (f" and {more} more" if more else "")
            )
        return out


def read_items(text: IO[str]) -> Iterator[tuple[str, Json]]:
    """(source, item) for every work item of a works file, in order, read as a stream; NotThatFormat
    as soon as it shows it is not one of the formats."""
    js = JsonStream(text)
    objects = 0
    while js.peek() != "":
        objects += 1
        if js.peek() != "{":
            raise NotThatFormat(NAME, f"value {objects} is not a JSON object; expected {FORMATS}")
        top: JsonObject = {}
        listed = False
        for key in js.members():
            if key == "message" and js.peek() == "{":
                listed = True
                for kind, value in items_or_object(js, "items"):
                    if kind == "item":
                        yield CROSSREF, value
                    elif kind == "object" and isinstance(value, dict):  # `/works/{doi}`: one work
                        if "DOI" not in value:
                            raise NotThatFormat(
                                NAME, "a message that is neither a work (DOI) nor a list of items"
                            )
                        yield CROSSREF, value
            elif key in ("items", "results") and js.peek() == "[":
                listed = True
                source = CROSSREF if key == "items" else OPENALEX
                for _ in js.elements():
                    yield source, js.value()
            else:
                top[key] = js.value()
        if top.get("status") not in (None, "ok"):
            raise NotThatFormat(
                NAME, f"value {objects} is an answer whose status is {top['status']!r}, not 'ok'"
            )
        if listed:
            continue
        if is_crossref(top):
            yield CROSSREF, top
        elif is_openalex(top):
            yield OPENALEX, top
        else:
            keys = ", ".join(sorted(top)[:8]) or "no keys"
            raise NotThatFormat(NAME, f"value {objects} ({keys}) is neither a work nor a list of works")
    if objects == 0:
        raise NotThatFormat(NAME, f"no JSON value in it; expected {FORMATS}")


def works_of(
    text: IO[str], summary: WorksSummary, limits: WorkLimits | None = None
) -> Iterator[tuple[int, WorkObserved]]:
    """(item number, event) of every item that gives a work within `limits` (defaults: WorkLimits()),
    each checked by the ledger's rules; the others counted in `summary` as skipped, with the reason."""
    limits = limits or WorkLimits()
    for n, (source, item) in enumerate(read_items(text), start=1):
        summary.read += 1
        got = crossref_work(item) if source == CROSSREF else openalex_work(item)
        if isinstance(got, str):
            summary.skip(got, f"item {n}")
            continue
        try:
            check_work(got, limits)
        except Refusal as e:
            summary.skip(e.reason, f"item {n}: {e.detail}")
            continue
        event = WorkObserved(observed_at=summary.observed_at, data=got)
        try:
            check_rules(event, f"item {n}", None)  # observed_at checked once for the file (check_observed_at)
            check_ijson_data(canonical(got), f"item {n}")
        except InvalidEvent as e:
            summary.skip(f"unreadable {e.where.removeprefix(f'item {n}.data.')}", f"item {n}: {e.reason}")
            continue
        except (UnicodeEncodeError, ValueError):  # a lone surrogate in a string
            summary.skip("unreadable text", f"item {n}")
            continue
        summary.works += 1
        summary.sources[source] += 1
        yield n, event


def ingest_works(
    ledger: Ledger,
    file: SourceFile,
    progress: Progress | None = None,
    appended: Appended | None = None,
    limits: WorkLimits | None = None,
) -> WorksSummary:
    """Check a works file (its source "works") whole, then append its works in batches; a work whose
    DOI's latest `work.observed` already carries the same data is counted unchanged, not appended; a
    work past `limits` (defaults: WorkLimits()) is skipped and counted."""
    observed_at = file.observed_at
    check_observed_at(observed_at, ledger.clock.now_us())
    digest = Digest()
    with _rereadable(file.data, file.caps) as source:
        # pass 1: refuse a file that is not a works file, before anything is written
        with _text(source(), file.caps, progress, digest) as text:
            for _ in works_of(text, WorksSummary(observed_at), limits):
                pass
        summary = WorksSummary(observed_at)
        batch: list[tuple[int, WorkObserved]] = []
        with _text(source(), file.caps, None) as text:
            for item in works_of(text, summary, limits):
                batch.append(item)
                if len(batch) == BATCH:
                    _append(ledger, batch, summary, appended)
                    batch.clear()

        def receipt(tx: WriteTx, result: AppendResult) -> None:
            # with the last batch: the receipt says the whole file was taken
            seq = result.items[-1].seq if result.items else summary.last_seq
            new = summary.appended + result.appended
            at = ledger.clock.now_us()
            tx.save_receipt(new_receipt(NAME, observed_at, digest, summary.read, summary.works, new, seq, at))

        _append(ledger, batch, summary, appended, receipt)
    if summary.head is None:
        summary.head = ledger.head()
    return summary


def _append(
    ledger: Ledger,
    batch: list[tuple[int, WorkObserved]],
    summary: WorksSummary,
    appended: Appended | None,
    within: Callable[[WriteTx, AppendResult], None] | None = None,
) -> None:
    """Append the works of a batch whose data differs from their DOI's latest work.observed; `within`
    runs in its transaction (the last batch's, even with nothing new, writes the receipt)."""
    latest = ledger.works.work_data([e.data.doi for _, e in batch]) if batch else {}
    events: list[Event] = []
    places: list[str] = []
    for n, e in batch:
        data = canonical(e.data)
        if latest.get(e.data.doi) == data:
            summary.unchanged += 1
            continue
        held = latest.get(e.data.doi)
        if held is not None:
            fields_ = _changed_fields(_WORK_DATA.decode(held), e.data)
            if fields_:
                summary.note_changed(e.data.doi, fields_)
        latest[e.data.doi] = data  # the same work twice in a file: the second is unchanged
        events.append(e)
        places.append(f"item {n}")
    if not events and within is None:
        return
    began = time.perf_counter()
    result = ledger.append(events, places=places, within=within)
    if appended is not None and events:
        appended(events, result, time.perf_counter() - began)
    summary.appended += result.appended
    summary.duplicates += result.duplicates
    if events:
        summary.head = result.head
    if result.items:
        summary.last_seq = result.items[-1].seq


def _changed_fields(held: WorkData, new: WorkData) -> list[str]:
    """Which of the title and first author a new work.observed changes of the one its DOI holds."""
    first = [w.authors[0] if w.authors else None for w in (held, new)]
    return [
        name
        for name, moved in (("title", held.title != new.title), ("first_author", first[0] != first[1]))
        if moved
    ]


# a stream is copied aside in pieces of this size, counted against the cap as they arrive
_SPOOL_CHUNK = io.DEFAULT_BUFFER_SIZE * 16


@contextmanager
def _rereadable(data: Input, caps: Inflation) -> Iterator[Callable[[], Input]]:
    """A function giving the input from its start each time it is called: a path or bytes as they are,
    a seekable stream rewound, any other stream first copied to a temporary file no larger than
    `caps` allow a file to decompress to (a stream has no size to check beforehand)."""
    if isinstance(data, bytes | str | os.PathLike):
        yield lambda: data
        return
    stream: IO[bytes] = data
    if stream.seekable():
        start = stream.tell()

        def rewound() -> IO[bytes]:
            stream.seek(start)
            return stream

        yield rewound
        return
    with tempfile.TemporaryFile() as spool:
        size = 0
        while chunk := stream.read(_SPOOL_CHUNK):
            size += len(chunk)
            if size > caps.max_bytes:
                raise InvalidEvent(
                    "file", f"a stream of more than {caps.max_bytes:,} bytes (the limit {caps.bytes_setting})"
                )
            spool.write(chunk)
        spool.seek(0)
        with _rereadable(spool, caps) as again:  # type: ignore[arg-type]
            yield again


@contextmanager
def _text(
    data: Input, caps: Inflation, progress: Progress | None, digest: Digest | None = None
) -> Iterator[IO[str]]:
    """The file as text (decompressed within `caps`), its refusals said as a works file's."""
    try:
        with open_text(data, progress, digest=digest, caps=caps) as text:
            yield text
    except JsonSyntaxError as e:
        raise NotThatFormat(NAME, f"not JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise NotThatFormat(NAME, f"not UTF-8 text ({e.reason} at byte {e.start})") from None

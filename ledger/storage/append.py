"""Appending a batch: idempotency, ledger rules, optimistic concurrency, then the chain.

The per-event work here is what every append pays, in Python, so it is written to run once per event
and no more: the data encoded once (the bytes hashed and stored), the event id, body and link built from
those bytes, and every row an insert writes (the event's and the keys that refuse a duplicate or a
conflict: its event id and observation id) taken from the typed event in hand instead of decoded again
from what was stored. What else an event implies (a cited work's keys, a standing check's works, the
inbound spans) is written by the projector (ledger/storage/projector.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol, cast

import msgspec
from blake3 import blake3

from ledger.model.codec import check_ijson_data, derived_id
from ledger.model.errors import Conflict, InvalidEvent
from ledger.model.events import (
    ChainLink,
    CitationObserved,
    CollectionChanged,
    Event,
    MeasurementObserved,
    PaperObserved,
    ResolutionObserved,
    StandingChecked,
    StoredEvent,
    WorkObserved,
)
from ledger.model.facts import Head
from ledger.model.instants import Clock, format_recorded, parse_near
from ledger.storage.derived.keys import EVENT, OBSERVATION, link_keys
from ledger.storage.derived.spans import CITATION, RESOLUTION, Step, link_step
from ledger.storage.sql import EventParams


class Rows(NamedTuple):
    """What one insert writes: each new event's row (the parameters of the events INSERT, in seq
    order), its keys, and each citation's or resolution's step."""

    events: list[EventParams]
    keys: list[tuple[str, int]]
    steps: list[Step]


class Encoded(NamedTuple):
    """What a caller that checked an event already made of it (a file's check pass): its data's
    canonical bytes (U+0000 refused), its event id (given or derived from those bytes) and its
    observed_at in UTC microseconds. An append given them uses them instead of making them again."""

    data: bytes
    event_id: str
    observed_us: int


class Needs(NamedTuple):
    """What an append of a batch will look up, known before its transaction: a group commit looks up
    every batch's at once (ledger/storage/group_tx.py)."""

    event_ids: list[str]
    observation_ids: list[str]
    streams: list[str]


def needs_of(events: Sequence[Event], expected_versions: Mapping[str, int] | None = None) -> Needs:
    """The ids, observations and streams (those known without a lookup) an append of `events` reads."""
    ids, oids, streams = [], [], list(expected_versions or {})
    encode = _CANONICAL.encode
    for e in events:
        type_ = _TYPES[type(e)]
        ids.append(e.event_id or derived_id(encode(e.data), e.observed_at, type_))
        if isinstance(e, CitationObserved):
            oids.append(e.data.observation_id)
            streams.append(f"paper:{e.data.citing_arxiv_id}")
        elif isinstance(e, ResolutionObserved):
            oids.append(e.data.observation_id)  # its stream is its citation's: known after a lookup
        else:
            streams.append(_stream(e, {}, None, 0))
    return Needs(ids, oids, streams)


class AppendTx(Protocol):
    """What a backend's write transaction offers an append."""

    def head(self) -> tuple[Head, int]: ...
    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]: ...
    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]: ...
    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]: ...
    def insert(self, rows: Rows) -> None: ...


class Appended(NamedTuple):
    """The answer for one event of a batch."""

    position: int
    seq: int
    event_id: str
    hash: str
    duplicate: bool


class AppendResult(NamedTuple):
    """The answer for a batch: one item per input event, and the head after it."""

    items: list[Appended]
    head: Head

    @property
    def appended(self) -> int:
        """How many events were new."""
        return sum(not i.duplicate for i in self.items)

    @property
    def duplicates(self) -> int:
        """How many events were already in the ledger (or earlier in the batch)."""
        return sum(i.duplicate for i in self.items)


_STANDING = "standing.checked"
WORK = "work.observed"
COLLECTION = "collection.changed"
_TYPES: dict[type, str] = {
    PaperObserved: "paper.observed",
    CitationObserved: CITATION,
    ResolutionObserved: RESOLUTION,
    StandingChecked: _STANDING,
    MeasurementObserved: "measurement.observed",
    WorkObserved: WORK,
    CollectionChanged: COLLECTION,
}
_BODY = (
    b'{"data":%b,"event_id":%b,"observed_at":%b,"recorded_at":%b,"seq":%d,"stream":%b,'
    b'"stream_version":%d,"type":%b}'
)
_CANONICAL = msgspec.json.Encoder(order="sorted")
_STRING = msgspec.json.Encoder()
_TYPE_JSON = {t: _STRING.encode(t) for t in _TYPES.values()}
_NUL = b"\\u0000"


def _place(places: Sequence[str] | None, index: int) -> str:
    return places[index] if places is not None else f"events[{index}]"


def append_batch(
    tx: AppendTx,
    events: Sequence[Event],
    expected_versions: Mapping[str, int] | None = None,
    places: Sequence[str] | None = None,
    *,
    clock: Clock,
    encoded: Sequence[Encoded] | None = None,
) -> AppendResult:
    """Append `events` atomically inside `tx`, recorded at `clock.now_us()` (UTC microseconds,
    never before the last recorded instant); raise (and write nothing) on any refusal. `encoded`, one
    per event: what a check of these events already made of them (`Encoded`), taken as it is."""
    # the tags as the interned constants of this module, so the loops below compare them by identity
    types = [_TYPES[type(e)] for e in events]
    observed: list[int] | None = None
    if encoded is not None:
        if len(encoded) != len(events):
            raise ValueError(f"{len(encoded)} encoded for {len(events)} events: one each")
        datas = [x.data for x in encoded]
        ids = [x.event_id for x in encoded]
        observed = [x.observed_us for x in encoded]
    else:
        encode = _CANONICAL.encode
        datas = [encode(e.data) for e in events]
        ids = []
        for i, e in enumerate(events):
            data = datas[i]
            if _NUL in data:  # the encoder escapes U+0000, so the escape's absence proves there is none
                check_ijson_data(data, _place(places, i))
            ids.append(e.event_id or derived_id(data, e.observed_at, types[i]))
    head, last_recorded = tx.head()
    stored = tx.existing(sorted(set(ids)))
    oids = sorted({e.data.observation_id for e in events if isinstance(e, _OBSERVED)})
    citing = tx.citing_papers(oids) if oids else {}

    items: list[Appended | None] = [None] * len(events)
    new: list[tuple[int, str]] = []  # (position, stream) of each new event, in batch order
    first_at: dict[str, int] = {}  # event id -> position of its first new occurrence
    for i, e in enumerate(events):
        event_id = ids[i]
        prior = stored.get(event_id)
        if prior is not None:
            if prior.type != types[i] or prior.observed_at != e.observed_at or prior.data != datas[i]:
                raise Conflict(
                    f"{_place(places, i)}.event_id: {event_id} is already stored (seq {prior.seq}) "
                    "with different content",
                    details={"index": i, "event_id": event_id, "seq": prior.seq},
                )
            items[i] = Appended(i, prior.seq, event_id, prior.hash, True)
            continue
        earlier = first_at.get(event_id)
        if earlier is not None:
            same = (types[i], e.observed_at, datas[i])
            if (types[earlier], events[earlier].observed_at, datas[earlier]) != same:
                raise Conflict(
                    f"{_place(places, i)}.event_id: {event_id} appears earlier in the batch "
                    f"(index {earlier}) with different content",
                    details={"index": i, "event_id": event_id, "earlier": earlier},
                )
            continue  # answered once the earlier one has its seq
        first_at[event_id] = i
        new.append((i, _stream(e, citing, places, i)))

    streams = sorted({s for _, s in new} | set(expected_versions or {}))
    versions = tx.stream_versions(streams) if streams else {}
    if expected_versions and new:
        for stream, expected in sorted(expected_versions.items()):
            current = versions.get(stream, 0)
            if current != expected:
                raise Conflict(
                    f"expected_versions: stream {stream} is at version {current}, not {expected}",
                    details={"stream": stream, "expected": expected, "current": current},
                )

    recorded_us = max(clock.now_us(), last_recorded)
    recorded_at = format_recorded(recorded_us)
    rows = Rows([], [], [])
    events_, keys, steps = rows.events, rows.keys, rows.steps
    prev, seq = head.hash, head.seq
    prev_digest = bytes.fromhex(prev)  # hash(e) = blake3(bytes.fromhex(prev_hash) || body(e))
    # body(e) of chain.body_bytes: its fields in code-point order, each string JSON-encoded by the same
    # encoder (a stream or an instant repeats across a batch: each is encoded once)
    strings: dict[str, bytes] = {}
    string = _STRING.encode
    recorded_json = string(recorded_at)
    for i, stream in new:
        e, type_, data, event_id = events[i], types[i], datas[i], ids[i]
        seq += 1
        version = versions.get(stream, 0) + 1
        versions[stream] = version
        observed_at = e.observed_at
        if (observed_json := strings.get(observed_at)) is None:
            observed_json = strings[observed_at] = string(observed_at)
        if (stream_json := strings.get(stream)) is None:
            stream_json = strings[stream] = string(stream)
        body = _BODY % (
            data,
            string(event_id),
            observed_json,
            recorded_json,
            seq,
            stream_json,
            version,
            _TYPE_JSON[type_],
        )
        digest = blake3(prev_digest + body).digest()
        h = digest.hex()
        observed_us = parse_near(observed_at) if observed is None else observed[i]
        events_.append(
            (seq, event_id, stream, version, type_, observed_at, observed_us, recorded_at, recorded_us,
             data.decode(), prev, h)
        )  # fmt: skip
        if isinstance(e, CitationObserved):
            c = e.data
            keys.append((EVENT + event_id, seq))
            keys.append((OBSERVATION + c.observation_id, seq))
            steps.append(Step(c.observation_id, seq, type_, observed_us, recorded_us, c.citing_arxiv_id,
                              c.reference_index, None))  # fmt: skip
        elif isinstance(e, ResolutionObserved):
            r = e.data
            keys.append((EVENT + event_id, seq))
            keys.append((OBSERVATION + r.observation_id, seq))
            steps.append(Step(r.observation_id, seq, type_, observed_us, recorded_us, None, None,
                              r.cited_arxiv_id))  # fmt: skip
        else:
            keys.append((EVENT + event_id, seq))
        items[i] = Appended(i, seq, event_id, h, False)
        prev, prev_digest = h, digest
    for i in range(len(events)):
        if items[i] is None:  # a repeat within the batch: same answer as the first
            first = items[first_at[ids[i]]]
            assert first is not None
            items[i] = first._replace(position=i, duplicate=True)
    if rows.events:
        tx.insert(rows)
    return AppendResult(cast(list[Appended], items), Head(seq, prev))


_OBSERVED = (CitationObserved, ResolutionObserved)


def _stream(event: Event, citing: dict[str, str], places: Sequence[str] | None, i: int) -> str:
    """Derive the stream; records observation ownership as the batch goes."""
    if isinstance(event, CitationObserved):
        oid, paper = event.data.observation_id, event.data.citing_arxiv_id
        owner = citing.setdefault(oid, paper)
        if owner != paper:
            raise InvalidEvent(
                f"{_place(places, i)}.data.citing_arxiv_id",
                f"observation {oid} belongs to paper {owner}, not {paper}",
            )
        return f"paper:{paper}"
    if isinstance(event, ResolutionObserved):
        oid = event.data.observation_id
        if oid not in citing:
            raise InvalidEvent(
                f"{_place(places, i)}.data.observation_id",
                f"no citation.observed for observation {oid} in the ledger or earlier in the batch",
            )
        return f"paper:{citing[oid]}"
    if isinstance(event, StandingChecked):
        return f"source:{event.data.source}"
    if isinstance(event, WorkObserved):
        return f"work:{event.data.doi}"
    if isinstance(event, CollectionChanged):
        return f"collection:{event.data.name}"
    return f"paper:{event.data.arxiv_id}"


def rows_of(links: Sequence[ChainLink]) -> Rows:
    """The rows an insert writes for events already chained (a copy between stores): as an append
    would have built them, here derived from the stored bytes."""
    rows = Rows([], [], [])
    for link in links:
        e = link.event
        rows.events.append(
            (e.seq, e.event_id, e.stream, e.stream_version, e.type, e.observed_at, link.observed_us,
             e.recorded_at, link.recorded_us, e.data.decode(), e.prev_hash, e.hash)
        )  # fmt: skip
        rows.keys.extend((k, e.seq) for k in link_keys(link))
        step = link_step(link)
        if step is not None:
            rows.steps.append(step)
    return rows

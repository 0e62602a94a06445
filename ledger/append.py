"""Appending a batch: idempotency, ledger rules, optimistic concurrency, then the chain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from .chain import body_bytes, link_hash
from .codec import canonical, check_ijson_data, decode_data, derived_event_id, type_of
from .errors import Conflict, InvalidEvent
from .events import ChainLink, CitationObserved, Event, ResolutionObserved, StandingChecked, StoredEvent
from .facts import CheckWorkRow, Head
from .instants import format_recorded, now_us, parse_ts


class AppendTx(Protocol):
    """What a backend's write transaction offers an append."""

    def head(self) -> tuple[Head, int]: ...
    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]: ...
    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]: ...
    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]: ...
    def insert(self, links: Sequence[ChainLink], checks: Sequence[CheckWorkRow]) -> None: ...


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


class _Pending(NamedTuple):
    position: int
    event: Event
    event_id: str
    type: str
    data: bytes


def _place(places: Sequence[str] | None, index: int) -> str:
    return places[index] if places is not None else f"events[{index}]"


def append_batch(
    tx: AppendTx,
    events: Sequence[Event],
    expected_versions: Mapping[str, int] | None = None,
    places: Sequence[str] | None = None,
) -> AppendResult:
    """Append `events` atomically inside `tx`; raise (and write nothing) on any refusal."""
    pending = []
    for i, e in enumerate(events):
        data = canonical(e.data)
        check_ijson_data(data, _place(places, i))
        pending.append(_Pending(i, e, e.event_id or derived_event_id(e, data), type_of(e), data))
    head, last_recorded = tx.head()
    stored = tx.existing(sorted({p.event_id for p in pending}))
    oids = sorted(
        {
            p.event.data.observation_id
            for p in pending
            if isinstance(p.event, CitationObserved | ResolutionObserved)
        }
    )
    citing = tx.citing_papers(oids) if oids else {}

    items: list[Appended | None] = [None] * len(pending)
    new: list[tuple[_Pending, str]] = []
    in_batch: dict[str, _Pending] = {}
    for p in pending:
        where = _place(places, p.position)
        prior = stored.get(p.event_id)
        earlier = in_batch.get(p.event_id)
        same = (p.type, p.event.observed_at, p.data)
        if prior is not None:
            if (prior.type, prior.observed_at, prior.data) != same:
                raise Conflict(
                    f"{where}.event_id: {p.event_id} is already stored (seq {prior.seq}) "
                    "with different content",
                    details={"index": p.position, "event_id": p.event_id, "seq": prior.seq},
                )
            items[p.position] = Appended(p.position, prior.seq, p.event_id, prior.hash, True)
            continue
        if earlier is not None:
            if (earlier.type, earlier.event.observed_at, earlier.data) != same:
                raise Conflict(
                    f"{where}.event_id: {p.event_id} appears earlier in the batch "
                    f"(index {earlier.position}) with different content",
                    details={"index": p.position, "event_id": p.event_id, "earlier": earlier.position},
                )
            continue  # answered once the earlier one has its seq
        in_batch[p.event_id] = p
        new.append((p, _stream(p.event, citing, where)))

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

    recorded_us = max(now_us(), last_recorded)
    recorded_at = format_recorded(recorded_us)
    links: list[ChainLink] = []
    checks: list[CheckWorkRow] = []
    prev, seq = head.hash, head.seq
    for p, stream in new:
        seq += 1
        version = versions.get(stream, 0) + 1
        versions[stream] = version
        observed_at = p.event.observed_at
        body = body_bytes(p.data, p.event_id, observed_at, recorded_at, seq, stream, version, p.type)
        h = link_hash(prev, body)
        event = StoredEvent(
            seq, p.event_id, stream, version, p.type, observed_at, recorded_at, p.data, prev, h
        )
        link = ChainLink(event, parse_ts(observed_at), recorded_us)
        links.append(link)
        if isinstance(p.event, StandingChecked):
            checks.extend(check_rows(p.event, seq, link.observed_us, recorded_us))
        items[p.position] = Appended(p.position, seq, p.event_id, h, False)
        prev = h
    for p in pending:
        if items[p.position] is None:  # a repeat within the batch: same answer as the first
            first = items[in_batch[p.event_id].position]
            assert first is not None
            items[p.position] = first._replace(position=p.position, duplicate=True)
    if links:
        tx.insert(links, checks)
    return AppendResult([i for i in items if i is not None], Head(seq, prev))


def _stream(event: Event, citing: dict[str, str], where: str) -> str:
    """Derive the stream; records observation ownership as the batch goes."""
    if isinstance(event, StandingChecked):
        return f"source:{event.data.source}"
    if isinstance(event, CitationObserved):
        oid, paper = event.data.observation_id, event.data.citing_arxiv_id
        owner = citing.setdefault(oid, paper)
        if owner != paper:
            raise InvalidEvent(
                f"{where}.data.citing_arxiv_id",
                f"observation {oid} belongs to paper {owner}, not {paper}",
            )
        return f"paper:{paper}"
    if isinstance(event, ResolutionObserved):
        oid = event.data.observation_id
        if oid not in citing:
            raise InvalidEvent(
                f"{where}.data.observation_id",
                f"no citation.observed for observation {oid} in the ledger or earlier in the batch",
            )
        return f"paper:{citing[oid]}"
    return f"paper:{event.data.arxiv_id}"


def check_rows(event: StandingChecked, seq: int, observed_us: int, recorded_us: int) -> list[CheckWorkRow]:
    """The check_works rows of a standing check: one per covered work, '*' for every work."""
    source = event.data.source
    if event.data.work_ids is None:
        return [CheckWorkRow("*", source, observed_us, seq, recorded_us, canonical(event.data.notices))]
    by_work: dict[str, list[Any]] = {w: [] for w in event.data.work_ids}
    for n in event.data.notices:
        by_work[n.work_id].append(n)  # type: ignore[index]
    return [
        CheckWorkRow(w, source, observed_us, seq, recorded_us, canonical(ns)) for w, ns in by_work.items()
    ]


def link_checks(link: ChainLink) -> list[CheckWorkRow]:
    """The check_works rows a stored event implies (none unless it is a standing check)."""
    e = link.event
    if e.type != "standing.checked":
        return []
    event = StandingChecked(observed_at=e.observed_at, data=decode_data(e.type, e.data))
    return check_rows(event, e.seq, link.observed_us, link.recorded_us)

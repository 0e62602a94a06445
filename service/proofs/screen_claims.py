"""What a screen's bundle claims, row by row, and how a row is held to the events it names.

A claim is one screen row reduced to what its two events can confirm: the citing paper, the
reference (observation), the work, the notice (the standing check's seq, its source, kind and notice
DOI, and when the ledger recorded it) and the resolution (its seq, status and resolver). The bundle
writer and the offline checker use the same rules (claim_problems), so a bundle the ledger writes is
one its checker accepts, and any claim the events do not carry is named.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ledger.model.events import NoticeKind
from ledger.model.instants import parse_ts

SCREEN_SCHEMA = "citation-ledger.screen-bundle.v1"
RESOLUTION = "resolution.observed"
STANDING = "standing.checked"
VERIFIED = ("verified_exact", "verified_fuzzy")


class NoticeClaim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The notice a row shows: the standing.checked event carrying it, and what it says."""

    seq: int
    source: str
    kind: NoticeKind
    notice_doi: str | None
    recorded_at: str  # when the ledger learned it: the event's recorded_at, verbatim


class ResolutionClaim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The resolution a row shows: the resolution.observed event tying the reference to the work."""

    seq: int
    status: Literal["verified_exact", "verified_fuzzy"]
    resolver_source: str | None


class Claim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One screen row: `citing`'s reference `observation_id` resolves to `work_id`, which carries the
    notice. Every field is checked against the events; a row carries nothing unchecked."""

    citing: str
    observation_id: str
    work_id: str
    notice: NoticeClaim
    resolution: ResolutionClaim


class ScreenHead(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the screen was: the instants it answered for, the head it was computed at, and what was
    asked (the collection, the filters: shown as given, not checkable from the rows)."""

    as_of: str
    known_at: str | None
    tree_size: int
    query: dict[str, Any]


class _Work(msgspec.Struct, frozen=True):
    work_id: str | None = None


class _Notice(msgspec.Struct, frozen=True):
    work_id: str | None = None
    kind: str | None = None
    notice_doi: str | None = None


class _Resolution(msgspec.Struct, frozen=True):
    observation_id: str
    status: str
    resolver_source: str | None = None
    cited_work: _Work | None = None


class _Standing(msgspec.Struct, frozen=True):
    source: str
    notices: list[_Notice]


_RES = msgspec.json.Decoder(_Resolution)
_STANDING = msgspec.json.Decoder(_Standing)


class Facts(msgspec.Struct, frozen=True):
    """What the claims can be held to of one event: its envelope fields and, for a standing check,
    the notices of the works the claims name, as (work_id, kind, notice_doi)."""

    seq: int
    type: str
    stream: str
    observed_at: str
    recorded_at: str
    resolution: _Resolution | None = None
    source: str | None = None
    notices: frozenset[tuple[str, str, str | None]] = frozenset()


def facts_of(
    seq: int, type_: str, stream: str, observed_at: str, recorded_at: str, data: bytes, works: set[str]
) -> Facts:
    """The facts of one event whose data bytes are valid for its type (only the notices of `works`
    are kept: a source's check may list thousands)."""
    if type_ == RESOLUTION:
        return Facts(seq, type_, stream, observed_at, recorded_at, resolution=_RES.decode(data))
    if type_ == STANDING:
        s = _STANDING.decode(data)
        kept = frozenset(
            (n.work_id, str(n.kind), n.notice_doi)
            for n in s.notices
            if n.work_id is not None and n.work_id in works
        )
        return Facts(seq, type_, stream, observed_at, recorded_at, source=s.source, notices=kept)
    return Facts(seq, type_, stream, observed_at, recorded_at)


def claim_problems(where: str, c: Claim, facts: dict[int, Facts], head: ScreenHead) -> list[str]:
    """Each way claim `c` (named `where`) is not what its events say, or not of the screen's instants."""
    out: list[str] = []
    n, r = facts.get(c.notice.seq), facts.get(c.resolution.seq)
    if n is None:
        out.append(f"{where}: its notice event seq {c.notice.seq} is not in the bundle (or not proven)")
    elif n.type != STANDING:
        out.append(f"{where}: its notice event seq {n.seq} is a {n.type}, not a {STANDING}")
    else:
        if (c.work_id, c.notice.kind, c.notice.notice_doi) not in n.notices:
            out.append(
                f"{where}: the notice event seq {n.seq} carries no {c.notice.kind} notice "
                f"(notice DOI {c.notice.notice_doi}) for work {c.work_id!r}"
            )
        if n.source != c.notice.source:
            out.append(
                f"{where}: the notice event seq {n.seq} is from source {n.source!r}, not {c.notice.source!r}"
            )
        if n.recorded_at != c.notice.recorded_at:
            out.append(
                f"{where}: the notice event seq {n.seq} was recorded at {n.recorded_at}, "
                f"not {c.notice.recorded_at}"
            )
    if r is None:
        out.append(
            f"{where}: its resolution event seq {c.resolution.seq} is not in the bundle (or not proven)"
        )
    elif r.type != RESOLUTION or r.resolution is None:
        out.append(f"{where}: its resolution event seq {r.seq} is a {r.type}, not a {RESOLUTION}")
    else:
        out += _resolution_problems(where, c, r, r.resolution)
    for e in (x for x in (n, r) if x is not None):
        out += _instant_problems(where, e, head)
    return out


def _resolution_problems(where: str, c: Claim, r: Facts, d: _Resolution) -> list[str]:
    at = f"{where}: the resolution event seq {r.seq}"
    out = []
    if r.stream != f"paper:{c.citing}":
        out.append(f"{at} is on the stream {r.stream!r}, not the citing paper's 'paper:{c.citing}'")
    if d.observation_id != c.observation_id:
        out.append(f"{at} resolves observation {d.observation_id}, not {c.observation_id}")
    if d.status not in VERIFIED or d.status != c.resolution.status:
        out.append(f"{at} has status {d.status!r}, not {c.resolution.status!r}")
    cited = None if d.cited_work is None else d.cited_work.work_id
    if cited != c.work_id:
        out.append(f"{at} ties the reference to work {cited!r}, not {c.work_id!r}")
    if d.resolver_source != c.resolution.resolver_source:
        out.append(f"{at} is by resolver {d.resolver_source!r}, not {c.resolution.resolver_source!r}")
    return out


def _instant_problems(where: str, e: Facts, head: ScreenHead) -> list[str]:
    """An event shown in a screen as of T, known at K, was observed by T and recorded by K."""
    out = []
    try:
        if parse_ts(e.observed_at) > parse_ts(head.as_of):
            out.append(
                f"{where}: event seq {e.seq} was observed at {e.observed_at}, after the screen's as_of "
                f"{head.as_of}"
            )
        if head.known_at is not None and parse_ts(e.recorded_at) > parse_ts(head.known_at):
            out.append(
                f"{where}: event seq {e.seq} was recorded at {e.recorded_at}, after the screen's known_at "
                f"{head.known_at}"
            )
    except ValueError as err:
        out.append(f"{where}: an unreadable instant ({err})")
    return out


def claim_key(c: Claim) -> tuple[str, int, str, str | None, int]:
    """What makes two claims the same row: the reference, the notice and the resolution."""
    return (c.observation_id, c.notice.seq, c.notice.kind, c.notice.notice_doi, c.resolution.seq)

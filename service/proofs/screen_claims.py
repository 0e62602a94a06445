"""What a screen's bundle claims, row by row, and how a row is held to the events it names.

A claim is one screen row (service/screen.py's item) reduced to what its events can confirm: the citing
paper and its reference (the citation event: its index), the work, the resolution (its event: status,
resolver, when observed), and the notice (the standing check shown: its source, when observed, the notice
as the check lists it; and the check recorded when the ledger learned it). The bundle writer and the
offline checker use the same rules (claim_problems), so a bundle the ledger writes is one its checker
accepts, and any claim the events do not carry is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ledger.model.codec import canonical
from ledger.model.events import NoticeKind
from ledger.model.instants import parse_ts
from ledger.model.jsonvalue import JsonInObject

SCREEN_SCHEMA = "citation-ledger.screen-bundle.v1"
CITATION = "citation.observed"
RESOLUTION = "resolution.observed"
STANDING = "standing.checked"
VERIFIED = ("verified_exact", "verified_fuzzy")
# the fields of a notice as a check lists it (ledger/model/events.py Notice), beside its work_id
NOTICE_FIELDS = ("kind", "notice_doi", "record_id", "raw_type", "reasons", "notice_date", "url")


class NoticeClaim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The notice a row shows: the standing check listing it (`check_seq`, its source and observed_at),
    the notice's fields as listed, and the check recorded when the ledger learned it (`learned_seq`,
    recorded at `learned_at`; both null when the row names none)."""

    check_seq: int
    source: str
    observed_at: str
    kind: NoticeKind
    notice_doi: str | None
    record_id: str | None
    raw_type: str | None
    reasons: list[str]
    notice_date: str | None
    url: str | None
    learned_seq: int | None
    learned_at: str | None


class ResolutionClaim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The resolution a row shows (its event `seq`) tying the reference (its citation event
    `citation_seq`) to the work."""

    seq: int
    citation_seq: int
    status: Literal["verified_exact", "verified_fuzzy"]
    resolver_source: str | None
    observed_at: str


class Claim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One screen row: reference `reference_index` of `citing` (observation `observation_id`) resolves
    to `work_id`, which carries the notice. Every field is checked against the events; a row carries
    nothing unchecked."""

    citing: str
    reference_index: int
    observation_id: str
    work_id: str
    resolution: ResolutionClaim
    notice: NoticeClaim

    def seqs(self) -> set[int]:
        """The events this row names."""
        n, r = self.notice, self.resolution
        return {r.citation_seq, r.seq, n.check_seq, *([] if n.learned_seq is None else [n.learned_seq])}

    def notice_text(self) -> str:
        """The notice as its check lists it, as canonical JSON (the key its events' notices are held in)."""
        return notice_text({"work_id": self.work_id, **{k: getattr(self.notice, k) for k in NOTICE_FIELDS}})


def notice_text(notice: JsonInObject) -> str:
    """A notice object (work_id and NOTICE_FIELDS) as canonical JSON."""
    return canonical({k: notice.get(k) for k in ("work_id", *NOTICE_FIELDS)}).decode()


def claim_of(item: Mapping[str, Any]) -> Claim:
    """The claim of one screen item as service/screen.py `item_json` gives it (its citing paper,
    reference, work, resolution and notice): KeyError naming a member it lacks, msgspec.ValidationError
    for one that is not what a claim holds (an unresolved status, say)."""
    r, n = item["resolution"], item["notice"]
    return msgspec.convert(
        {
            "citing": item["citing"]["arxiv_id"],
            "reference_index": item["reference_index"],
            "observation_id": item["observation_id"],
            "work_id": item["work"]["work_id"],
            "resolution": {k: r[k] for k in ResolutionClaim.__struct_fields__},
            "notice": {k: n[k] for k in NoticeClaim.__struct_fields__},
        },
        Claim,
    )


class ScreenHead(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the screen was: the instants it answered for, the head it was computed at, and what was
    asked (the collection, the filters: shown as given, not checkable from the rows)."""

    as_of: str
    known_at: str | None
    tree_size: int
    query: dict[str, Any]


class _Work(msgspec.Struct, frozen=True):
    work_id: str | None = None


class _Reference(msgspec.Struct, frozen=True):
    observation_id: str
    status: str | None = None
    resolver_source: str | None = None
    cited_work: _Work | None = None
    citing_arxiv_id: str | None = None
    reference_index: int | None = None


class _Standing(msgspec.Struct, frozen=True):
    source: str
    notices: list[dict[str, Any]]


_REF = msgspec.json.Decoder(_Reference)
_STANDING = msgspec.json.Decoder(_Standing)


class Facts(msgspec.Struct, frozen=True):
    """What the claims can be held to of one event: its envelope fields; of a citation or resolution
    what a row shows of it; of a standing check its source and the notices (as notice_text) of the
    works the claims name."""

    seq: int
    type: str
    stream: str
    observed_at: str
    recorded_at: str
    reference: _Reference | None = None
    source: str | None = None
    notices: frozenset[str] = frozenset()


def facts_of(
    seq: int, type_: str, stream: str, observed_at: str, recorded_at: str, data: bytes, works: set[str]
) -> Facts:
    """The facts of one event whose data bytes are valid for its type (only the notices of `works`
    are kept: a source's check may list thousands)."""
    if type_ in (CITATION, RESOLUTION):
        return Facts(seq, type_, stream, observed_at, recorded_at, reference=_REF.decode(data))
    if type_ == STANDING:
        s = _STANDING.decode(data)
        kept = frozenset(notice_text(n) for n in s.notices if n.get("work_id") in works)
        return Facts(seq, type_, stream, observed_at, recorded_at, source=s.source, notices=kept)
    return Facts(seq, type_, stream, observed_at, recorded_at)


def claim_problems(where: str, c: Claim, facts: Mapping[int, Facts], head: ScreenHead) -> list[str]:
    """Each way claim `c` (named `where`) is not what its events say, or not of the screen's instants."""
    n, r = c.notice, c.resolution
    out: list[str] = []
    named = [
        ("citation", r.citation_seq, CITATION),
        ("resolution", r.seq, RESOLUTION),
        ("notice", n.check_seq, STANDING),
    ]
    if n.learned_seq is not None:
        named.append(("learned notice", n.learned_seq, STANDING))
    elif n.learned_at is not None:
        out.append(f"{where}: it says when the ledger learned the notice but names no learned_seq")
    found: dict[str, Facts] = {}
    for role, seq, type_ in named:
        e = facts.get(seq)
        if e is None:
            out.append(f"{where}: its {role} event seq {seq} is not in the bundle (or not proven)")
        elif e.type != type_:
            out.append(f"{where}: its {role} event seq {seq} is a {e.type}, not a {type_}")
        else:
            found[role] = e
            out += _instant_problems(where, e, head)
    if "citation" in found:
        out += _reference_problems(f"{where}: the citation event seq {r.citation_seq}", c, found["citation"])
    if "resolution" in found:
        out += _reference_problems(f"{where}: the resolution event seq {r.seq}", c, found["resolution"])
        out += _resolution_problems(f"{where}: the resolution event seq {r.seq}", c, found["resolution"])
    for role in ("notice", "learned notice"):
        if role in found:
            out += _notice_problems(f"{where}: the {role} event seq {found[role].seq}", c, found[role], role)
    return out


def _reference_problems(at: str, c: Claim, e: Facts) -> list[str]:
    """A citation or resolution of the row's reference: on the citing paper's stream, of its observation."""
    d = e.reference
    assert d is not None
    out = []
    if e.stream != f"paper:{c.citing}":
        out.append(f"{at} is on the stream {e.stream!r}, not the citing paper's 'paper:{c.citing}'")
    if d.observation_id != c.observation_id:
        out.append(f"{at} is of observation {d.observation_id}, not {c.observation_id}")
    if e.type == CITATION and d.reference_index != c.reference_index:
        out.append(f"{at} gives reference index {d.reference_index}, not {c.reference_index}")
    return out


def _resolution_problems(at: str, c: Claim, e: Facts) -> list[str]:
    d, r = e.reference, c.resolution
    assert d is not None
    out = []
    if d.status not in VERIFIED or d.status != r.status:
        out.append(f"{at} has status {d.status!r}, not {r.status!r}")
    cited = None if d.cited_work is None else d.cited_work.work_id
    if cited != c.work_id:
        out.append(f"{at} ties the reference to work {cited!r}, not {c.work_id!r}")
    if d.resolver_source != r.resolver_source:
        out.append(f"{at} is by resolver {d.resolver_source!r}, not {r.resolver_source!r}")
    if not _same_instant(e.observed_at, r.observed_at):
        out.append(f"{at} was observed at {e.observed_at}, not {r.observed_at}")
    return out


def _notice_problems(at: str, c: Claim, e: Facts, role: str) -> list[str]:
    n = c.notice
    out = []
    if c.notice_text() not in e.notices:
        out.append(
            f"{at} lists no such {n.kind} notice (notice DOI {n.notice_doi}, record {n.record_id}) "
            f"for work {c.work_id!r}"
        )
    if e.source != n.source:
        out.append(f"{at} is from source {e.source!r}, not {n.source!r}")
    if role == "notice" and not _same_instant(e.observed_at, n.observed_at):
        out.append(f"{at} was observed at {e.observed_at}, not {n.observed_at}")
    if role == "learned notice" and not _same_instant(e.recorded_at, n.learned_at):
        out.append(f"{at} was recorded at {e.recorded_at}, not {n.learned_at}")
    return out


def _same_instant(a: str, b: str | None) -> bool:
    """The same instant, however spelt (a row shows instants as the ledger formats them)."""
    try:
        return b is not None and parse_ts(a) == parse_ts(b)
    except ValueError:
        return a == b


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


def claim_key(c: Claim) -> tuple[str, int, str, int]:
    """What makes two claims the same row: the reference, the resolution, the check and the notice."""
    return (c.observation_id, c.resolution.seq, c.notice_text(), c.notice.check_seq)

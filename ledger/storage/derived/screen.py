"""The screen's index: which references name which work, and which works some standing check lists a
notice for. Both are pure functions of a batch of stored events, so an append, a copy, the backfill of
an older ledger and `ledger verify` derive the same rows.

A screen (service/screen.py) reads the works with notices first, then only the references that ever
named one of them: its cost follows the references it can show, not the size of the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import msgspec

from ledger.model.codec import canonical

CITATION = "citation.observed"
RESOLUTION = "resolution.observed"
STANDING = "standing.checked"
TYPES = (CITATION, RESOLUTION, STANDING)
REF_COLUMNS = "work_id, seq, observation_id, citing"
NOTICE_COLUMNS = "work_id, seq, ordinal, source, observed_us, recorded_us, notice"
INSERT_REFS = f"INSERT INTO screen_refs ({REF_COLUMNS}) VALUES (?, ?, ?, ?)"
INSERT_NOTICES = f"INSERT INTO screen_notices ({NOTICE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"


class RefRow(NamedTuple):
    """A citation or resolution whose cited work has a work_id: the work, the event, its observation
    and the citing paper (the event's stream names it for both kinds)."""

    work_id: str
    seq: int
    observation_id: str
    citing: str


class NoticeRow(NamedTuple):
    """One notice of a standing check, under the work it names (its canonical JSON)."""

    work_id: str
    seq: int
    ordinal: int  # its place among the check's notices of this work (a notice's text is no key)
    source: str
    observed_us: int
    recorded_us: int
    notice: str


class _Work(msgspec.Struct):
    work_id: str | None = None


class _Ref(msgspec.Struct):
    observation_id: str
    cited_work: _Work | None = None


class _Check(msgspec.Struct):
    source: str
    notices: list[dict[str, Any]]


_REF = msgspec.json.Decoder(_Ref)
_CHECK = msgspec.json.Decoder(_Check)


def event_rows(
    seq: int, type_: str, stream: str, observed_us: int, recorded_us: int, data: bytes | str
) -> tuple[list[RefRow], list[NoticeRow]]:
    """The rows one stored event gives (none for a type the screen does not read)."""
    if type_ in (CITATION, RESOLUTION):
        r = _REF.decode(data)
        w = r.cited_work
        if w is None or w.work_id is None:
            return [], []
        return [RefRow(w.work_id, seq, r.observation_id, stream.removeprefix("paper:"))], []
    if type_ != STANDING:
        return [], []
    c = _CHECK.decode(data)
    by_work: dict[str, set[str]] = {}
    for n in c.notices:
        if n.get("work_id") is not None:
            by_work.setdefault(n["work_id"], set()).add(canonical(n).decode())
    return [], [
        NoticeRow(w, seq, i, c.source, observed_us, recorded_us, text)
        for w in sorted(by_work)
        for i, text in enumerate(sorted(by_work[w]))
    ]


def batch_rows(events: Iterable[Sequence[Any]]) -> tuple[list[RefRow], list[NoticeRow]]:
    """The rows of a batch of events, each given as the events table's insert parameters (seq,
    event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, data,
    ...)."""
    refs: list[RefRow] = []
    notices: list[NoticeRow] = []
    for e in events:
        if e[4] not in TYPES:
            continue
        r, n = event_rows(e[0], e[4], e[2], e[6], e[8], e[9])
        refs += r
        notices += n
    return refs, notices

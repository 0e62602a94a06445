"""The screen's index: which references name which work, and which works some standing check lists a
notice for. Both are pure functions of a batch of stored events: the projector keeps them following
the log (`apply`: the references' rows derived by the database itself), a reader folds in the events
past the projection's position (`BOUNDS`), and the backfill of an older ledger and `ledger verify`
derive the same rows.

A screen (service/screen.py) reads the works with notices first, then only the references that ever
named one of them: its cost follows the references it can show, not the size of the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

import msgspec

from ledger.model.codec import canonical
from ledger.model.events import ChainLink, Notice
from ledger.storage.sql import Connection, Cursor, Dialect, SqlParams, first, integer

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
    notices: list[Notice]  # as stored: each encodes to the canonical JSON it was hashed as


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
    return [], notice_rows_of(seq, c.source, c.notices, observed_us, recorded_us)


def notice_rows_of(
    seq: int, source: str, notices: Iterable[Notice], observed_us: int, recorded_us: int
) -> list[NoticeRow]:
    """The notice rows of a standing check with this source and these notices (decoded)."""
    by_work: dict[str, set[str]] = {}
    for n in notices:
        if n.work_id is not None:
            by_work.setdefault(n.work_id, set()).add(canonical(n).decode())
    return [
        NoticeRow(w, seq, i, source, observed_us, recorded_us, text)
        for w in sorted(by_work)
        for i, text in enumerate(sorted(by_work[w]))
    ]


def batch_rows(links: Iterable[ChainLink]) -> tuple[list[RefRow], list[NoticeRow]]:
    """The rows of a batch of stored events."""
    refs: list[RefRow] = []
    notices: list[NoticeRow] = []
    for link in links:
        e = link.event
        if e.type not in TYPES:
            continue
        r, n = event_rows(e.seq, e.type, e.stream, link.observed_us, link.recorded_us, e.data)
        refs += r
        notices += n
    return refs, notices


# -- the projection: kept by the projector (ledger/storage/projector.py), folded by readers -----------

NAME = "screen"
# the projection's position and the head: what a reader folds lies between them
BOUNDS = (
    f"SELECT coalesce((SELECT seq FROM projections WHERE name = '{NAME}'), 0), "
    "(SELECT coalesce(max(seq), 0) FROM events)"
)


class _StandingEvent(NamedTuple):
    """The columns `_STANDING_EVENTS` selects, in order."""

    seq: int
    type: str
    stream: str
    observed_us: int
    recorded_us: int
    data: str


class Queries(Protocol):
    """What the screen's rule asks of a store: its dialect and statements on a connection."""

    @property
    def dialect(self) -> Dialect: ...

    def query(self, conn: Connection, sql: str, params: SqlParams = ...) -> Cursor: ...

    def query_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None: ...


_STANDING_EVENTS = (
    "SELECT seq, type, stream, observed_us, recorded_us, data FROM events "
    f"WHERE seq > ? AND seq <= ? AND type = '{STANDING}' ORDER BY seq"
)


_WORK_ID = '"work_id":"'


def refs_select(d: Dialect, works: bool = False) -> str:
    """SELECT the screen_refs rows (REF_COLUMNS) of the events seq > ? AND seq <= ?, derived by the
    database from the events' data, no event decoded in Python (with `works`, only of the works a third
    parameter lists, bound by `d.bind_list`)."""
    # the stored data is canonical JSON (no space after a colon): an event whose cited work has a
    # work_id holds this text, and searching the text is cheaper than parsing each event (most cite none)
    holds = "instr" if d.json_lists else "strpos"
    where = (
        f"seq > ? AND seq <= ? AND type IN ('{CITATION}', '{RESOLUTION}') AND {holds}(data, '{_WORK_ID}') > 0"
    )
    citing = "CASE WHEN substr(stream, 1, 6) = 'paper:' THEN substr(stream, 7) ELSE stream END"
    if d.json_lists:
        work, oid = "json_extract(data, '$.cited_work.work_id')", "json_extract(data, '$.observation_id')"
    else:
        work, oid = "(j #>> '{cited_work,work_id}')", "(j ->> 'observation_id')"
    inner = d.parsed(f"{work} AS work_id, seq, {oid} AS observation_id, {citing} AS citing", where)
    only = f" AND {d.any_of('work_id')}" if works else ""
    return f"SELECT {REF_COLUMNS} FROM ({inner}) AS r WHERE work_id IS NOT NULL{only}"


def notice_rows(store: Queries, conn: Connection, after: int, upto: int) -> list[NoticeRow]:
    """The screen_notices rows of the standing checks seq > after and <= upto: a notice's key is its
    canonical JSON, which only Python's encoder writes (checks are few beside the references)."""
    rows = store.query(conn, _STANDING_EVENTS, (after, upto)).fetchall()
    return [n for r in rows for n in event_rows(*_StandingEvent._make(r))[1]]


def apply(store: Queries, conn: Connection, after: int, upto: int) -> None:
    """The projector's rule: the rows of the events in (after, upto], the references' by one
    INSERT ... SELECT the database derives, the notices' from Python (`store` a SqlStore)."""
    store.query(conn, f"INSERT INTO screen_refs ({REF_COLUMNS}) {refs_select(store.dialect)}", (after, upto))
    notices = notice_rows(store, conn, after, upto)
    if notices:
        store.query_many(conn, INSERT_NOTICES, notices)


class Tail(NamedTuple):
    """The events a reader's snapshot holds past the projection's position, (after, upto], and the
    notices' rows they give (the references' are read by the works they name: `tail_refs`)."""

    after: int
    upto: int
    notices: list[NoticeRow]

    def noticed(self, t: int, k: int) -> set[str]:
        """The works these checks, as of T and K, list a notice for."""
        return {n.work_id for n in self.notices if n.observed_us <= t and n.recorded_us <= k}

    def learned(
        self, found: dict[tuple[str, str, str], tuple[int, int]], works: Iterable[str], t: int, k: int
    ) -> dict[tuple[str, str, str], tuple[int, int]]:
        """`found` (the stored rows' first recorded_us and seq of each (work, source, notice)) with
        these checks' notices of `works` as of T and K folded in."""
        wanted = set(works)
        out = dict(found)
        for n in self.notices:
            if n.work_id in wanted and n.observed_us <= t and n.recorded_us <= k:
                key = (n.work_id, n.source, n.notice)
                had = out.get(key, (n.recorded_us, n.seq))
                out[key] = (min(had[0], n.recorded_us), min(had[1], n.seq))
        return out


def tail(store: Queries, conn: Connection) -> Tail:
    """The events past the projection's position as `conn` sees them: one probe when there are none."""
    after, upto = (integer(v) for v in first(store.query(conn, BOUNDS)))
    return Tail(after, upto, notice_rows(store, conn, after, upto) if upto > after else [])


def tail_refs(store: Queries, conn: Connection, past: Tail, works: Sequence[str]) -> list[RefRow]:
    """The references among the events of `past` that name one of `works` (the database derives them)."""
    if past.upto <= past.after or not works:
        return []
    d = store.dialect
    rows = store.query(conn, refs_select(d, works=True), (past.after, past.upto, d.bind_list(works)))
    return [RefRow._make(r) for r in rows]  # REF_COLUMNS, in order

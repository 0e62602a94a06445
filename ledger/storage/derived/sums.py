"""Derived rows held as multisets: a count and a sum of the rows' hashes, per kind of row.

A whole walk holds the rows its events imply to the stored ones this way, each side summed in any
order: the stored rows straight off the driver's cursor, the derived ones a page of events at a time
(`page_sums`: each event's data decoded once for every kind of row), each row hashed by calls in C. A
sum that differs sends the walk back over the events one at a time to name the first seq that breaks.

A row's value is `hash(str(hash(row)))`. A tuple's own hash is close to linear in its items' hashes,
and an int's hash is the int: summed as they are, two rows that swap their seqs (or any int column)
keep the sum about half the time. Hashing the tuple's hash again as text (SipHash, keyed by this
process's random seed) makes each row's value one an attacker cannot predict, so a multiset changed in
any way changes the sum but with odds of about 2**-64.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import compress

import msgspec

from ledger.model.codec import decode_data
from ledger.model.events import Glance, StandingChecked
from ledger.storage.derived.checks import check_rows
from ledger.storage.derived.keys import EVENT, OBSERVATION, cited_keys
from ledger.storage.derived.screen import notice_rows_of

MASK = 0xFFFF_FFFF_FFFF_FFFF
CITATION = "citation.observed"
RESOLUTION = "resolution.observed"
STANDING = "standing.checked"
_OBSERVED = frozenset((CITATION, RESOLUTION))
_GLANCE = msgspec.json.Decoder(Glance)


@dataclass
class Sums:
    """A multiset of rows: how many, and the sum of their hashes modulo 2**64."""

    count: int = 0
    total: int = 0

    def add(self, rows: Sequence[Hashable]) -> None:
        """Take in these rows (a list, hashed in one call)."""
        self.count += len(rows)
        self.total = (self.total + sum(map(hash, map(str, map(hash, rows))))) & MASK


@dataclass
class Derived:
    """The derived rows of the events walked, by kind, each in the shape its table's rows are read:
    keys (key, seq); check_works (work_id, source, observed_us, seq, recorded_us, notices); the screen's
    references (work_id, seq, observation_id, citing) and notices (screen.NOTICE_COLUMNS)."""

    keys: Sums = field(default_factory=Sums)
    checks: Sums = field(default_factory=Sums)
    refs: Sums = field(default_factory=Sums)
    notices: Sums = field(default_factory=Sums)


@dataclass(frozen=True)
class Positions:
    """How far each projection holds the events: an event past one has none of its rows."""

    work_keys: int
    check_works: int
    screen: int


class Page(msgspec.Struct, frozen=True):
    """The columns of a page of stored events that their derived rows come from."""

    seqs: Sequence[int]
    ids: Sequence[str]
    streams: Sequence[str]
    types: Sequence[str]
    observed_at: Sequence[str]
    data: Sequence[str]
    observed_us: Sequence[int]
    recorded_us: Sequence[int]


def page_sums(page: Page, at: Positions, into: Derived) -> list[str]:
    """Add the rows a page of events implies to `into`; the keys the append wrote for them (event and
    observation keys, for a resumed walk's later checks). Each citation and resolution is decoded once
    (its few fields), each standing check once (whole, as its rows are written); a datum that does not
    decode raises, and the caller walks the events one at a time instead."""
    seqs = page.seqs
    keys = list(zip(map(EVENT.__add__, page.ids), seqs, strict=True))
    observed = [t in _OBSERVED for t in page.types]
    o_seqs = list(compress(seqs, observed))
    glances = [_GLANCE.decode(d) for d in compress(page.data, observed)]
    oids = [g.observation_id for g in glances]
    o_keys = [(OBSERVATION + o, s) for o, s in zip(oids, o_seqs, strict=True) if o is not None]
    if len(o_keys) != len(o_seqs):
        raise ValueError("a citation or resolution names no observation")
    written = [k for k, _ in keys] + [k for k, _ in o_keys]
    keys += o_keys
    refs: list[tuple[str, int, str, str]] = []
    o_streams = compress(page.streams, observed)
    for (o_key, seq), g, stream in zip(o_keys, glances, o_streams, strict=True):
        w = g.cited_work
        if w is None or w.work_id is None:
            continue
        if seq <= at.work_keys:
            keys += [(k, seq) for k in cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)]
        if seq <= at.screen:
            refs.append((w.work_id, seq, o_key[len(OBSERVATION) :], stream.removeprefix("paper:")))
    into.keys.add(keys)
    into.refs.add(refs)
    for i in [i for i, t in enumerate(page.types) if t == STANDING]:
        seq = seqs[i]
        if seq > at.check_works and seq > at.screen:
            continue
        data = decode_data(STANDING, page.data[i].encode())
        o_us, r_us = page.observed_us[i], page.recorded_us[i]
        if seq <= at.check_works:
            event = StandingChecked(observed_at=page.observed_at[i], data=data)
            into.checks.add([(*c[:5], c.notices.decode()) for c in check_rows(event, seq, o_us, r_us)])
        if seq <= at.screen:
            into.notices.add(notice_rows_of(seq, data.source, data.notices, o_us, r_us))
    return written

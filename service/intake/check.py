"""A file's first pass: every line checked as its append will check it, nothing written to the ledger.

Each line is decoded and its rules checked (ledger-v1.md "Appending", at the ledger's clock), and the
rules that span lines are checked as the batches of the second pass will meet them: an event id stored
or seen earlier in the file with other content, an observation cited by another paper than the one it
belongs to, a resolution of an observation with no citation in the ledger or earlier in the file. What
those rules must remember of earlier lines (each new event id with a digest of its content, each new
observation with its paper) is held in memory up to `HELD` of them, then goes to a scratch SQLite file
at once (and memory holds the next ones), so a file of any size is checked in bounded memory. A filter of
the keys in that file (`_Filter`) answers "not there" for most new keys: only a repeat, or the filter's
rare false hit, is looked up in it. The decoded events of each chunk go to the file's spill (spill.py)
once checked, and are dropped: the second pass appends them from there, never decoding a line again.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import NamedTuple, TypeVar

import msgspec

from ledger.model.claims import refuse_claims
from ledger.model.codec import (
    check_ijson_data,
    check_rules,
    decode_json,
    derived_key,
    quick_event,
    to_event,
    type_of,
    uuid_text,
)
from ledger.model.errors import Conflict, InvalidEvent
from ledger.model.events import CitationObserved, Event, ResolutionObserved
from ledger.storage.interface import ImportTables
from service.intake.spill import Spill

# Lines checked together: one set of lookups in the scratch file and the ledger per chunk
CHUNK = 5000
_ENCODE = msgspec.json.Encoder(order="sorted").encode
_NUL = b"\\u0000"
# SQLite's page cache for the scratch file: its tree of ids outgrows it, the OS caches the rest
_SCRATCH_CACHE_KB = 8192
# ids and observations remembered in memory (about 150 bytes each: 9 MB) before they go to the scratch file
HELD = 60_000
# the filter in front of the scratch file: 2**26 bits (8 MB); at 5 million keys (a 4M-line file) about
# 2% of new keys still hit it and are looked up for nothing
FILTER_BITS = 26


def _key(uuid_text: str) -> bytes:
    """A UUID's 16 bytes (the scratch file's keys: less than half the text's size)."""
    return bytes.fromhex(uuid_text.replace("-", ""))


class _Line:
    __slots__ = ("data", "event", "fingerprint", "id", "key", "n", "observed_us", "type", "where")

    def __init__(self, event: Event, n: int, where: str, observed_us: int) -> None:
        self.event = event
        self.n = n
        self.where = where
        self.observed_us = observed_us
        self.type = type_ = type_of(event)
        self.data = data = _ENCODE(event.data)
        if _NUL in data:  # the encoder escapes U+0000, so its absence proves there is none
            check_ijson_data(data, where)
        # what "the same content" is compared on (type, observed_at, data), in 16 bytes: the id derived
        # from it, which a line without an event_id has as its key already. Two contents share one only
        # if SHA-1 collides, and the append would still refuse that pair: it compares the bytes.
        self.fingerprint = derived_key(data, event.observed_at, type_)
        if event.event_id is None:
            self.key = self.fingerprint
            self.id = uuid_text(self.key)
        else:
            self.id = event.event_id
            self.key = _key(self.id)


class FileCheck:
    """The first pass over one file's lines, against the ledger as it is now (`tables`)."""

    def __init__(
        self, tables: ImportTables, now: int, scratch_dir: str | None = None, spill: Spill | None = None
    ) -> None:
        self._tables = tables
        self._now = now
        self._scratch_dir = scratch_dir
        # where each checked line's event goes, in order, for the append (None: dropped)
        self._spill = spill
        self.lines = 0  # non-empty lines checked
        self.new = 0  # events the file would append (as the ledger is now)
        self.duplicates = 0
        # resolutions claiming the ledger's resolver or a person are taken (a ledger being moved)
        self.keep_resolver_events = False

    @contextmanager
    def scratch(self) -> Iterator[sqlite3.Connection]:
        """The scratch file, deleted at the end."""
        fd, path = tempfile.mkstemp(prefix="ledger-import-", suffix=".db", dir=self._scratch_dir)
        os.close(fd)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            for pragma in ("journal_mode = OFF", "synchronous = OFF", f"cache_size = -{_SCRATCH_CACHE_KB}"):
                conn.execute(f"PRAGMA {pragma}")
            conn.execute(
                "CREATE TABLE ids (id BLOB PRIMARY KEY, fingerprint BLOB NOT NULL, line INTEGER NOT NULL) "
                "WITHOUT ROWID"
            )
            conn.execute("CREATE TABLE owners (oid BLOB PRIMARY KEY, paper TEXT NOT NULL) WITHOUT ROWID")
            # one transaction for the whole check: the file is thrown away, never committed row by row
            conn.execute("BEGIN")
            yield conn
        finally:
            conn.close()
            os.unlink(path)

    def run(self, numbered: Iterable[tuple[int, bytes]]) -> None:
        """Check every (number, line); raise the first refusal, naming its line."""
        with self.scratch() as conn:
            scratch = _Remembered(conn)
            chunk: list[tuple[int, bytes]] = []
            for item in numbered:
                if item[1].isspace():
                    continue  # a run of blank lines may come as one item of many kB: not held
                chunk.append(item)
                if len(chunk) >= CHUNK:
                    self._chunk(scratch, chunk)
                    chunk = []
            if chunk:
                self._chunk(scratch, chunk)

    def _chunk(self, scratch: _Remembered, numbered: Sequence[tuple[int, bytes]]) -> None:
        lines = []
        now, claims = self._now, not self.keep_resolver_events
        for n, raw in numbered:
            if raw.strip():
                where = f"line {n}"
                event = quick_event(raw)
                if event is None:
                    event = to_event(decode_json(raw, where), where)
                observed_us = check_rules(event, where, now)
                if claims and type(event) is ResolutionObserved:  # the only events that can claim
                    refuse_claims((event,), (where,))
                lines.append(_Line(event, n, where, observed_us))
        self.lines += len(lines)
        new = self._new_lines(scratch, lines)
        self._owners(scratch, new)
        scratch.add_ids([(x.key, x.fingerprint, x.n) for x in new])
        if self._spill is not None:
            # every line, duplicates too: the append decides again against the ledger as it is then,
            # from the data bytes, id and instant made here
            # (a plain tuple: msgpack writes it as it writes an `Encoded`, and it is built for less)
            self._spill.write([(x.n, x.event, (x.data, x.id, x.observed_us)) for x in lines])
        self.new += len(new)
        self.duplicates += len(lines) - len(new)

    def _new_lines(self, scratch: _Remembered, lines: list[_Line]) -> list[_Line]:
        """The lines whose event is new; a repeat with other content is refused, as the append would."""
        earlier = scratch.ids({x.key for x in lines})
        unseen = sorted({x.id for x in lines if x.key not in earlier})
        stored = self._tables.stored_events(unseen) if unseen else {}
        new: list[_Line] = []
        first: dict[str, _Line] = {}
        for x in lines:
            prior = stored.get(x.id)
            if prior is not None:
                if (prior.type, prior.observed_at, prior.data) != (x.type, x.event.observed_at, x.data):
                    raise Conflict(
                        f"{x.where}.event_id: {x.id} is already stored (seq {prior.seq}) "
                        "with different content",
                        details={"event_id": x.id, "seq": prior.seq},
                    )
                continue
            seen = first.get(x.id)
            before = (seen.fingerprint, seen.n) if seen is not None else earlier.get(x.key)
            if before is not None:
                if before[0] != x.fingerprint:
                    raise Conflict(
                        f"{x.where}.event_id: {x.id} appears earlier in the file (line {before[1]}) "
                        "with different content",
                        details={"event_id": x.id, "earlier": f"line {before[1]}"},
                    )
                continue
            first[x.id] = x
            new.append(x)
        return new

    def _owners(self, scratch: _Remembered, new: list[_Line]) -> None:
        """Each new citation's observation belongs to its paper; each new resolution's has a citation."""
        oids = sorted({e.data.observation_id for x in new if isinstance(e := x.event, _OBSERVED)})
        if not oids:
            return
        keys = list(map(_key, oids))
        by_key = dict(zip(keys, oids, strict=True))
        known = {by_key[k]: paper for k, paper in scratch.owners(by_key).items()}
        missing = [o for o in oids if o not in known]
        if missing:
            known.update(self._tables.citing_papers(missing))
        added: dict[str, str] = {}
        for x in new:
            e = x.event
            if isinstance(e, CitationObserved):
                d = e.data
                owner = known.get(d.observation_id)
                if owner is None:
                    known[d.observation_id] = added[d.observation_id] = d.citing_arxiv_id
                elif owner != d.citing_arxiv_id:
                    raise InvalidEvent(
                        f"{x.where}.data.citing_arxiv_id",
                        f"observation {d.observation_id} belongs to paper {owner}, not {d.citing_arxiv_id}",
                    )
            elif isinstance(e, ResolutionObserved) and e.data.observation_id not in known:
                raise InvalidEvent(
                    f"{x.where}.data.observation_id",
                    f"no citation.observed for observation {e.data.observation_id} in the ledger or earlier "
                    "in the file",
                )
        key_of = dict(zip(oids, keys, strict=True))
        scratch.add_owners([(key_of[o], p) for o, p in added.items()])


_OBSERVED = (CitationObserved, ResolutionObserved)
R = TypeVar("R")


class _IdRow(NamedTuple):
    """An id remembered in the scratch file: its key, its fingerprint and the line that carried it."""

    id: bytes
    fingerprint: bytes
    line: int


class _OwnerRow(NamedTuple):
    """An observation remembered in the scratch file: its key and the paper it belongs to."""

    oid: bytes
    paper: str


class _Filter:
    """A Bloom filter of the keys in the scratch file (two bits a key, from its salted `hash`): a key
    it does not hold is not there; one it holds may be, and is looked up."""

    def __init__(self, bits: int) -> None:
        self._mask = (1 << bits) - 1
        self._bits = bytearray(max(1, 1 << bits >> 3))

    def add(self, keys: Iterable[bytes]) -> None:
        """Hold these keys."""
        bits, mask = self._bits, self._mask
        for k in keys:
            h = hash(k)
            a, b = h & mask, h >> 32 & mask
            bits[a >> 3] |= 1 << (a & 7)
            bits[b >> 3] |= 1 << (b & 7)

    def maybe(self, keys: Iterable[bytes]) -> list[bytes]:
        """The keys that may be held (every key held, and a few others)."""
        bits, mask = self._bits, self._mask
        out = []
        for k in keys:
            h = hash(k)
            a, b = h & mask, h >> 32 & mask
            if bits[a >> 3] >> (a & 7) & 1 and bits[b >> 3] >> (b & 7) & 1:
                out.append(k)
        return out


class _Remembered:
    """What the check remembers of earlier lines: each new event id (its fingerprint and line) and each
    new observation (its paper), the latest in memory, all the earlier ones in the scratch file behind a
    filter of its keys. Memory holds up to `HELD` of them; then they go to the file at once, in key order,
    so a page of its trees is read and written once for all the keys of that flush that fall in it."""

    def __init__(self, conn: sqlite3.Connection, held: int | None = None) -> None:
        self._conn = conn
        self._held = HELD if held is None else held
        # each id's whole row (id, fingerprint, line number): what the scratch file takes, as it is
        self._ids: dict[bytes, tuple[bytes, bytes, int]] = {}
        self._owners: dict[bytes, str] = {}
        self._filter: _Filter | None = None  # None: nothing in the scratch file yet

    def ids(self, keys: Collection[bytes]) -> dict[bytes, tuple[bytes, int]]:
        """The remembered (fingerprint, line number) of these ids."""
        ids = self._ids
        # the keys held found by one set operation: most keys of a chunk are new, and held by none
        out = {k: ids[k][1:] for k in ids.keys() & keys}
        if self._filter is not None:
            rest = sorted(self._filter.maybe(set(keys).difference(out)))
            rows = _select(self._conn, "SELECT id, fingerprint, line FROM ids WHERE id IN ", rest, _IdRow)
            out.update((row[0], (row[1], row[2])) for row in rows)
        return out

    def owners(self, keys: Collection[bytes]) -> dict[bytes, str]:
        """The remembered paper of these observations."""
        owners = self._owners
        out = {k: owners[k] for k in owners.keys() & keys}
        if self._filter is not None:
            rest = sorted(self._filter.maybe(set(keys).difference(out)))
            out.update(_select(self._conn, "SELECT oid, paper FROM owners WHERE oid IN ", rest, _OwnerRow))
        return out

    def add_ids(self, rows: list[tuple[bytes, bytes, int]]) -> None:
        """Remember these (id, fingerprint, line number): ids not remembered yet."""
        self._ids.update(zip(map(itemgetter(0), rows), rows, strict=True))
        self._spill()

    def add_owners(self, rows: list[tuple[bytes, str]]) -> None:
        """Remember these (observation, paper): observations not remembered yet."""
        self._owners.update(rows)
        self._spill()

    def _spill(self) -> None:
        """Past `held`, what memory holds goes to the scratch file."""
        if len(self._ids) + len(self._owners) <= self._held:
            return
        if self._filter is None:
            self._filter = _Filter(FILTER_BITS)
        ids, self._ids = self._ids, {}
        owners, self._owners = self._owners, {}
        self._filter.add(ids)
        self._filter.add(owners)
        self._conn.executemany(
            "INSERT INTO ids (id, fingerprint, line) VALUES (?, ?, ?)",
            sorted(ids.values()),
        )
        self._conn.executemany("INSERT INTO owners (oid, paper) VALUES (?, ?)", sorted(owners.items()))


def _select(conn: sqlite3.Connection, sql: str, keys: Iterable[bytes], row: Callable[..., R]) -> list[R]:
    """Rows of `sql` + "(?, ?, ...)" over the keys, 500 a statement (SQLite's bound on parameters),
    each made by `row` from its columns."""
    out: list[R] = []
    keys = list(keys)
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        out += [row(*r) for r in conn.execute(sql + "(" + ", ".join("?" * len(part)) + ")", part)]
    return out

"""Who made each write: one row per acknowledged batch, naming the seqs it appended and its writer (a
token's fingerprint, the CLI's user), written in the transaction of its events.

The record is kept outside the chain, not proven by it: the events' bytes (and so their ids, hashes and
duplicates) do not name the writer, and an operator with access to the database can edit this table
as they can any other outside the log. It says which credential the server saw, for the operator to
read along with the chain's proof of what was written.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from ledger.storage.sql import Connection, Cursor, DialectStore, SqlParams

TOKEN = "token:"  # then the sha256 hex of the bearer token (what the token file holds), never the token
CLI = "cli:"  # then the operating-system user who ran the `ledger` command
MAX_VIA = 64
_PART = 5000  # seqs looked up in one statement
_COLUMNS = "first_seq, last_seq, writer, via"
INSERT_WRITERS = f"INSERT INTO event_writers ({_COLUMNS}) VALUES (?, ?, ?, ?)"
# the batch holding a seq: the last row starting at or before it (seqs of one batch are contiguous)
_HOLDING = f"SELECT {_COLUMNS} FROM event_writers WHERE first_seq <= ? ORDER BY first_seq DESC LIMIT 1"
_BETWEEN = f"SELECT {_COLUMNS} FROM event_writers WHERE first_seq >= ? AND first_seq <= ? ORDER BY first_seq"


class WriteBy(NamedTuple):
    """Who is writing and through what: `writer` is `token:<sha256>` or `cli:<user>`; `via` the route or
    command (`POST /events`, `ledger import`)."""

    writer: str
    via: str


def by_token(token_sha256: str, via: str) -> WriteBy:
    """A request's writer: its bearer token's sha256 hex (the token file's line, the watches' owner)."""
    return WriteBy(TOKEN + token_sha256, via)


def by_cli(user: str, via: str) -> WriteBy:
    """A `ledger` command's writer: the operating-system user who ran it."""
    return WriteBy(CLI + user, via)


class WriterRow(NamedTuple):
    """The seqs first..last one write appended, and who made it."""

    first_seq: int
    last_seq: int
    writer: str
    via: str


class WritersTx(Protocol):
    """A write transaction that records its batches' writers."""

    def save_writers(self, rows: Sequence[WriterRow]) -> None: ...


def writer_rows(seqs: Iterable[int], by: WriteBy) -> list[WriterRow]:
    """The rows naming `by` as the writer of these newly appended seqs (one per run of consecutive seqs;
    a batch's new events are one run)."""
    rows: list[WriterRow] = []
    for seq in sorted(seqs):
        if rows and rows[-1].last_seq == seq - 1:
            rows[-1] = rows[-1]._replace(last_seq=seq)
        else:
            rows.append(WriterRow(seq, seq, by.writer, by.via[:MAX_VIA]))
    return rows


def save_writers(store: DialectStore, conn: Connection, rows: Sequence[WriterRow]) -> None:
    """Insert writer rows on `conn`, inside the caller's write transaction."""
    if rows:
        store.query_many(conn, INSERT_WRITERS, [tuple(r) for r in rows])


class WriterTables:
    """The writer rows of one store, over its per-thread connection."""

    def __init__(self, store: DialectStore) -> None:
        self.store = store

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.store.connection(), sql, params)

    def writer_of(self, seq: int) -> WriterRow | None:
        """Who wrote the event at `seq`, when recorded (events written before the record was kept, or
        by a program calling the library without saying who it is, have none)."""
        row = self._q(_HOLDING, (seq,)).fetchone()
        if row is None:
            return None
        found = WriterRow._make(row)
        return None if found.last_seq < seq else found

    def writers_of(self, seqs: Iterable[int]) -> dict[int, WriterRow]:
        """The recorded writer of each of these seqs that has one, in one statement per `_PART` seqs."""
        wanted = sorted(set(seqs))
        d = self.store.dialect
        listed = (
            "SELECT value AS s FROM json_each(?)"
            if d.json_lists
            else "SELECT s FROM unnest(?::bigint[]) AS s"
        )
        sql = (
            f"SELECT DISTINCT w.first_seq, w.last_seq, w.writer, w.via FROM ({listed}) AS q "
            "JOIN event_writers AS w ON w.first_seq = "
            "(SELECT max(first_seq) FROM event_writers WHERE first_seq <= q.s)"
        )
        rows: list[WriterRow] = []
        for at in range(0, len(wanted), _PART):
            part = wanted[at : at + _PART]
            rows.extend(WriterRow._make(r) for r in self._q(sql, (d.bind_list(part),)).fetchall())
        rows.sort()
        starts = [r.first_seq for r in rows]
        out: dict[int, WriterRow] = {}
        for seq in wanted:
            i = bisect.bisect_right(starts, seq) - 1
            if i >= 0 and rows[i].last_seq >= seq:
                out[seq] = rows[i]
        return out

    def rows_between(self, first: int, last: int) -> list[WriterRow]:
        """The rows whose batch starts in first..last, in seq order (what a copy of the ledger carries)."""
        return [WriterRow._make(r) for r in self._q(_BETWEEN, (first, last)).fetchall()]

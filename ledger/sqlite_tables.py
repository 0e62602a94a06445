"""SQLite's side of backend.Tables: Merkle nodes, resume point, signed checkpoint, ledger-wide lookups."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .backend import side_path
from .checkpoint import read_note_file, write_note_file
from .codec import decode_data
from .facts import Fact, ScrubPass, VerifiedPoint
from .instants import format_recorded, now_us
from .store import SQLiteStore

_CHECK_WORKS = "SELECT seq, work_id, source, observed_us, recorded_us, notices FROM check_works"
_PASS_COLUMNS = (
    "kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, first_bad_seq, reason"
)


class SQLiteTables:
    """The ledger's other tables on SQLite, over the store's per-thread connection."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def _c(self) -> sqlite3.Connection:
        return self.store._conn()

    def side_file(self, suffix: str) -> Path:
        """The file `<db><suffix>` next to the database."""
        return side_path(self.store.path, suffix)

    # -- Merkle nodes ----------------------------------------------------------------

    def fill_state(self) -> tuple[int, str | None]:
        """(leaves covered by stored nodes, chain hash of the last of them)."""
        row = self._c().execute("SELECT leaves, chain_hash FROM merkle_fill WHERE id = 1").fetchone()
        return (0, None) if row is None else (int(row[0]), str(row[1]))

    def event_hash(self, seq: int) -> str | None:
        """The stored chain hash of one seq (None if absent)."""
        row = self._c().execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """One stored complete-subtree hash, or None."""
        row = (
            self._c()
            .execute("SELECT hash FROM merkle_nodes WHERE level = ? AND idx = ?", (level, index))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def nodes(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The stored hashes of the given (level, idx) nodes that exist."""
        rows = self._c().execute(
            "SELECT n.level, n.idx, n.hash FROM json_each(?) AS k JOIN merkle_nodes AS n "
            "ON n.level = json_extract(k.value, '$[0]') AND n.idx = json_extract(k.value, '$[1]')",
            (json.dumps([list(k) for k in keys]),),
        )
        return {(r[0], r[1]): bytes(r[2]) for r in rows}

    @contextmanager
    def filling(self) -> Iterator[None]:
        """One write transaction for storing nodes (BEGIN IMMEDIATE: one filler at a time)."""
        conn = self._c()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def store_nodes(self, rows: Sequence[tuple[int, int, bytes]], leaves: int, chain_hash: str) -> None:
        """Insert new nodes and move the fill marker (inside `filling`)."""
        conn = self._c()
        conn.executemany("INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)", rows)
        conn.execute(
            "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves, chain_hash = excluded.chain_hash",
            (leaves, chain_hash),
        )

    # -- verify ----------------------------------------------------------------------

    @contextmanager
    def consistent_read(self) -> Iterator[None]:
        """A read that sees one state throughout (verify's walk)."""
        conn = self._c()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")

    def verified_point(self) -> VerifiedPoint | None:
        """(seq, hash, peaks, verified_at) of the last full verify, if remembered."""
        row = (
            self._c()
            .execute("SELECT seq, hash, peaks, verified_at FROM verified_point WHERE id = 1")
            .fetchone()
        )
        if row is None:
            return None
        return VerifiedPoint(row[0], row[1], [bytes.fromhex(p) for p in json.loads(row[2])], row[3])

    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes]) -> None:
        """Remember that seq 1..seq were verified (best effort: a read-only file is skipped)."""
        with contextlib.suppress(sqlite3.Error):
            self._c().execute(
                "INSERT INTO verified_point (id, seq, hash, peaks, verified_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
                "peaks = excluded.peaks, verified_at = excluded.verified_at",
                (seq, hash_, json.dumps([p.hex() for p in peaks]), format_recorded(now_us())),
            )

    def recorded_us_at(self, seq: int) -> int:
        """recorded_us of the event at seq (-1 if absent)."""
        row = self._c().execute("SELECT recorded_us FROM events WHERE seq = ?", (seq,)).fetchone()
        return -1 if row is None else int(row[0])

    def stream_version_at(self, stream: str, seq: int) -> int:
        """The stream's version as of seq (0 if it had no event yet)."""
        row = (
            self._c()
            .execute("SELECT max(stream_version) FROM events WHERE stream = ? AND seq <= ?", (stream, seq))
            .fetchone()
        )
        return int(row[0] or 0)

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]:
        """check_works rows of events after seq (up to `upto`) in (seq, work_id) order, read lazily."""
        if upto is None:
            return iter(self._c().execute(f"{_CHECK_WORKS} WHERE seq > ? ORDER BY seq, work_id", (seq,)))
        sql = f"{_CHECK_WORKS} WHERE seq > ? AND seq <= ? ORDER BY seq, work_id"
        return iter(self._c().execute(sql, (seq, upto)))

    # -- the signed checkpoint -------------------------------------------------------

    def last_checkpoint(self) -> str | None:
        """The last signed checkpoint note (kept in <db>.checkpoint), if any."""
        return read_note_file(self.side_file(".checkpoint"))

    def save_checkpoint(self, note: str) -> None:
        """Replace the last signed checkpoint (inside `signing`)."""
        write_note_file(self.side_file(".checkpoint"), note)

    @contextmanager
    def signing(self) -> Iterator[None]:
        """One signer at a time (API workers and the CLI), so the checkpoint state is never raced."""
        fd = os.open(self.side_file(".checkpoint.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- scrub passes ----------------------------------------------------------------

    def save_pass(self, p: ScrubPass) -> bool:
        """Record one full walk; False when the database cannot be written (a read-only file)."""
        try:
            self._c().execute(
                f"INSERT INTO scrub_passes ({_PASS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*p[:7], int(p.ok), p.first_bad_seq, p.reason),
            )
        except sqlite3.Error:
            return False
        return True

    def last_pass(self) -> ScrubPass | None:
        """The full walk that finished last, if any was recorded."""
        row = (
            self._c()
            .execute(f"SELECT {_PASS_COLUMNS} FROM scrub_passes ORDER BY finished_us DESC, id DESC LIMIT 1")
            .fetchone()
        )
        if row is None:
            return None
        kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, bad, reason = row
        return ScrubPass(
            kind, started_at, started_us, finished_at, finished_us, events, head_seq, bool(ok), bad, reason
        )

    @contextmanager
    def scrubbing(self, create: bool) -> Iterator[bool]:
        """Try to become this ledger's one scrubber (a non-blocking lock on <db>.scrub.lock); yields
        whether it did. With create=False (a read-only server) no lock file is made: when there is
        none, it scrubs unlocked rather than write a file."""
        path = self.side_file(".scrub.lock")
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
        except FileNotFoundError:
            yield True
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- ledger-wide lookups (source adapters, diff) ---------------------------------

    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]:
        """(observation_id, type, cited_work JSON) of each observation's latest citation and resolution."""
        # greatest observed_us, ties to the later seq, with only cited_work extracted
        rows = self._c().execute(
            "SELECT observation_id, type, cited_work FROM ("
            "  SELECT observation_id, type, json_extract(data, '$.cited_work') AS cited_work,"
            "   row_number() OVER (PARTITION BY observation_id, type"
            "   ORDER BY observed_us DESC, seq DESC) AS rn"
            "  FROM events WHERE observation_id IS NOT NULL AND observed_us <= ?"
            ") WHERE rn = 1",
            (as_of_us,),
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]

    def paper_ids(self, as_of_us: int) -> list[str]:
        """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
        rows = self._c().execute(
            "SELECT DISTINCT substr(stream, 7) FROM events "
            "WHERE type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
            (as_of_us,),
        )
        return [r[0] for r in rows]

    def observation_facts(self, observation_ids: Sequence[str], after_us: int, until_us: int) -> list[Fact]:
        """Citations and resolutions of the given observations observed in (after, until], in seq order."""
        rows = self._c().execute(
            "SELECT seq, type, observed_at, observed_us, data FROM events "
            "WHERE observation_id IN (SELECT value FROM json_each(?)) "
            "AND observed_us > ? AND observed_us <= ? ORDER BY seq",
            (json.dumps(list(observation_ids)), after_us, until_us),
        )
        return [Fact(s, t, oa, ous, decode_data(t, d.encode())) for s, t, oa, ous, d in rows]

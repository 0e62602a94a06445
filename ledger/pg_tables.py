"""PostgreSQL's side of backend.Tables: Merkle nodes, resume point, checkpoint, ledger-wide lookups."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from .backend import side_path
from .checkpoint import NoteError, read_note_file, unsigned_checkpoint, write_note_file
from .codec import decode_data
from .facts import Fact, ScrubPass, VerifiedPoint
from .instants import format_recorded, now_us
from .pg_store import PostgresStore

# pg_advisory_lock key of the checkpoint signer (one signer at a time, across every node)
SIGN_LOCK = 0x6C6564676573  # "ledges"
# pg_try_advisory_lock key of the scrubber (one scrubbing process at a time, across every node)
SCRUB_LOCK = 0x6C6564677363  # "ledgsc"
_PASS_COLUMNS = (
    "kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, first_bad_seq, reason"
)
_CHECK_WORKS = "SELECT seq, work_id, source, observed_us, recorded_us, notices FROM check_works"
_PAGE = 5000


class PgTables:
    """The ledger's other tables in the PostgreSQL database, over the store's per-thread connection."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.store._q(self.store._pg(), sql, params)

    def side_file(self, suffix: str) -> Path:
        """A file of this ledger (the signing key, tokens): see backend.side_path."""
        return side_path(self.store.url, suffix)

    # -- Merkle nodes ----------------------------------------------------------------

    def fill_state(self) -> tuple[int, str | None]:
        """(leaves covered by stored nodes, chain hash of the last of them)."""
        row = self._q("SELECT leaves, chain_hash FROM merkle_fill WHERE id = 1").fetchone()
        return (0, None) if row is None else (int(row[0]), str(row[1]))

    def event_hash(self, seq: int) -> str | None:
        """The stored chain hash of one seq (None if absent)."""
        row = self._q("SELECT hash FROM events WHERE seq = %s", (seq,)).fetchone()
        return None if row is None else str(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """One stored complete-subtree hash, or None."""
        row = self._q(
            "SELECT hash FROM merkle_nodes WHERE level = %s AND idx = %s", (level, index)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def nodes(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The stored hashes of the given (level, idx) nodes that exist."""
        keys = list(keys)
        rows = self._q(
            "SELECT n.level, n.idx, n.hash FROM unnest(%s::int[], %s::bigint[]) AS k(level, idx) "
            "JOIN merkle_nodes AS n ON n.level = k.level AND n.idx = k.idx",
            ([k[0] for k in keys], [k[1] for k in keys]),
        )
        return {(r[0], r[1]): bytes(r[2]) for r in rows}

    @contextmanager
    def filling(self) -> Iterator[None]:
        """One transaction storing nodes; the fill row's lock makes fillers (not appends) take turns."""
        self._q("BEGIN")
        try:
            self._q("LOCK TABLE merkle_fill IN EXCLUSIVE MODE")
            yield
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                self._q("ROLLBACK")
            raise
        self._q("COMMIT")

    def store_nodes(self, rows: Sequence[tuple[int, int, bytes]], leaves: int, chain_hash: str) -> None:
        """Insert new nodes and move the fill marker (inside `filling`)."""
        self.store._many(
            self.store._pg(), "INSERT INTO merkle_nodes (level, idx, hash) VALUES (%s, %s, %s)", rows
        )
        self._q(
            "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves, chain_hash = excluded.chain_hash",
            (leaves, chain_hash),
        )

    # -- verify ----------------------------------------------------------------------

    @contextmanager
    def consistent_read(self) -> Iterator[None]:
        """One REPEATABLE READ transaction: the walk, the index and the nodes are read at one instant."""
        conn = self.store._pg()
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            yield
            return
        self._q("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                self._q("COMMIT")

    def verified_point(self) -> VerifiedPoint | None:
        """(seq, hash, peaks, verified_at) of the last full verify, if remembered."""
        row = self._q("SELECT seq, hash, peaks, verified_at FROM verified_point WHERE id = 1").fetchone()
        if row is None:
            return None
        return VerifiedPoint(row[0], row[1], [bytes.fromhex(p) for p in row[2].split()], row[3])

    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes]) -> None:
        """Remember that seq 1..seq were verified (best effort: a read-only role is skipped)."""
        with contextlib.suppress(psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction):
            self._q(
                "INSERT INTO verified_point (id, seq, hash, peaks, verified_at) VALUES (1, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
                "peaks = excluded.peaks, verified_at = excluded.verified_at",
                (seq, hash_, " ".join(p.hex() for p in peaks), format_recorded(now_us())),
            )

    def recorded_us_at(self, seq: int) -> int:
        """recorded_us of the event at seq (-1 if absent)."""
        row = self._q("SELECT recorded_us FROM events WHERE seq = %s", (seq,)).fetchone()
        return -1 if row is None else int(row[0])

    def stream_version_at(self, stream: str, seq: int) -> int:
        """The stream's version as of seq (0 if it had no event yet)."""
        row = self._q(
            "SELECT max(stream_version) FROM events WHERE stream = %s AND seq <= %s", (stream, seq)
        ).fetchone()
        return int(row[0] or 0)

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]:
        """check_works rows of events after seq (up to `upto`) in (seq, work_id) order, a page at a time."""
        end = sys.maxsize if upto is None else upto
        rows = self._q(
            f"{_CHECK_WORKS} WHERE seq > %s AND seq <= %s ORDER BY seq, work_id LIMIT %s", (seq, end, _PAGE)
        ).fetchall()
        while rows:
            yield from rows
            last = rows[-1]
            rows = self._q(
                f"{_CHECK_WORKS} WHERE (seq, work_id) > (%s, %s) AND seq <= %s "
                "ORDER BY seq, work_id LIMIT %s",
                (last[0], last[1], end, _PAGE),
            ).fetchall()

    # -- the signed checkpoint: in the database, so every node signs after the same one; and a copy in
    # this node's state dir, so a database restored from an older backup cannot make it forget ------

    def last_checkpoint(self) -> str | None:
        """The last signed checkpoint note: the larger of the database's and this node's copy."""
        row = self._q("SELECT note FROM signed_checkpoint WHERE id = 1").fetchone()
        notes = [str(row[0])] if row is not None else []
        mirror = read_note_file(self.side_file(".checkpoint"))
        notes += [mirror] if mirror is not None else []
        return max(notes, key=_note_size) if notes else None

    def save_checkpoint(self, note: str) -> None:
        """Replace the last signed checkpoint (inside `signing`): the row, then this node's copy."""
        self._q(
            "INSERT INTO signed_checkpoint (id, note) VALUES (1, %s) "
            "ON CONFLICT (id) DO UPDATE SET note = excluded.note",
            (note,),
        )
        write_note_file(self.side_file(".checkpoint"), note)

    @contextmanager
    def signing(self) -> Iterator[None]:
        """One signer at a time across every node: a session advisory lock."""
        self._q("SELECT pg_advisory_lock(%s)", (SIGN_LOCK,))
        try:
            yield
        finally:
            self._q("SELECT pg_advisory_unlock(%s)", (SIGN_LOCK,))

    # -- scrub passes ----------------------------------------------------------------

    def save_pass(self, p: ScrubPass) -> bool:
        """Record one full walk; False when the role or the server cannot write."""
        try:
            self._q(
                f"INSERT INTO scrub_passes ({_PASS_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                tuple(p),
            )
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction):
            return False
        return True

    def last_pass(self) -> ScrubPass | None:
        """The full walk that finished last, if any was recorded."""
        row = self._q(
            f"SELECT {_PASS_COLUMNS} FROM scrub_passes ORDER BY finished_us DESC, id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else ScrubPass(*row)

    @contextmanager
    def scrubbing(self, create: bool) -> Iterator[bool]:
        """Try to become this ledger's one scrubber across every node (a session advisory lock, which
        writes nothing: `create` does not matter here); yields whether it did."""
        got = bool(self._q("SELECT pg_try_advisory_lock(%s)", (SCRUB_LOCK,)).fetchone()[0])
        try:
            yield got
        finally:
            if got:
                self._q("SELECT pg_advisory_unlock(%s)", (SCRUB_LOCK,))

    # -- ledger-wide lookups (source adapters, diff) ---------------------------------

    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]:
        """(observation_id, type, cited_work JSON) of each observation's latest citation and resolution."""
        rows = self._q(
            "SELECT observation_id, type, cited_work FROM ("
            "  SELECT observation_id, type,"
            "   NULLIF(data::jsonb -> 'cited_work', 'null'::jsonb)::text AS cited_work,"
            "   row_number() OVER (PARTITION BY observation_id, type"
            "   ORDER BY observed_us DESC, seq DESC) AS rn"
            "  FROM events WHERE observation_id IS NOT NULL AND observed_us <= %s"
            ") AS latest WHERE rn = 1",
            (as_of_us,),
        )
        return [tuple(r) for r in rows]

    def paper_ids(self, as_of_us: int) -> list[str]:
        """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
        rows = self._q(
            "SELECT DISTINCT substr(stream, 7) AS id FROM events "
            "WHERE type = 'paper.observed' AND observed_us <= %s ORDER BY 1",
            (as_of_us,),
        )
        return [r[0] for r in rows]

    def observation_facts(self, observation_ids: Sequence[str], after_us: int, until_us: int) -> list[Fact]:
        """Citations and resolutions of the given observations observed in (after, until], in seq order."""
        rows = self._q(
            "SELECT seq, type, observed_at, observed_us, data FROM events "
            "WHERE observation_id = ANY(%s) AND observed_us > %s AND observed_us <= %s ORDER BY seq",
            (list(observation_ids), after_us, until_us),
        )
        return [Fact(s, t, oa, ous, decode_data(t, d.encode())) for s, t, oa, ous, d in rows]


def _note_size(note: str) -> int:
    """The tree size of a signed checkpoint note; an unreadable note wins, to be refused loudly."""
    try:
        return unsigned_checkpoint(note).size
    except NoteError:
        return sys.maxsize

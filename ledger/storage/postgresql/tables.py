"""PostgreSQL's side of the ledger's other tables: the signed checkpoint and the locks every node
shares (advisory locks, a checkpoint row); the shared tables are sql_store's."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ledger.storage.sql_store import SqlTables
from ledger.tlog.checkpoint_notes import NoteError, read_note_file, unsigned_checkpoint, write_note_file

# pg_advisory_lock key of the checkpoint signer (one signer at a time, across every node)
SIGN_LOCK = 0x6C6564676573  # "ledges"
# pg_try_advisory_lock keys of the one-process roles (one scrubber, one cosigner, across every node)
ROLE_LOCKS = {"scrub": 0x6C6564677363, "cosign": 0x6C6564676373}  # "ledgsc", "ledgcs"


class PgTables(SqlTables):
    """The ledger's other tables in the PostgreSQL database, over the store's per-thread connection."""

    # one filler at a time across every node; appends take another lock, so they are not held up
    fill_begin = ("BEGIN", "LOCK TABLE merkle_fill IN EXCLUSIVE MODE")
    # one indexer at a time; readers of the index and appends are not held up
    search_begin = ("BEGIN", "LOCK TABLE search_cursor IN EXCLUSIVE MODE")
    # a read-only role or a hot standby; any other error is a real failure
    readonly_errors = (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction)

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
            "INSERT INTO signed_checkpoint (id, note) VALUES (1, ?) "
            "ON CONFLICT (id) DO UPDATE SET note = excluded.note",
            (note,),
        )
        write_note_file(self.side_file(".checkpoint"), note)

    @contextmanager
    def signing(self) -> Iterator[None]:
        """One signer at a time across every node: a session advisory lock."""
        self._q("SELECT pg_advisory_lock(?)", (SIGN_LOCK,))
        try:
            yield
        finally:
            self._q("SELECT pg_advisory_unlock(?)", (SIGN_LOCK,))

    # -- one process at a time: the scrubber, the cosigner ----------------------------

    @contextmanager
    def exclusive(self, role: str, create: bool) -> Iterator[bool]:
        """Try to become this ledger's one `role` process across every node (a session advisory lock,
        which writes nothing: `create` does not matter here); yields whether it did."""
        key = ROLE_LOCKS[role]
        got = bool(self._q("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()[0])
        try:
            yield got
        finally:
            if got:
                self._q("SELECT pg_advisory_unlock(?)", (key,))


def _note_size(note: str) -> int:
    """The tree size of a signed checkpoint note; an unreadable note wins, to be refused loudly."""
    try:
        return unsigned_checkpoint(note).size
    except NoteError:
        return sys.maxsize

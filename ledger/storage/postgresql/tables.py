"""PostgreSQL's side of the ledger's other tables: the signed checkpoint and the locks every node
shares (advisory locks, a checkpoint row); the shared tables are in tables/."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ledger.storage.tables.scrub import SqlScrub
from ledger.storage.tables.tree import SqlTree
from ledger.tlog.checkpoint_notes import NoteError, read_note_file, unsigned_checkpoint, write_note_file

# pg_advisory_lock key of the checkpoint signer (one signer at a time, across every node)
SIGN_LOCK = 0x6C6564676573  # "ledges"
# pg_try_advisory_lock keys of the one-process roles (one scrubber, one cosigner, across every node)
ROLE_LOCKS = {"scrub": 0x6C6564677363, "cosign": 0x6C6564676373}  # "ledgsc", "ledgcs"


class PgTree(SqlTree):
    """The tree's tables in the PostgreSQL database, and the signed checkpoint every node shares."""

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


class PgScrub(SqlScrub):
    """The scrub passes in the PostgreSQL database, and the one-process roles' advisory locks."""

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

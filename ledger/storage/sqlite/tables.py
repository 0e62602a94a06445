"""SQLite's side of the ledger's other tables: what a file-based ledger keeps beside the database
(the signed checkpoint, the signer's and the scrubber's locks); the shared
tables are in ledger/storage/tables/."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ledger.storage.interface import side_path
from ledger.storage.tables.scrub import SqlScrub
from ledger.storage.tables.tree import SqlTree
from ledger.tlog.checkpoint_notes import read_note_file, write_note_file


class SQLiteTree(SqlTree):
    """The tree's tables on SQLite, and the signed checkpoint in a file beside the database."""

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


class SQLiteScrub(SqlScrub):
    """The scrub passes on SQLite, and the one-process roles' locks on files beside the database."""

    @contextmanager
    def exclusive(self, role: str, create: bool) -> Iterator[bool]:
        """Try to become this ledger's one `role` process ("scrub", "cosign": a non-blocking lock on
        <db>.<role>.lock); yields whether it did. With create=False (a read-only server) no lock file
        is made: when there is none, it goes on unlocked rather than write a file."""
        path = side_path(self.store.db, f".{role}.lock")
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

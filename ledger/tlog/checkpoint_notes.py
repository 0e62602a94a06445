"""Checkpoint notes as text: parsing a tlog-checkpoint body, and keeping a note in a file.

Storage needs these without the signing machinery of checkpoint.py (see sqlite_tables and pg_tables).
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import NamedTuple

from ledger.model.errors import LedgerError
from ledger.tlog.merkle import HASH_SIZE

MAX_TREE_SIZE = 2**64 - 1  # tree sizes are u64 in RFC 6962 and the C2SP formats


class NoteError(LedgerError):
    """A signed note, checkpoint or key that does not parse or does not verify."""

    code = "invalid_note"


def b64(text: str, error: str) -> bytes:
    """Strict base64 -> bytes; NoteError(`error`) when it is not base64."""
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise NoteError(error) from None


class Checkpoint(NamedTuple):
    """A tlog-checkpoint body: origin, tree size, root hash."""

    origin: str
    size: int
    root: bytes

    def text(self) -> str:
        """The note text."""
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint note text (unsigned part) -> Checkpoint; extension lines are ignored."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise NoteError("a checkpoint is origin, tree size and root hash lines, each ending in a newline")
    origin, size, root_b64 = lines[:3]
    if not origin:
        raise NoteError("the checkpoint has an empty origin")
    if not size.isdigit() or (size != "0" and size.startswith("0")) or not size.isascii():
        raise NoteError(f"checkpoint tree size {size[:40]!r} is not a decimal number")
    # the digits are counted before int() reads them: past 4,300 it raises ValueError
    if len(size) > len(str(MAX_TREE_SIZE)) or int(size) > MAX_TREE_SIZE:
        raise NoteError(f"checkpoint tree size {size[:40]!r} is above 2^64-1")
    root = b64(root_b64, "the checkpoint root hash is not base64")
    if len(root) != HASH_SIZE:
        raise NoteError(f"the checkpoint root hash is {len(root)} bytes, not {HASH_SIZE}")
    return Checkpoint(origin, int(size), root)


def unsigned_checkpoint(note: str) -> Checkpoint:
    """The checkpoint a signed note carries, its signatures not checked (NoteError if it does not parse)."""
    return parse_checkpoint(note[: note.rfind("\n\n") + 1])


def read_note_file(path: Path) -> str | None:
    """A checkpoint note kept in a file, or None when there is none."""
    return path.read_text() if path.exists() else None


def write_note_file(path: Path, note: str) -> None:
    """Replace the note kept in `path` atomically (a reader sees the old note or the new one)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(note)
    os.replace(tmp, path)

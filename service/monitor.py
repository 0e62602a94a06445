"""The client side of a ledger's checkpoints: remember the last one verified, refuse a fork or a cut.

A monitor (`ledger monitor URL`) fetches a remote ledger's signed checkpoint, verifies its signature with
the key it pinned, and proves with the ledger's own consistency proofs that each new checkpoint extends
the last one it kept, as Go's checksum-database client does with its latest tree. A ledger that shows a
smaller tree than one already seen was truncated; one whose root differs at a size already seen, or
whose proof does not lead from the old root to the new, was rewritten. The fetching is the caller's
(the CLI's HTTP): this module only decides, and keeps the state in a directory.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from ledger.checkpoint import SignedCheckpoint, Verifier, open_checkpoint
from ledger.checkpoint_notes import NoteError
from ledger.cosign import NO_QUORUM, Quorum
from ledger.held_checkpoint import CONSISTENT, REWRITTEN, TRUNCATED
from ledger.merkle import ProofError, verify_consistency

BAD_SIGNATURE = "bad signature"
NOT_COSIGNED = "not cosigned"  # fewer witness cosignatures than the quorum: possibly a view for us alone
FIRST = "first"  # no checkpoint kept yet: this one is kept (trust on first use)
STALE = "stale"  # an older checkpoint than the one kept, proven a prefix of it: nothing to keep
STATE_FILE = "checkpoint"


class Gone(Exception):
    """The remote ledger says it holds fewer events than asked for (a consistency proof past its head)."""


class Observation(NamedTuple):
    """What one look at the remote ledger found."""

    status: str  # FIRST, CONSISTENT, STALE, TRUNCATED, REWRITTEN or BAD_SIGNATURE
    message: str
    kept: SignedCheckpoint | None  # the checkpoint kept after this look

    @property
    def ok(self) -> bool:
        """True unless the remote ledger was caught truncated, rewritten or badly signed."""
        return self.status in (FIRST, CONSISTENT, STALE)


# the consistency proof from one size to another, as the remote ledger serves it (raises Gone)
ProofFetch = Callable[[int, int], Sequence[bytes]]


class MonitorState:
    """The last verified checkpoint of one remote ledger, kept in a directory (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / STATE_FILE

    def load(self, verifier: Verifier) -> SignedCheckpoint | None:
        """The kept checkpoint, verified again with the pinned key (NoteError if it no longer verifies)."""
        if not self.path.exists():
            return None
        return open_checkpoint(self.path.read_text(encoding="utf-8"), verifier)

    def keep(self, signed: SignedCheckpoint) -> None:
        """Replace the kept checkpoint: a temporary file, fsynced, renamed over the old one."""
        self._write(self.path, signed.note)

    def evidence(self, kept: SignedCheckpoint | None, seen: str, message: str) -> Path:
        """Write what was caught (both notes and the verdict) to a file of its own; return its path."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = self.dir / f"evidence-{stamp}.txt"
        held = kept.note if kept is not None else "(none)\n"
        text = f"{message}\n\n-- the checkpoint kept --\n{held}\n-- the checkpoint served --\n{seen}"
        self._write(path, text)
        return path

    def _write(self, path: Path, text: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def observe(
    kept: SignedCheckpoint | None,
    note: str,
    verifier: Verifier,
    proof: ProofFetch,
    quorum: Quorum = NO_QUORUM,
) -> Observation:
    """Hold a checkpoint just served against the one kept; say what the remote ledger did."""
    try:
        seen = open_checkpoint(note, verifier)
    except NoteError as e:
        why = f"bad signature: the checkpoint served does not verify: {e.message}"
        return Observation(BAD_SIGNATURE, why, kept)
    try:
        quorum.check(note)
    except NoteError as e:
        return Observation(NOT_COSIGNED, f"not cosigned: {e.message}", kept)
    new = seen.checkpoint
    if kept is None:
        return Observation(FIRST, f"first checkpoint kept: size {new.size}, root {_b64(new.root)}", seen)
    old = kept.checkpoint
    if new.size == old.size:
        if new.root != old.root:
            return Observation(REWRITTEN, _forked(old.size, old.root, new.root), kept)
        return Observation(CONSISTENT, f"consistent: the same tree of {new.size} events", kept)
    small, big = (new, old) if new.size < old.size else (old, new)
    try:
        path = proof(small.size, big.size)
        verify_consistency(small.size, big.size, small.root, big.root, path)
    except Gone as e:
        # asked for a proof up to the size it once signed, the ledger says it no longer holds it
        return Observation(
            TRUNCATED,
            f"truncated: a checkpoint of {old.size} events was kept, the ledger now serves {new.size} "
            f"and holds fewer events than {big.size} ({e})",
            kept,
        )
    except ProofError as e:
        return Observation(
            REWRITTEN,
            f"rewritten: the tree of {new.size} events served does not extend the kept one of {old.size} "
            f"events (root {_b64(old.root)}): {e}",
            kept,
        )
    if new.size < old.size:
        why = f"stale: the ledger served an older checkpoint ({new.size} events), a prefix of the kept one"
        return Observation(STALE, why, kept)
    return Observation(
        CONSISTENT,
        f"consistent: {old.size} -> {new.size} events, root {_b64(new.root)} (consistency proof of "
        f"{len(path)} hashes verified)",
        seen,
    )


def proof_from_json(body: Any, old_size: int, new_size: int) -> list[bytes]:
    """The consistency_path of a GET /checkpoint/consistency answer, checked to be for these sizes."""
    if not isinstance(body, dict) or body.get("from") != old_size or body.get("to") != new_size:
        raise ProofError(f"the server answered a proof for other sizes than {old_size} -> {new_size}")
    path = body.get("consistency_path")
    if not isinstance(path, list) or not all(isinstance(h, str) for h in path):
        raise ProofError("the server's consistency_path is not a list of base64 hashes")
    try:
        return [base64.b64decode(h, validate=True) for h in path]
    except (binascii.Error, ValueError):
        raise ProofError("the server's consistency_path holds a hash that is not base64") from None


def _forked(size: int, kept_root: bytes, served_root: bytes) -> str:
    return (
        f"rewritten: two checkpoints of {size} events signed with the same key disagree: kept root "
        f"{_b64(kept_root)}, served root {_b64(served_root)}"
    )


def _b64(h: bytes) -> str:
    return base64.b64encode(h).decode()

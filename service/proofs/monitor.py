"""The client side of a ledger's checkpoints: remember the last one verified, refuse a fork or a cut.

A monitor (`ledger monitor URL`) fetches a remote ledger's signed checkpoint, verifies its signature with
the key it pinned, and proves with the ledger's own consistency proofs that each new checkpoint extends
the last one it kept, as Go's checksum-database client does with its latest tree. A ledger that shows a
smaller tree than one already seen was truncated; one whose root differs at a size already seen, or
whose proof does not lead from the old root to the new, was rewritten. The fetching is the caller's
(the CLI's HTTP): this module only decides, and keeps the state in a directory.

Following the events too (`--events`), the monitor trusts no proof of the ledger's: it reads each event
past those it verified, a page at a time, recomputes its hash from the bytes served and the chain, and
the tree's root with a compact range, which must be the root each kept checkpoint was signed over. Its
state stays O(log n): the last seq and hash and the compact range's hashes.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from ledger.model.events import StoredEvent
from ledger.model.jsonvalue import Json
from ledger.tlog.chain import GENESIS, envelope_body, link_hash
from ledger.tlog.checkpoint import SignedCheckpoint, Verifier, open_checkpoint
from ledger.tlog.checkpoint_notes import Checkpoint, NoteError
from ledger.tlog.cosign import NO_QUORUM, Quorum
from ledger.tlog.held_checkpoint import CONSISTENT, REWRITTEN, TRUNCATED
from ledger.tlog.merkle import HASH_SIZE, CompactRange, ProofError, leaf_hash, verify_consistency

BAD_SIGNATURE = "bad signature"
NOT_COSIGNED = "not cosigned"  # fewer witness cosignatures than the quorum: possibly a view for us alone
FIRST = "first"  # no checkpoint kept yet: this one is kept (trust on first use)
STALE = "stale"  # an older checkpoint than the one kept, proven a prefix of it: nothing to keep
STATE_FILE = "checkpoint"
EVENTS_FILE = "events"  # with --events: the events verified (last seq and hash, the compact range)
PAGE = 1000  # events asked for at a time (GET /evidence's largest page)


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


class BadAnswer(Exception):
    """The remote ledger answered something that is not what was asked for (not a verdict)."""


class Followed(NamedTuple):
    """The events a monitor verified: seq 1..size, the hash of seq `size`, the roots of the complete
    subtrees covering them (a compact range: one per set bit of size)."""

    size: int = 0
    hash: str = GENESIS
    peaks: tuple[bytes, ...] = ()


class Page(NamedTuple):
    """One page of GET /evidence: its events in seq order (data as the bytes served), and the head seq."""

    events: list[StoredEvent[bytes]]
    head_seq: int


# the events after a seq, at most `limit` of them, as the remote ledger serves them
PageFetch = Callable[[int, int], Page]


class MonitorState:
    """The last verified checkpoint of one remote ledger, kept in a directory (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / STATE_FILE
        self.events_path = directory / EVENTS_FILE

    def load_events(self) -> Followed:
        """The events verified so far (none yet: seq 0); ValueError if the file is not one this wrote."""
        if not self.events_path.exists():
            return Followed()
        try:
            d = json.loads(self.events_path.read_text(encoding="utf-8"))
            size, hash_, peaks = int(d["size"]), str(d["hash"]), [base64.b64decode(p) for p in d["peaks"]]
        except (ValueError, KeyError, TypeError, binascii.Error) as e:
            raise ValueError(f"{self.events_path} is not a monitor's events state: {e}") from None
        if size < 0 or len(bytes.fromhex(hash_)) != 32 or any(len(p) != HASH_SIZE for p in peaks):
            raise ValueError(f"{self.events_path} is not a monitor's events state")
        CompactRange(size, peaks)  # ValueError unless one peak per set bit of size
        return Followed(size, hash_, tuple(peaks))

    def keep_events(self, followed: Followed) -> None:
        """Replace the events state (atomically, as the checkpoint)."""
        peaks = [base64.b64encode(p).decode() for p in followed.peaks]
        state = {"size": followed.size, "hash": followed.hash, "peaks": peaks}
        self._write(self.events_path, json.dumps(state))

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


class EventsSeen(NamedTuple):
    """What reading the events up to a checkpoint found."""

    status: str  # CONSISTENT, TRUNCATED or REWRITTEN
    message: str
    followed: Followed  # the events verified after this read (unchanged unless CONSISTENT)

    @property
    def ok(self) -> bool:
        """True when every event read chained and the root is the checkpoint's."""
        return self.status == CONSISTENT


def follow_events(done: Followed, target: Checkpoint, fetch: PageFetch, page: int = PAGE) -> EventsSeen:
    """Read the events past `done` up to the checkpoint's size; hold their hashes and root to it."""
    if target.size < done.size:
        raise ValueError(f"{done.size} events verified, more than the checkpoint's {target.size}")
    prev, size, tree = done.hash, done.size, CompactRange(done.size, done.peaks)
    anchor = size > 0  # seq `size` is read again: a re-chained history cannot keep its hash
    while size < target.size or anchor:
        after = size - 1 if anchor else size
        got = fetch(after, min(page, target.size - after))
        if not got.events:
            if anchor:
                why = f"the monitor verified {size} events, the ledger now serves {got.head_seq}"
                return EventsSeen(TRUNCATED, f"truncated: {why}: event seq {size} is gone", done)
            return EventsSeen(
                TRUNCATED,
                f"truncated: the checkpoint signed for {target.size} events is served, but the ledger serves "
                f"only {size} events: seqs {size + 1}..{target.size} are missing",
                done,
            )
        for e in got.events[: target.size - after]:
            body = envelope_body(e)
            if anchor:
                anchor = False
                if e.seq != size:
                    first = f"asked for the events after seq {after}, the ledger served seq {e.seq} first"
                    return EventsSeen(REWRITTEN, f"rewritten: {first}", done)
                if e.hash != prev or link_hash(e.prev_hash, body) != e.hash:
                    return EventsSeen(
                        REWRITTEN,
                        f"rewritten: event seq {size} is served with hash {e.hash}, the monitor verified "
                        f"{prev}: events at or below seq {size} were changed",
                        done,
                    )
                continue
            broken = _unchained(e, size, prev, body)
            if broken is not None:
                return EventsSeen(REWRITTEN, f"rewritten: {broken}", done)
            tree.append(leaf_hash(body))
            prev, size = e.hash, e.seq
    if tree.root() != target.root:
        return EventsSeen(
            REWRITTEN,
            f"rewritten: the {target.size} events served hash to root {_b64(tree.root())}, the checkpoint "
            f"signed for {target.size} events has root {_b64(target.root)}: one of seqs "
            f"{done.size + 1}..{target.size} is not the event the tree was signed over",
            done,
        )
    followed = Followed(size, prev, tuple(tree.peaks))
    if size == done.size:
        why = f"event seq {size} is served unchanged" if size else "no event yet"
        return EventsSeen(CONSISTENT, f"events: {why}; the root is the checkpoint's", followed)
    onto = f" onto seq {done.size}" if done.size else ""
    return EventsSeen(
        CONSISTENT,
        f"events {done.size + 1}..{size} read: each hash recomputed from the bytes served and chained"
        f"{onto}; the root of {size} events is the checkpoint's",
        followed,
    )


def _unchained(e: StoredEvent[bytes], last: int, prev: str, body: bytes) -> str | None:
    """Why event `e`, served after seq `last` whose hash is `prev`, does not follow it (None if it does)."""
    if e.seq != last + 1:
        return f"the ledger served seq {e.seq} after seq {last}: a gap or a reorder"
    if e.prev_hash != prev:
        return (
            f"event seq {e.seq} does not chain onto event seq {last} as verified: its prev_hash is "
            f"{e.prev_hash}, the hash of seq {last} is {prev}"
        )
    if link_hash(prev, body) != e.hash:
        return f"event seq {e.seq}: the bytes served do not hash to its hash {e.hash} (the event was altered)"
    return None


class _Page(msgspec.Struct):
    events: list[StoredEvent[msgspec.Raw]]
    head: dict[str, Any]


_PAGE = msgspec.json.Decoder(_Page)


def page_from_json(raw: bytes) -> Page:
    """A GET /evidence answer as a Page, each event's data the very bytes served (BadAnswer if not)."""
    try:
        page = _PAGE.decode(raw)
        head_seq = page.head["seq"]
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError) as e:
        raise BadAnswer(f"the evidence page is not one GET /evidence serves: {e}") from None
    if type(head_seq) is not int:
        raise BadAnswer("the evidence page's head.seq is not an integer")
    events = [msgspec.structs.replace(e, data=bytes(e.data)) for e in page.events]
    return Page(events, head_seq)  # type: ignore[arg-type]


def proof_from_json(body: Json, old_size: int, new_size: int) -> list[bytes]:
    """The consistency_path of a GET /checkpoint/consistency answer, checked to be for these sizes."""
    if not isinstance(body, dict) or body.get("from") != old_size or body.get("to") != new_size:
        raise ProofError(f"the server answered a proof for other sizes than {old_size} -> {new_size}")
    path = body.get("consistency_path")
    if not isinstance(path, list) or not all(isinstance(h, str) for h in path):
        raise ProofError("the server's consistency_path is not a list of base64 hashes")
    hashes = [h for h in path if isinstance(h, str)]  # every one of them, as checked
    try:
        return [base64.b64decode(h, validate=True) for h in hashes]
    except (binascii.Error, ValueError):
        raise ProofError("the server's consistency_path holds a hash that is not base64") from None


def _forked(size: int, kept_root: bytes, served_root: bytes) -> str:
    return (
        f"rewritten: two checkpoints of {size} events signed with the same key disagree: kept root "
        f"{_b64(kept_root)}, served root {_b64(served_root)}"
    )


def _b64(h: bytes) -> str:
    return base64.b64encode(h).decode()

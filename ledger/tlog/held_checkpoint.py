"""A checkpoint someone holds, held against the tree the ledger has now: consistent, truncated or rewritten.

Whoever once received a signed checkpoint (GET /checkpoint, `ledger checkpoint`, a bundle) holds the
ledger to it: the tree now must be at least that big, must have the same root at that size, and must
extend it (an RFC 6962 consistency proof from that size to the head verifies). A ledger cut off at
the end is a valid shorter chain, and one rewritten and re-chained verifies by itself; only the held
checkpoint tells them apart from an honest one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ledger.model.jsonvalue import JsonObject
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import SignedCheckpoint
from ledger.tlog.merkle import ProofError, verify_consistency

if TYPE_CHECKING:
    from ledger.tlog.stored import LogStore

CONSISTENT = "consistent"
TRUNCATED = "truncated"
REWRITTEN = "rewritten"


class HeldVerdict(NamedTuple):
    """What the tree now says of a held checkpoint, and the numbers that show it."""

    status: str  # CONSISTENT, TRUNCATED or REWRITTEN
    held_size: int
    held_root: bytes
    size: int  # the tree's size now
    root: bytes  # the tree's root now
    root_at_held_size: bytes | None  # the tree's root now at the held size (None: the tree is smaller)
    consistency_path: list[bytes]  # from the held size to the size now, when consistent

    @property
    def ok(self) -> bool:
        """True when the tree now extends the held checkpoint."""
        return self.status == CONSISTENT

    def message(self) -> str:
        """One line a person reads: the verdict and the sizes and roots behind it."""
        b64 = merkle_store.b64
        if self.status == TRUNCATED:
            gone = (
                f"event {self.held_size} was"
                if self.size + 1 == self.held_size
                else f"events {self.size + 1}..{self.held_size} were"
            )
            return (
                f"truncated: the held checkpoint covers {self.held_size} events, the ledger now holds "
                f"{self.size}: {gone} cut off or rolled back"
            )
        if self.status == REWRITTEN:
            assert self.root_at_held_size is not None
            return (
                f"rewritten: at size {self.held_size} the held checkpoint's root is "
                f"{b64(self.held_root)}, the ledger's root now is {b64(self.root_at_held_size)}: "
                "events at or below that size were changed"
            )
        grown = "the same tree" if self.size == self.held_size else f"grown to {self.size} events"
        return (
            f"consistent: the ledger extends the held checkpoint of {self.held_size} events ({grown}, "
            f"root {b64(self.root)}; consistency proof of {len(self.consistency_path)} hashes verified)"
        )

    def to_dict(self) -> JsonObject:
        """The verdict as JSON (hashes in base64, as in the checkpoint)."""
        b64 = merkle_store.b64
        return {
            "status": self.status,
            "ok": self.ok,
            "held": {"size": self.held_size, "root": b64(self.held_root)},
            "now": {"size": self.size, "root": b64(self.root)},
            "root_at_held_size": None if self.root_at_held_size is None else b64(self.root_at_held_size),
            "consistency_path": [b64(h) for h in self.consistency_path],
            "message": self.message(),
        }


def hold_against(store: LogStore, held: SignedCheckpoint, *, fill: bool = True) -> HeldVerdict:
    """Check the tree now against a held checkpoint whose signature the caller has verified."""
    cp = held.checkpoint
    size = store.head().seq
    root = merkle_store.tree_root(store, size, fill=fill)
    if cp.size > size:
        return HeldVerdict(TRUNCATED, cp.size, cp.root, size, root, None, [])
    at_held = merkle_store.tree_root(store, cp.size, fill=fill)
    if at_held != cp.root:
        return HeldVerdict(REWRITTEN, cp.size, cp.root, size, root, at_held, [])
    path = merkle_store.consistency(store, cp.size, size, fill=fill)
    try:
        # the ledger's own proof, checked as the holder would check it: the tree now extends the held one
        verify_consistency(cp.size, size, cp.root, root, path)
    except ProofError:
        return HeldVerdict(REWRITTEN, cp.size, cp.root, size, root, at_held, [])
    return HeldVerdict(CONSISTENT, cp.size, cp.root, size, root, at_held, path)

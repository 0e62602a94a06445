"""The log and its proofs as a door asks for them: the head, pages of envelopes, inclusion and
consistency proofs, signed checkpoints, a held checkpoint's verdict, the witnesses' cosigner and the
full walk. The store stays inside."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ledger.model.events import StoredEvent
from ledger.model.facts import Head, ScrubPass, VerifiedPoint
from ledger.model.instants import Clock
from ledger.storage.interface import Store
from ledger.storage.verify import VerifyReport, verify_store
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import Checkpointer, SignedCheckpoint
from ledger.tlog.held_checkpoint import HeldVerdict, hold_against
from ledger.tlog.merkle_store import InclusionProof
from service.ops.witnessing import Answered, Cosigner, Post, Witness
from service.records import Chain


class Consistency(NamedTuple):
    """A consistency proof between two tree sizes, with both trees' roots."""

    path: list[bytes]
    old_root: bytes
    new_root: bytes


class Log:
    """The event log of one ledger and what proves it."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        # when a walk that is remembered says it was made
        self._clock = clock

    def head(self) -> Head:
        """The last seq and hash."""
        return self._store.head()

    def head_and_chain(self, chain: Chain) -> tuple[Head, ScrubPass | None]:
        """The head and what `chain()` says of the chain (the last full walk, when broken), in one
        consistent read: a banner that describes the head it is served with."""
        with self._store.verifying.consistent_read():
            return self._store.head(), chain()

    def read_log(
        self, after: int = 0, limit: int | None = None, stream: str | None = None, type: str | None = None
    ) -> list[StoredEvent]:
        """Stored envelopes in seq order after `after`, optionally one stream or type."""
        return self._store.read_log(after, limit, stream, type)

    def checkpointer(self, origin: str | None = None) -> Checkpointer:
        """The ledger's signer of checkpoints (its key file, its last signed checkpoint)."""
        return Checkpointer.for_db(self._store, origin)

    def inclusion(self, seq: int, tree_size: int | None = None, *, fill: bool = True) -> InclusionProof:
        """The inclusion proof of event `seq` in the tree of `tree_size` leaves (default: the head);
        `fill` False stores no Merkle node (a read-only server)."""
        return merkle_store.inclusion(self._store, seq, tree_size, fill=fill)

    def consistency(self, old_size: int, new_size: int, *, fill: bool = True) -> Consistency:
        """The consistency proof from the tree of `old_size` leaves to the one of `new_size`, and the
        roots of both."""
        path = merkle_store.consistency(self._store, old_size, new_size, fill=fill)
        old = merkle_store.tree_root(self._store, old_size, fill=fill)
        return Consistency(path, old, merkle_store.tree_root(self._store, new_size, fill=fill))

    def hold_against(self, held: SignedCheckpoint, *, fill: bool = True) -> HeldVerdict:
        """The tree now held against a checkpoint someone kept: consistent, truncated or rewritten."""
        return hold_against(self._store, held, fill=fill)

    def cosigner(
        self, witnesses: Sequence[Witness], post: Post, on_answer: Answered | None = None
    ) -> Cosigner:
        """A cosigner that sends this ledger's checkpoints to `witnesses` through `post`."""
        return Cosigner(self._store, witnesses, post, on_answer)

    def verified_point(self) -> VerifiedPoint | None:
        """Where the last full walk left off (None: never walked)."""
        return self._store.verifying.verified_point()

    def verify(
        self, progress: Callable[[int], None] | None = None, *, remember: bool = False, every: int = 10000
    ) -> VerifyReport:
        """Recompute the whole chain, the derived rows, the stored Merkle nodes and the checkpoint;
        `remember` keeps where it reached as the next walk's resume point."""
        at = self._clock if remember else None
        return verify_store(self._store, progress, remember=at, every=every)

"""Inclusion proofs of many events in one signed checkpoint: sign once, then prove chunk by chunk.

A bundle of a much-cited paper proves some 200,000 events. Proving them one by one (a walk down the
whole tree per event, a read of its 16-leaf block per event) costs tens of microseconds each; here a
chunk of seqs reads the leaves of the blocks it touches in one statement (or is handed those already
read), hashes each node once, and walks the tree above a block once for all its leaves. The answers
are those of merkle_store.inclusion (tests/service/proofs/test_proofs.py holds them equal).
"""

from __future__ import annotations

import binascii
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from hashlib import sha256
from typing import Any, NamedTuple

from ledger.model.errors import ChainBroken, NotFound
from ledger.tlog import merkle_store
from ledger.tlog.chain import envelope_body
from ledger.tlog.checkpoint import Checkpointer, NoteError, NotSigned, SignedCheckpoint, open_checkpoint
from ledger.tlog.merkle import inclusion_proof, leaf_hash, split_point, subtree_hash
from ledger.tlog.merkle_store import BLOCK, STORED_LEVEL
from service.ledger import Ledger
from service.ops.witnessing import cosigned_note


class Signed(NamedTuple):
    """One signed checkpoint, the public key (None: a read-only server without the key file) and the
    tree its proofs are read from."""

    note: str
    key: str | None
    size: int
    tree: merkle_store.StoredTree


def sign_covering(
    ledger: Ledger, last_seq: int, checkpointer: Checkpointer | None = None, *, sign: bool = True
) -> Signed:
    """A signed checkpoint covering every seq up to `last_seq`, to prove them in.

    sign=False (a read-only server) signs nothing, creates no key and stores no Merkle node: it is the
    last signed checkpoint, NotSigned when there is none or it does not cover `last_seq`.
    """
    checkpointer = checkpointer or Checkpointer.for_db(ledger.store)
    if sign:
        # Called after the seqs were read, so the checkpoint of the head covers them all.
        signed = checkpointer.latest()
        key: str | None = checkpointer.verifier().vkey
    else:
        signed = checkpointer.held()
        verifier = checkpointer.existing_verifier()
        key = None if verifier is None else verifier.vkey
    cosigned = _cosigned(ledger, checkpointer, last_seq)
    if cosigned is not None:  # the witnesses' cosignatures travel with the proofs
        signed = cosigned
    size = signed.checkpoint.size
    if last_seq > size:
        if not sign:
            raise NotSigned(
                f"the last signed checkpoint (size {size}) does not cover seq {last_seq}, and this "
                "server is read-only: it signs nothing",
                details={"checkpoint_size": size, "seq": last_seq},
            )
        raise NotFound(f"the checkpoint (size {size}) does not cover seq {last_seq}")
    return Signed(signed.note, key, size, merkle_store.ensure(ledger.store, size, fill=sign))


def checkpoint_at(
    ledger: Ledger, tree_size: int, checkpointer: Checkpointer | None = None, *, sign: bool = True
) -> Signed:
    """The signed checkpoint of exactly `tree_size` events (the head an answer was computed at): the
    witnesses' cosigned one or the last signed one when it is that size, else one signed now.

    sign=False (a read-only server) signs nothing: NotSigned unless a kept one is that size.
    """
    checkpointer = checkpointer or Checkpointer.for_db(ledger.store)
    cosigned = _cosigned(ledger, checkpointer, tree_size)
    if cosigned is not None and cosigned.checkpoint.size == tree_size:
        signed = cosigned
    elif sign:
        signed = checkpointer.at(tree_size)
    else:
        signed = checkpointer.held()
        if signed.checkpoint.size != tree_size:
            raise NotSigned(
                f"the last signed checkpoint is of size {signed.checkpoint.size}, not {tree_size}, and "
                "this server is read-only: it signs nothing",
                details={"checkpoint_size": signed.checkpoint.size, "tree_size": tree_size},
            )
    verifier = checkpointer.existing_verifier()
    key = None if verifier is None else verifier.vkey
    return Signed(signed.note, key, tree_size, merkle_store.ensure(ledger.store, tree_size, fill=sign))


def _cosigned(ledger: Ledger, checkpointer: Checkpointer, last_seq: int) -> SignedCheckpoint | None:
    """The newest cosigned checkpoint when it covers `last_seq` and verifies with the ledger's key."""
    note = cosigned_note(ledger.store)
    verifier = checkpointer.existing_verifier()
    if note is None or verifier is None:
        return None
    try:
        signed = open_checkpoint(note, verifier)
    except NoteError:
        return None  # not this key's (the key was changed since): the plain signed checkpoint serves
    return signed if signed.checkpoint.size >= last_seq else None


def prove_seqs(
    ledger: Ledger,
    seqs: list[int],
    checkpointer: Checkpointer | None = None,
    *,
    sign: bool = True,
    stored_above: bool = False,
) -> dict[str, Any]:
    """Inclusion proofs of `seqs` against one signed checkpoint, with the note and the public key
    (sign=False: see sign_covering; stored_above: see prove)."""
    signed = sign_covering(ledger, max(seqs, default=0), checkpointer, sign=sign)
    proofs = prove(ledger, seqs, signed, stored_above=stored_above)
    return {"proofs": proofs, "checkpoint": signed.note, "key": signed.key}


def prove(
    ledger: Ledger,
    seqs: Sequence[int],
    signed: Signed,
    leaves: Leaves | Mapping[int, bytes] | None = None,
    *,
    stored_above: bool = False,
) -> list[dict[str, Any]]:
    """The inclusion proof of each of `seqs` in the signed tree, in the order given, as JSON values.

    `leaves` may hold the leaf hashes of some events already read (seq -> hash); the others of the
    blocks these seqs touch are read. Memory holds those blocks: call it a chunk of seqs at a time.
    Every node above a block is hashed from the leaves read when they hold it, unless `stored_above`:
    then it is the stored tree's, so an edited event fails its own block's proofs only (an audit
    names the damage; on an intact ledger both give the same proofs).
    """
    size = signed.size
    for seq in seqs:
        if not 1 <= seq <= size:
            raise NotFound(f"seq {seq} is not in the tree of size {size}")
    blocks = _Blocks(
        ledger, sorted({(s - 1) >> STORED_LEVEL for s in seqs}), signed, leaves or {}, stored_above
    )
    return [
        {"seq": seq, "leaf_index": seq - 1, "tree_size": size, "inclusion_path": blocks.path(seq - 1)}
        for seq in seqs
    ]


class _Blocks:
    """A NodeSource over the leaves of some blocks of 16 (every leaf of each below the tree size) and
    the stored tree: a subtree whose leaves are all held is hashed from them (a node of a neighbouring
    block costs a hash, not a read), any other is the stored tree's."""

    def __init__(
        self,
        ledger: Ledger,
        blocks: list[int],
        signed: Signed,
        known: Leaves | Mapping[int, bytes],
        stored_above: bool = False,
    ) -> None:
        self.tree, self.size = signed.tree, signed.size
        self.runs = [] if stored_above else _runs(blocks)  # no run held: every node above is stored
        self.memo: dict[tuple[int, int], bytes] = {}
        self.inner: dict[int, list[list[str]]] = {}  # whole block -> base64 of its levels 0..3
        self.above: dict[int, list[str]] = {}  # whole block -> base64 of the path above it
        self.ranges: dict[tuple[int, int], str] = {}  # (start, end) -> base64 of its subtree hash
        self._walk: list[tuple[int, int, str]] = []  # the last block's recursion: (start, end, sibling)
        for block, leaves in _read_leaves(ledger, blocks, self.size, known):
            levels = [leaves]
            while len(levels) <= STORED_LEVEL and len(levels[-1]) % 2 == 0 and len(levels[-1]) > 1:
                below = levels[-1]
                levels.append([_node(below[i], below[i + 1]) for i in range(0, len(below), 2)])
            if len(leaves) == BLOCK:
                self.inner[block] = [[_b64(h) for h in hashes] for hashes in levels[:STORED_LEVEL]]
                if not stored_above:
                    self.memo[(STORED_LEVEL, block)] = levels[STORED_LEVEL][0]
            else:  # the tree's right edge: its proofs ask for the nodes inside the block
                for level, hashes in enumerate(levels):
                    first = block << (STORED_LEVEL - level)
                    self.memo.update(((level, first + i), h) for i, h in enumerate(hashes))

    def node(self, level: int, index: int) -> bytes:
        """The complete subtree (level, index)."""
        key = (level, index)
        h = self.memo.get(key)
        if h is None:
            if level > STORED_LEVEL and self._held(index << level, (index + 1) << level):
                h = _node(self.node(level - 1, 2 * index), self.node(level - 1, 2 * index + 1))
            else:
                h = self.tree.node(level, index)
            self.memo[key] = h
        return h

    def _held(self, first: int, end: int) -> bool:
        """Whether leaves first..end-1 are all held: below the size, in one run of blocks read."""
        if end > self.size:
            return False
        i = bisect_right(self.runs, (first >> STORED_LEVEL, 1 << 62)) - 1
        return i >= 0 and self.runs[i][1] >= (end - 1) >> STORED_LEVEL

    def path(self, index: int) -> list[str]:
        """PATH(index, D[0:size]) in base64, leaf-side first."""
        block = index >> STORED_LEVEL
        inner = self.inner.get(block)
        if inner is None or (block + 1) * BLOCK > self.size:
            # the right edge of the tree: its subtrees are not whole blocks
            return [_b64(h) for h in inclusion_proof(self, index, self.size)]
        # A whole block is a node of RFC 6962's recursion (each split point past 16 leaves is a multiple
        # of 16): the path is the block's own 4 levels, then the walk above it, the same for its leaves.
        above = self.above.get(block)
        if above is None:
            above = self.above[block] = self._above(block * BLOCK)
        j = index % BLOCK
        return [
            inner[0][j ^ 1],
            inner[1][(j >> 1) ^ 1],
            inner[2][(j >> 2) ^ 1],
            inner[3][(j >> 3) ^ 1],
            *above,
        ]

    def _above(self, first: int) -> list[str]:
        """The siblings on the way from the root down to the block starting at leaf `first`, leaf-side
        first. The walk to the last block is kept: from the deepest range they share, a block in order
        costs a step or two, not the tree's height."""
        walk = self._walk
        while walk and not walk[-1][0] <= first < walk[-1][1]:
            walk.pop()
        start, end = (walk[-1][0], walk[-1][1]) if walk else (0, self.size)
        while end - start > BLOCK:
            mid = start + split_point(end - start)
            if first < mid:
                walk.append((start, mid, self._range64(mid, end)))
                end = mid
            else:
                walk.append((mid, end, self._range64(start, mid)))
                start = mid
        return [sibling for _, _, sibling in reversed(walk)]

    def _range64(self, start: int, end: int) -> str:
        s = self.ranges.get((start, end))
        if s is None:
            s = self.ranges[(start, end)] = _b64(subtree_hash(self, start, end))
        return s


class Leaves:
    """Leaf hashes of events already read, added in ascending seq order: 40 bytes an event."""

    def __init__(self) -> None:
        self.seqs = array("q")
        self.hashes = bytearray()

    def add(self, seq: int, leaf: bytes) -> None:
        """The leaf hash of event `seq` (after every seq added so far)."""
        self.seqs.append(seq)
        self.hashes += leaf

    def run(self, seqs: range) -> list[bytes | None]:
        """The leaf hash of each of `seqs` (ascending), None where not added."""
        i, n = bisect_left(self.seqs, seqs.start), len(self.seqs)
        out: list[bytes | None] = []
        for seq in seqs:
            if i < n and self.seqs[i] == seq:
                out.append(bytes(self.hashes[32 * i : 32 * i + 32]))
                i += 1
            else:
                out.append(None)
        return out


def _read_leaves(
    ledger: Ledger, blocks: list[int], size: int, known: Leaves | Mapping[int, bytes]
) -> list[tuple[int, list[bytes]]]:
    """(block, the leaf hashes of its events below the tree size): from `known`, else read in one go."""
    spans = [(b, _known(known, range(b * BLOCK + 1, min((b + 1) * BLOCK, size) + 1))) for b in blocks]
    missing = [b * BLOCK + i + 1 for b, leaves in spans for i, h in enumerate(leaves) if h is None]
    read = {e.seq: leaf_hash(envelope_body(e)) for e in ledger.store.envelopes(missing)} if missing else {}
    out = []
    for b, leaves in spans:
        full = []
        for i, h in enumerate(leaves):
            if h is None:
                seq = b * BLOCK + i + 1
                h = read.get(seq)
                if h is None:
                    raise ChainBroken(
                        seq, f"seq {seq} is missing below the checkpoint's size: the sequence has a gap"
                    )
            full.append(h)
        out.append((b, full))
    return out


def _known(known: Leaves | Mapping[int, bytes], seqs: range) -> list[bytes | None]:
    return known.run(seqs) if isinstance(known, Leaves) else [known.get(s) for s in seqs]


def _runs(blocks: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted block numbers as (first, last) runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for b in blocks:
        if runs and runs[-1][1] == b - 1:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((b, b))
    return runs


def _b64(h: bytes) -> str:
    return binascii.b2a_base64(h, newline=False).decode()


def _node(left: bytes, right: bytes) -> bytes:
    """merkle.node_hash, inlined: a bundle hashes some 300,000 nodes."""
    return sha256(b"\x01" + left + right).digest()

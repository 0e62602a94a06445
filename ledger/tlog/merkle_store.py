"""The Merkle tree over a store: stored complete-subtree hashes (via store.tree), proofs from them."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, NamedTuple

from ledger.model.errors import ChainBroken, InvalidEvent, NotFound
from ledger.model.jsonvalue import JsonObject
from ledger.tlog.chain import envelope_body
from ledger.tlog.merkle import (
    CompactRange,
    complete_root,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
)

if TYPE_CHECKING:
    from ledger.tlog.stored import LogStore, TreeTables

# Nodes are stored from this level up (subtrees of 16 leaves): an eighth of a row per event instead
# of two, and anything lower is recomputed from at most 16 events read in one query.
STORED_LEVEL = 4
BLOCK = 1 << STORED_LEVEL
# Leaves hashed per write transaction while filling, so appends never wait long for the lock.
FILL_CHUNK = 1 << 14


def b64(h: bytes) -> str:
    """Standard base64, the encoding of hashes in checkpoints and proofs."""
    return base64.b64encode(h).decode()


class InclusionProof(NamedTuple):
    """Where event `seq` sits in the tree of `tree_size` leaves, and the path to its root."""

    seq: int
    tree_size: int
    leaf_hash: bytes
    path: list[bytes]
    root: bytes

    def to_json(self) -> JsonObject:
        """JSON shape (hashes in base64, as in the checkpoint)."""
        return {
            "seq": self.seq,
            "leaf_index": self.seq - 1,
            "tree_size": self.tree_size,
            "leaf_hash": b64(self.leaf_hash),
            "inclusion_path": [b64(h) for h in self.path],
            "root_hash": b64(self.root),
        }


class StoredTree:
    """A NodeSource over the store: stored nodes from STORED_LEVEL up, lower ones from the events."""

    def __init__(self, store: LogStore) -> None:
        self.store = store
        self._blocks: dict[int, list[bytes]] = {}
        self._nodes: dict[tuple[int, int], bytes] = {}  # proofs for many seqs share their upper nodes

    def hold(self, nodes: list[tuple[int, int, bytes]]) -> None:
        """Keep these (level, index, hash) nodes for this tree's answers (not stored)."""
        self._nodes.update(((lv, i), h) for lv, i, h in nodes)

    def node(self, level: int, index: int) -> bytes:
        """The complete subtree (level, index)."""
        if level >= STORED_LEVEL:
            key = (level, index)
            if key not in self._nodes:
                self._nodes[key] = _stored(self.store.tree, level, index)
            return self._nodes[key]
        first = index << level
        block = self.leaves(first >> STORED_LEVEL)
        offset = first - (first >> STORED_LEVEL << STORED_LEVEL)
        part = block[offset : offset + (1 << level)]
        if len(part) != 1 << level:
            raise NotFound(f"leaves {first + 1}..{first + (1 << level)} are not all in the ledger")
        return complete_root(part)

    def leaves(self, block: int) -> list[bytes]:
        """Leaf hashes of the events in one block of BLOCK leaves (fewer at the head)."""
        if block not in self._blocks:
            events = self.store.read_log(after=block * BLOCK, limit=BLOCK)
            for i, e in enumerate(events):
                if e.seq != block * BLOCK + i + 1:
                    raise ChainBroken(
                        e.seq, f"seq {e.seq} follows {block * BLOCK + i}: the sequence has a gap"
                    )
            self._blocks[block] = [leaf_hash(envelope_body(e)) for e in events]
        return self._blocks[block]


def check_fill(tables: TreeTables) -> tuple[int, str | None]:
    """The fill state, refused if its last leaf is no longer the event the nodes were built over."""
    filled, chain_hash = tables.fill_state()
    if filled and tables.event_hash(filled) != chain_hash:
        raise ChainBroken(
            filled,
            f"the Merkle tree was built over {filled} events and seq {filled} is no longer the event it "
            "covered: the ledger was cut off or rewritten",
        )
    return filled, chain_hash


def ensure(store: LogStore, size: int, *, fill: bool = True) -> StoredTree:
    """A node source for trees up to `size` leaves, storing the complete subtrees it still lacks; with
    fill=False (a read-only server) it computes them in memory instead and writes nothing."""
    head = store.head()
    if size < 0 or size > head.seq:
        raise NotFound(
            f"tree size {size} is beyond the ledger's head (seq {head.seq})",
            details={"tree_size": size, "head_seq": head.seq},
        )
    filled, _ = check_fill(store.tree)
    target = size - size % BLOCK
    if not fill:
        tree = StoredTree(store)
        if filled < target:
            # one node (some 200 bytes of Python objects) per 8 leaves past the fill, for this answer only
            tree.hold(_new_nodes(store, filled, target)[0])
        return tree
    while filled < target:
        filled = _fill_chunk(store, min(target, filled + FILL_CHUNK))
    return StoredTree(store)


def _fill_chunk(store: LogStore, upto: int) -> int:
    """LogStore the nodes of leaves [filled, upto) in one write transaction; returns the new fill."""
    tables = store.tree
    with tables.filling():
        # Re-read under the fill lock: another process may have filled meanwhile.
        filled, _ = check_fill(tables)
        if filled >= upto:
            return filled
        rows, last_hash = _new_nodes(store, filled, upto)
        tables.store_nodes(rows, upto, last_hash)
    return upto


def _new_nodes(store: LogStore, filled: int, upto: int) -> tuple[list[tuple[int, int, bytes]], str]:
    """The stored-level nodes completed by leaves [filled, upto), and the chain hash of seq `upto`."""
    tables = store.tree
    peaks, offset = [], 0
    for level in range(filled.bit_length() - 1, STORED_LEVEL - 1, -1):
        if filled >> level & 1:
            peaks.append(_stored(tables, level, offset >> level))
            offset += 1 << level
    rng = CompactRange(filled, peaks)
    rows: list[tuple[int, int, bytes]] = []
    last_hash, expected = "", filled + 1
    for link in store.iter_chain(after=filled, batch=min(5000, upto - filled)):
        e = link.event
        if e.seq > upto:
            break
        if e.seq != expected:
            raise ChainBroken(e.seq, f"seq {e.seq} follows {expected - 1}: the sequence has a gap")
        rows.extend(n for n in rng.append(leaf_hash(envelope_body(e))) if n[0] >= STORED_LEVEL)
        last_hash, expected = e.hash, expected + 1
    if rng.size != upto:
        raise NotFound(f"the ledger holds {rng.size} events, fewer than the {upto} asked for")
    return rows, last_hash


def _stored(tables: TreeTables, level: int, index: int) -> bytes:
    h = tables.node(level, index)
    if h is None:
        raise ChainBroken((index << level) + 1, f"Merkle node ({level}, {index}) is missing")
    return h


def tree_root(store: LogStore, size: int, *, fill: bool = True) -> bytes:
    """The root of the tree over seq 1..size."""
    return root(ensure(store, size, fill=fill), size)


def inclusion(
    store: LogStore, seq: int, tree_size: int | None = None, *, fill: bool = True
) -> InclusionProof:
    """The inclusion proof of event `seq` in the tree of `tree_size` leaves (default: the head)."""
    size = store.head().seq if tree_size is None else tree_size
    if seq < 1:
        raise InvalidEvent("seq", f"seq {seq} is not an event: seqs start at 1")
    if tree_size is None and seq > size:
        raise NotFound(f"there is no event seq {seq}: the head is seq {size}", details={"head_seq": size})
    if seq > size:
        raise InvalidEvent(
            "tree_size",
            f"event seq {seq} is not in a tree of size {size}; ask with tree_size >= {seq}",
            details={"seq": seq, "tree_size": size},
        )
    tree = ensure(store, size, fill=fill)
    leaf = tree.leaves((seq - 1) >> STORED_LEVEL)[(seq - 1) % BLOCK]
    return InclusionProof(seq, size, leaf, inclusion_proof(tree, seq - 1, size), root(tree, size))


def consistency(store: LogStore, old_size: int, new_size: int, *, fill: bool = True) -> list[bytes]:
    """The consistency proof from the tree of old_size leaves to the one of new_size."""
    if not 0 <= old_size <= new_size:
        raise InvalidEvent(
            "from",
            f"no consistency proof from size {old_size} to size {new_size}: need 0 <= from <= to",
            details={"from": old_size, "to": new_size},
        )
    return consistency_proof(ensure(store, new_size, fill=fill), old_size, new_size)

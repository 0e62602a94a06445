"""The SQL behind the Merkle tree: stored complete-subtree hashes, proofs from them, verify's resume point."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from .chain import body_bytes, row_body
from .errors import ChainBroken, InvalidEvent, NotFound
from .events import StoredEvent
from .instants import format_recorded, now_us
from .merkle import CompactRange, complete_root, consistency_proof, inclusion_proof, leaf_hash, root
from .store import SQLiteStore

# Nodes are stored from this level up (subtrees of 16 leaves): an eighth of a row per event instead
# of two, and anything lower is recomputed from at most 16 events read in one query.
STORED_LEVEL = 4
BLOCK = 1 << STORED_LEVEL
# Leaves hashed per write transaction while filling, so appends never wait long for the lock.
FILL_CHUNK = 1 << 14


def b64(h: bytes) -> str:
    """Standard base64, the encoding of hashes in checkpoints and proofs."""
    return base64.b64encode(h).decode()


def envelope_body(e: StoredEvent) -> bytes:
    """body(e) of ledger-v1.md from a stored envelope: the bytes both the chain and the tree hash."""
    return body_bytes(
        data=e.data,
        event_id=e.event_id,
        observed_at=e.observed_at,
        recorded_at=e.recorded_at,
        seq=e.seq,
        stream=e.stream,
        stream_version=e.stream_version,
        type=e.type,
    )


class InclusionProof(NamedTuple):
    """Where event `seq` sits in the tree of `tree_size` leaves, and the path to its root."""

    seq: int
    tree_size: int
    leaf_hash: bytes
    path: list[bytes]
    root: bytes

    def to_json(self) -> dict[str, Any]:
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

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self._blocks: dict[int, list[bytes]] = {}
        self._nodes: dict[tuple[int, int], bytes] = {}  # proofs for many seqs share their upper nodes

    def node(self, level: int, index: int) -> bytes:
        """The complete subtree (level, index)."""
        if level >= STORED_LEVEL:
            key = (level, index)
            if key not in self._nodes:
                self._nodes[key] = _stored(self.store._conn(), level, index)
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


def fill_state(conn: sqlite3.Connection) -> tuple[int, str | None]:
    """(leaves covered by stored nodes, chain hash of the last of them)."""
    row = conn.execute("SELECT leaves, chain_hash FROM merkle_fill WHERE id = 1").fetchone()
    return (0, None) if row is None else (int(row[0]), str(row[1]))


def event_hash(conn: sqlite3.Connection, seq: int) -> str | None:
    """The stored chain hash of one seq (None if absent)."""
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])


def check_fill(conn: sqlite3.Connection) -> tuple[int, str | None]:
    """The fill state, refused if its last leaf is no longer the event the nodes were built over."""
    filled, chain_hash = fill_state(conn)
    if filled and event_hash(conn, filled) != chain_hash:
        raise ChainBroken(
            filled,
            f"the Merkle tree was built over {filled} events and seq {filled} is no longer the event it "
            "covered: the ledger was cut off or rewritten",
        )
    return filled, chain_hash


def ensure(store: SQLiteStore, size: int) -> StoredTree:
    """A node source for trees up to `size` leaves, storing the complete subtrees it still lacks."""
    head = store.head()
    if size < 0 or size > head.seq:
        raise NotFound(
            f"tree size {size} is beyond the ledger's head (seq {head.seq})",
            details={"tree_size": size, "head_seq": head.seq},
        )
    conn = store._conn()
    filled, _ = check_fill(conn)
    target = size - size % BLOCK
    while filled < target:
        filled = _fill_chunk(store, min(target, filled + FILL_CHUNK))
    return StoredTree(store)


def _fill_chunk(store: SQLiteStore, upto: int) -> int:
    """Store the nodes of leaves [filled, upto) in one write transaction; returns the new fill."""
    conn = store._conn()
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have filled meanwhile.
        filled, _ = check_fill(conn)
        if filled >= upto:
            conn.execute("COMMIT")
            return filled
        peaks, offset = [], 0
        for level in range(filled.bit_length() - 1, STORED_LEVEL - 1, -1):
            if filled >> level & 1:
                peaks.append(_stored(conn, level, offset >> level))
                offset += 1 << level
        rng = CompactRange(filled, peaks)
        rows: list[tuple[int, int, bytes]] = []
        last_hash, expected = "", filled + 1
        for row in store.iter_chain(after=filled, batch=min(5000, upto - filled)):
            if row[0] > upto:
                break
            if row[0] != expected:
                raise ChainBroken(row[0], f"seq {row[0]} follows {expected - 1}: the sequence has a gap")
            rows.extend(n for n in rng.append(leaf_hash(row_body(row))) if n[0] >= STORED_LEVEL)
            last_hash, expected = row[9], expected + 1
        if rng.size != upto:
            raise NotFound(f"the ledger holds {rng.size} events, fewer than the {upto} asked for")
        conn.executemany("INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)", rows)
        conn.execute(
            "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves, chain_hash = excluded.chain_hash",
            (upto, last_hash),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return upto


def _stored(conn: sqlite3.Connection, level: int, index: int) -> bytes:
    row = conn.execute("SELECT hash FROM merkle_nodes WHERE level = ? AND idx = ?", (level, index)).fetchone()
    if row is None:
        raise ChainBroken((index << level) + 1, f"Merkle node ({level}, {index}) is missing")
    return bytes(row[0])


def tree_root(store: SQLiteStore, size: int) -> bytes:
    """The root of the tree over seq 1..size."""
    return root(ensure(store, size), size)


def inclusion(
    store: SQLiteStore, seq: int, tree_size: int | None = None, tree: StoredTree | None = None
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
    tree = tree or ensure(store, size)
    leaf = tree.leaves((seq - 1) >> STORED_LEVEL)[(seq - 1) % BLOCK]
    return InclusionProof(seq, size, leaf, inclusion_proof(tree, seq - 1, size), root(tree, size))


def consistency(store: SQLiteStore, old_size: int, new_size: int) -> list[bytes]:
    """The consistency proof from the tree of old_size leaves to the one of new_size."""
    if not 0 <= old_size <= new_size:
        raise InvalidEvent(
            "from",
            f"no consistency proof from size {old_size} to size {new_size}: need 0 <= from <= to",
            details={"from": old_size, "to": new_size},
        )
    return consistency_proof(ensure(store, new_size), old_size, new_size)


def stored_nodes(conn: sqlite3.Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    """The stored hashes of the given (level, idx) nodes that exist."""
    rows = conn.execute(
        "SELECT n.level, n.idx, n.hash FROM json_each(?) AS k JOIN merkle_nodes AS n "
        "ON n.level = json_extract(k.value, '$[0]') AND n.idx = json_extract(k.value, '$[1]')",
        (json.dumps([list(k) for k in keys]),),
    )
    return {(r[0], r[1]): bytes(r[2]) for r in rows}


class VerifiedPoint(NamedTuple):
    """Where a full verify last got to: seq, its chain hash, and the tree's peaks there."""

    seq: int
    hash: str
    peaks: list[bytes]
    verified_at: str


def verified_point(conn: sqlite3.Connection) -> VerifiedPoint | None:
    """The remembered verified point, if any."""
    row = conn.execute("SELECT seq, hash, peaks, verified_at FROM verified_point WHERE id = 1").fetchone()
    if row is None:
        return None
    return VerifiedPoint(row[0], row[1], [bytes.fromhex(p) for p in json.loads(row[2])], row[3])


def save_verified_point(conn: sqlite3.Connection, seq: int, hash_: str, peaks: Sequence[bytes]) -> None:
    """Remember that seq 1..seq were verified (and the tree's peaks there)."""
    conn.execute(
        "INSERT INTO verified_point (id, seq, hash, peaks, verified_at) VALUES (1, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
        "peaks = excluded.peaks, verified_at = excluded.verified_at",
        (seq, hash_, json.dumps([p.hex() for p in peaks]), format_recorded(now_us())),
    )


def resume_state(conn: sqlite3.Connection, seq: int) -> int:
    """recorded_us of the event at seq (where a resumed verify picks up)."""
    row = conn.execute("SELECT recorded_us FROM events WHERE seq = ?", (seq,)).fetchone()
    return -1 if row is None else int(row[0])


def stream_version_at(conn: sqlite3.Connection, stream: str, seq: int) -> int:
    """The stream's version as of seq (0 if it had no event yet)."""
    row = conn.execute(
        "SELECT max(stream_version) FROM events WHERE stream = ? AND seq <= ?", (stream, seq)
    ).fetchone()
    return int(row[0] or 0)


def check_works_after(conn: sqlite3.Connection, seq: int) -> Iterator[tuple[Any, ...]]:
    """check_works rows of events after seq in (seq, work_id) order, read lazily (a cursor)."""
    return iter(
        conn.execute(
            "SELECT seq, work_id, source, observed_us, recorded_us, notices FROM check_works "
            "WHERE seq > ? ORDER BY seq, work_id",
            (seq,),
        )
    )

"""RFC 6962 / RFC 9162 Merkle tree math: hashes, inclusion and consistency proofs and their checks (pure).

A tree of size N has the events seq 1..N as leaves 0..N-1; a leaf's data is the event's body bytes
(ledger-v1.md), the very bytes the chain hashes. Complete subtrees are named (level, index): the
subtree of 2**level leaves starting at leaf index * 2**level. Proof generation only ever asks a
NodeSource for complete subtrees, which never change once the log has grown past them, so a store
can keep them and answer any proof in O(log N) lookups without loading the tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Protocol

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()  # MTH({}) of RFC 6962


class ProofError(ValueError):
    """A proof that does not verify; the message says why."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """The largest power of two smaller than n (n >= 2): where RFC 6962 splits a tree of n leaves."""
    if n < 2:
        raise ValueError(f"a tree of {n} leaves has no split point")
    return 1 << ((n - 1).bit_length() - 1)


class NodeSource(Protocol):
    """Answers the hash of a complete subtree (level, index) of the log."""

    def node(self, level: int, index: int) -> bytes: ...


def complete_root(leaves: Sequence[bytes]) -> bytes:
    """Root of a complete subtree given its 2**k leaf hashes."""
    n = len(leaves)
    if n == 0 or n & (n - 1):
        raise ValueError(f"{n} leaves do not make a complete subtree")
    level = list(leaves)
    while len(level) > 1:
        level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def subtree_hash(src: NodeSource, start: int, end: int) -> bytes:
    """MTH(D[start:end]) for a range RFC 6962's recursion produces (start aligned to its left part)."""
    n = end - start
    if n <= 0:
        raise ValueError(f"empty range [{start}, {end})")
    lefts: list[bytes] = []
    # Peel complete left parts off until the rest is complete: O(log n) node lookups.
    while n & (n - 1):
        k = split_point(n)
        lefts.append(_complete(src, start, k))
        start, n = start + k, n - k
    h = _complete(src, start, n)
    for left in reversed(lefts):
        h = node_hash(left, h)
    return h


def _complete(src: NodeSource, start: int, width: int) -> bytes:
    if start % width:
        raise ValueError(f"[{start}, {start + width}) is not an aligned complete subtree")
    return src.node(width.bit_length() - 1, start // width)


def root(src: NodeSource, size: int) -> bytes:
    """The tree head hash MTH(D[0:size])."""
    return EMPTY_ROOT if size == 0 else subtree_hash(src, 0, size)


def inclusion_proof(src: NodeSource, index: int, size: int) -> list[bytes]:
    """PATH(index, D[0:size]) of RFC 6962 2.1.1, leaf-side hash first."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of size {size}")
    path: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        mid = start + split_point(end - start)
        if index < mid:
            path.append(subtree_hash(src, mid, end))
            end = mid
        else:
            path.append(subtree_hash(src, start, mid))
            start = mid
    return path[::-1]


def consistency_proof(src: NodeSource, old_size: int, new_size: int) -> list[bytes]:
    """PROOF(old_size, D[0:new_size]) of RFC 6962 2.1.2 (SUBPROOF with b = true)."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to size {new_size}")
    if old_size in (0, new_size):
        return []
    path: list[bytes] = []
    m, start, end, whole = old_size, 0, new_size, True
    while True:
        n = end - start
        if m == n:
            if not whole:
                path.append(subtree_hash(src, start, end))
            break
        k = split_point(n)
        if m <= k:
            path.append(subtree_hash(src, start + k, end))
            end = start + k
        else:
            path.append(subtree_hash(src, start, start + k))
            start, m, whole = start + k, m - k, False
    return path[::-1]


def _check_hashes(proof: Sequence[bytes]) -> None:
    for i, h in enumerate(proof):
        if len(h) != HASH_SIZE:
            raise ProofError(f"proof hash [{i}] is {len(h)} bytes, not {HASH_SIZE}")


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root an inclusion proof leads to (RFC 9162 2.1.3.2), or ProofError if malformed."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not below the tree size {size}")
    _check_hashes(proof)
    r = leaf
    counted = f"the proof has {len(proof)} hashes"
    for p, left in _climb(index, size - 1, proof, counted, f"a tree of size {size} needs"):
        r = node_hash(p, r) if left else node_hash(r, p)
    return r


def _climb(fn: int, sn: int, path: Sequence[bytes], counted: str, needs: str) -> Iterator[tuple[bytes, bool]]:
    """RFC 9162's climb from node `fn` of a tree whose last node is `sn`: each path hash, and whether it
    is the left sibling; ProofError when the path is longer or shorter than the climb."""
    for c in path:
        if sn == 0:
            raise ProofError(f"{counted}, more than {needs}")
        left = bool(fn & 1) or fn == sn
        yield c, left
        if left:
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(f"{counted}, fewer than {needs}")


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root_hash: bytes) -> None:
    """Raise ProofError unless the proof puts this leaf at `index` of the tree with this root."""
    if root_from_inclusion(index, size, leaf, proof) != root_hash:
        raise ProofError("the inclusion proof does not lead to the root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Raise ProofError unless the proof shows the old tree is a prefix of the new (RFC 9162 2.1.4.2)."""
    if old_size > new_size:
        raise ProofError(f"the new tree (size {new_size}) is smaller than the old one (size {old_size})")
    if old_size == new_size:
        if proof:
            raise ProofError("a proof between two trees of the same size must be empty")
        if old_root != new_root:
            raise ProofError(f"two different roots for the same tree size {old_size}")
        return
    if old_size == 0:
        if proof:
            raise ProofError("a proof from the empty tree must be empty")
        return
    if not proof:
        raise ProofError("the consistency proof is empty")
    _check_hashes(proof)
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)  # the old tree is a complete subtree of the new: its root starts the path
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c, left in _climb(fn, sn, path[1:], f"the consistency proof has {len(proof)} hashes", "it needs"):
        if left:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
        else:
            sr = node_hash(sr, c)
    if fr != old_root:
        raise ProofError(f"the consistency proof does not lead to the old root (size {old_size})")
    if sr != new_root:
        raise ProofError(f"the consistency proof does not lead to the new root (size {new_size})")


class CompactRange:
    """The roots of the complete subtrees covering leaves [0, size): enough to append and to get the root."""

    def __init__(self, size: int = 0, peaks: Sequence[bytes] = ()) -> None:
        if len(peaks) != size.bit_count():
            raise ValueError(f"a range of {size} leaves has {size.bit_count()} peaks, not {len(peaks)}")
        self.size = size
        self.peaks = list(peaks)  # left to right, one per set bit of size, highest first

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf hash; returns every complete subtree (level, index, hash) it completes."""
        h, level, index, s = leaf, 0, self.size, self.size
        created = [(0, index, h)]
        while s & 1:  # the last peak is the left sibling of the new node: merge
            h = node_hash(self.peaks.pop(), h)
            level, index, s = level + 1, index >> 1, s >> 1
            created.append((level, index, h))
        self.peaks.append(h)
        self.size += 1
        return created

    def extend(self, leaves: Sequence[bytes], min_level: int = 0) -> list[tuple[int, int, bytes]]:
        """Add many leaf hashes at once, a level at a time (one comprehension of SHA-256 calls a level,
        not a loop of Python a leaf); returns every complete subtree (level, index, hash) they complete
        at `min_level` or above, as `append` of each would, level by level."""
        size = self.size
        old = dict(
            zip([b for b in range(size.bit_length() - 1, -1, -1) if size >> b & 1], self.peaks, strict=True)
        )
        new: dict[int, bytes] = {}
        created: list[tuple[int, int, bytes]] = []
        row, start, level = list(leaves), size, 0
        sha256 = hashlib.sha256
        while row:
            if level >= min_level:
                created += [(level, start + k, h) for k, h in enumerate(row)]
            if start & 1:  # the peak at this level is the left sibling of the row's first node
                row.insert(0, old.pop(level))
                start -= 1
            if len(row) & 1:  # the row's last node has no right sibling yet: a peak
                new[level] = row.pop()
            pairs = iter(row)
            row = [sha256(b"\x01" + left + right).digest() for left, right in zip(pairs, pairs, strict=True)]
            start >>= 1
            level += 1
        new.update(old)  # the peaks above the levels the leaves reached stay
        self.size = size + len(leaves)
        self.peaks = [new[lv] for lv in sorted(new, reverse=True)]
        return created

    def root(self) -> bytes:
        """MTH of the leaves appended so far."""
        if not self.peaks:
            return EMPTY_ROOT
        h = self.peaks[-1]
        for p in reversed(self.peaks[:-1]):
            h = node_hash(p, h)
        return h


class MemoryTree:
    """A NodeSource over leaf hashes held in memory (tests, small trees)."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.leaves = list(leaves)
        self._memo: dict[tuple[int, int], bytes] = {}

    def node(self, level: int, index: int) -> bytes:
        """The complete subtree (level, index)."""
        if (index + 1) << level > len(self.leaves):
            raise ValueError(f"subtree ({level}, {index}) is not complete in {len(self.leaves)} leaves")
        if level == 0:
            return self.leaves[index]
        key = (level, index)
        if key not in self._memo:
            self._memo[key] = node_hash(self.node(level - 1, 2 * index), self.node(level - 1, 2 * index + 1))
        return self._memo[key]

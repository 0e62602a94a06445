"""The Merkle tree (ledger/merkle.py, ledger/merkle_store.py): RFC 6962 vectors, tampered proofs, and
proofs from the stored tree matching a naive full-tree implementation written here."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.errors import ChainBroken, InvalidEvent, NotFound
from ledger.tlog import merkle_store
from ledger.tlog.chain import envelope_body
from ledger.tlog.merkle import (
    EMPTY_ROOT,
    CompactRange,
    MemoryTree,
    ProofError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    verify_consistency,
    verify_inclusion,
)
from service.ledger import Ledger
from tests.conftest import examples
from tests.factories import paper, ts
from tests.paths import DATA
from tests.raw import edit, one, rows

VECTORS = json.loads((DATA / "rfc6962_vectors.json").read_text())
LEAVES = [bytes.fromhex(x) for x in VECTORS["leaves_hex"]]
ROOTS = [bytes.fromhex(x) for x in VECTORS["roots"]]
STORED_EVENTS = 300


# -- a naive RFC 6962 over the whole list of leaf data, straight from the RFC's definitions --------


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def naive_mth(d: list[bytes]) -> bytes:
    if not d:
        return _sha(b"")
    if len(d) == 1:
        return _sha(b"\x00" + d[0])
    k = _k(len(d))
    return _sha(b"\x01" + naive_mth(d[:k]) + naive_mth(d[k:]))


def naive_path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = _k(len(d))
    if m < k:
        return naive_path(m, d[:k]) + [naive_mth(d[k:])]
    return naive_path(m - k, d[k:]) + [naive_mth(d[:k])]


def naive_subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [naive_mth(d)]
    k = _k(n)
    if m <= k:
        return naive_subproof(m, d[:k], b) + [naive_mth(d[k:])]
    return naive_subproof(m - k, d[k:], False) + [naive_mth(d[:k])]


def naive_proof(m: int, d: list[bytes]) -> list[bytes]:
    return [] if m in (0, len(d)) else naive_subproof(m, d, True)


# -- RFC 6962 test vectors -------------------------------------------------------------------------


def test_rfc6962_roots() -> None:
    assert root(MemoryTree([]), 0) == EMPTY_ROOT == bytes.fromhex(VECTORS["empty_root"])
    tree = MemoryTree([leaf_hash(x) for x in LEAVES])
    for n in range(1, 9):
        assert root(tree, n) == ROOTS[n - 1] == naive_mth(LEAVES[:n])


@pytest.mark.parametrize("v", VECTORS["inclusion"], ids=lambda v: f"leaf{v['leaf']}-of-{v['size']}")
def test_rfc6962_inclusion_vectors(v: dict[str, Any]) -> None:
    index, size = v["leaf"] - 1, v["size"]
    expected = [bytes.fromhex(h) for h in v["proof"]]
    tree = MemoryTree([leaf_hash(x) for x in LEAVES[:size]])
    assert inclusion_proof(tree, index, size) == expected
    verify_inclusion(index, size, leaf_hash(LEAVES[index]), expected, ROOTS[size - 1])


@pytest.mark.parametrize("v", VECTORS["consistency"], ids=lambda v: f"{v['size1']}-to-{v['size2']}")
def test_rfc6962_consistency_vectors(v: dict[str, Any]) -> None:
    m, n = v["size1"], v["size2"]
    expected = [bytes.fromhex(h) for h in v["proof"]]
    tree = MemoryTree([leaf_hash(x) for x in LEAVES[:n]])
    assert consistency_proof(tree, m, n) == expected
    verify_consistency(m, n, ROOTS[m - 1], ROOTS[n - 1], expected)


# -- tamper vectors on proofs: each must be refused, saying why ------------------------------------

_I, _N = 5, 8  # leaf 6 of 8 (an RFC vector)
_LEAF = leaf_hash(LEAVES[_I])
_PROOF = [bytes.fromhex(h) for h in VECTORS["inclusion"][2]["proof"]]


def _flip(proof: list[bytes], i: int) -> list[bytes]:
    out = list(proof)
    out[i] = bytes([out[i][0] ^ 0x08]) + out[i][1:]
    return out


# Not here: leaf 6 "of 7" with the proof of leaf 6 of 8 still leads to the root of 8, because an
# inclusion proof binds the root, not the size (the path has the same shape). The signed checkpoint
# binds the size, which is why check-bundle requires every proof's tree_size to be the checkpoint's.
INCLUSION_TAMPERS: list[Any] = [
    pytest.param(_I, _N, leaf_hash(b"WrongLeaf"), _PROOF, "does not lead to the root", id="wrong-leaf"),
    pytest.param(_I, _N, _LEAF, _flip(_PROOF, 0), "does not lead to the root", id="flipped-bit-in-proof"),
    pytest.param(_I, _N, _LEAF, _flip(_PROOF, 2), "does not lead to the root", id="flipped-bit-in-proof-top"),
    pytest.param(_I, _N, _LEAF, _PROOF[:-1], "fewer than a tree of size 8 needs", id="truncated-proof"),
    pytest.param(_I, _N, _LEAF, [*_PROOF, ROOTS[7]], "more than a tree of size 8", id="extended-proof"),
    pytest.param(_I, 2 * _N, _LEAF, _PROOF, "fewer than a tree of size 16", id="wrong-tree-size"),
    pytest.param(_I - 1, _N, _LEAF, _PROOF, "does not lead to the root", id="wrong-leaf-index"),
    pytest.param(_N, _N, _LEAF, _PROOF, "not below the tree size", id="index-beyond-size"),
    pytest.param(_I, _N, _LEAF, [_PROOF[0][:31], *_PROOF[1:]], "31 bytes", id="short-hash-in-proof"),
]


@pytest.mark.parametrize(("index", "size", "leaf", "proof", "why"), INCLUSION_TAMPERS)
def test_tampered_inclusion_proofs_are_refused(
    index: int, size: int, leaf: bytes, proof: list[bytes], why: str
) -> None:
    with pytest.raises(ProofError, match=why):
        verify_inclusion(index, size, leaf, proof, ROOTS[_N - 1])


_CPROOF = [bytes.fromhex(h) for h in VECTORS["consistency"][2]["proof"]]  # 6 -> 8

CONSISTENCY_TAMPERS: list[Any] = [
    pytest.param(
        6, 8, ROOTS[5], ROOTS[7], _flip(_CPROOF, 1), "does not lead to the", id="flipped-bit-in-proof"
    ),
    pytest.param(6, 8, ROOTS[5], ROOTS[7], _CPROOF[:-1], "fewer than it needs", id="truncated-proof"),
    pytest.param(6, 16, ROOTS[5], ROOTS[7], _CPROOF, "fewer than it needs", id="wrong-tree-size"),
    pytest.param(5, 8, ROOTS[5], ROOTS[7], _CPROOF, "fewer than it needs", id="wrong-old-size"),
    pytest.param(6, 8, ROOTS[4], ROOTS[7], _CPROOF, "old root", id="wrong-old-root"),
    pytest.param(6, 8, ROOTS[5], ROOTS[6], _CPROOF, "new root", id="wrong-new-root"),
    pytest.param(6, 8, ROOTS[5], ROOTS[7], [], "empty", id="empty-proof"),
    pytest.param(8, 6, ROOTS[7], ROOTS[5], _CPROOF, "smaller than the old", id="time-travel"),
    pytest.param(8, 8, ROOTS[7], ROOTS[6], [], "two different roots", id="same-size-other-root"),
]


@pytest.mark.parametrize(("m", "n", "old", "new", "proof", "why"), CONSISTENCY_TAMPERS)
def test_tampered_consistency_proofs_are_refused(
    m: int, n: int, old: bytes, new: bytes, proof: list[bytes], why: str
) -> None:
    with pytest.raises(ProofError, match=why):
        verify_consistency(m, n, old, new, proof)


# -- properties: random sizes, against the naive implementation -------------------------------------


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.binary(max_size=8), min_size=1, max_size=140), st.data())
def test_memory_tree_matches_the_naive_tree(data: list[bytes], draw: st.DataObject) -> None:
    n = len(data)
    tree = MemoryTree([leaf_hash(x) for x in data])
    assert root(tree, n) == naive_mth(data)
    rng = CompactRange()
    for i, x in enumerate(data):
        rng.append(leaf_hash(x))
        assert rng.root() == naive_mth(data[: i + 1])
    for i in range(n):
        proof = inclusion_proof(tree, i, n)
        assert proof == naive_path(i, data)
        verify_inclusion(i, n, leaf_hash(data[i]), proof, naive_mth(data))
    m = draw.draw(st.integers(0, n), label="old size")
    proof = consistency_proof(tree, m, n)
    assert proof == naive_proof(m, data)
    verify_consistency(m, n, naive_mth(data[:m]), naive_mth(data), proof)


@pytest.fixture(scope="module")
def stored(
    db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Ledger, list[bytes]]:
    """A ledger of STORED_EVENTS events and their leaf data (body bytes)."""
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("merkle"), "ledger.db"))
    events = [paper(f"2101.{i:05d}", ts(i)) for i in range(STORED_EVENTS)]
    for start in range(0, STORED_EVENTS, 100):
        ledger.append(events[start : start + 100])
    bodies = [envelope_body(e) for e in ledger.store.read_log()]
    return ledger, bodies


@settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_stored_tree_proofs_match_the_naive_tree(
    stored: tuple[Ledger, list[bytes]], data: st.DataObject
) -> None:
    ledger, bodies = stored
    n = data.draw(st.integers(1, STORED_EVENTS), label="tree size")
    m = data.draw(st.integers(0, n), label="old size")
    seq = data.draw(st.integers(1, n), label="seq")
    prefix = bodies[:n]
    assert merkle_store.tree_root(ledger.store, n) == naive_mth(prefix)
    p = merkle_store.inclusion(ledger.store, seq, n)
    assert (p.leaf_hash, p.path, p.root) == (
        leaf_hash(bodies[seq - 1]),
        naive_path(seq - 1, prefix),
        naive_mth(prefix),
    )
    verify_inclusion(seq - 1, n, p.leaf_hash, p.path, p.root)
    c = merkle_store.consistency(ledger.store, m, n)
    assert c == naive_proof(m, prefix)
    verify_consistency(m, n, naive_mth(bodies[:m]), naive_mth(prefix), c)


def test_the_leaf_is_the_body_the_chain_hashes(stored: tuple[Ledger, list[bytes]]) -> None:
    from ledger.tlog.chain import link_hash

    ledger, bodies = stored
    for e, body in zip(ledger.store.read_log(limit=20), bodies, strict=False):
        assert link_hash(e.prev_hash, body) == e.hash
        assert merkle_store.inclusion(ledger.store, e.seq).leaf_hash == leaf_hash(body)


def test_nodes_are_stored_from_level_4_and_filled_in_chunks(
    new_db: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(merkle_store, "FILL_CHUNK", 32)  # several transactions, peaks reloaded each time
    db = new_db("l.db")
    ledger = Ledger(db)
    ledger.append([paper(f"2101.{i:05d}", ts(i)) for i in range(150)])
    bodies = [envelope_body(e) for e in ledger.store.read_log()]
    assert merkle_store.tree_root(ledger.store, 150) == naive_mth(bodies)
    assert ledger.store.tree.fill_state()[0] == 144  # 150 rounded down to whole blocks of 16
    assert rows(db, "SELECT leaves, chain_hash FROM merkle_fill") == [
        (144, one(db, "SELECT hash FROM events WHERE seq = 144"))
    ]
    levels = dict(rows(db, "SELECT level, count(*) FROM merkle_nodes GROUP BY level"))
    assert levels == {4: 9, 5: 4, 6: 2, 7: 1}
    tree = MemoryTree([leaf_hash(b) for b in bodies])
    for level, idx, h in rows(db, "SELECT level, idx, hash FROM merkle_nodes"):
        assert bytes(h) == tree.node(level, idx)


def test_proof_arguments_are_checked(stored: tuple[Ledger, list[bytes]]) -> None:
    ledger, _ = stored
    with pytest.raises(NotFound, match="beyond the ledger's head"):
        merkle_store.inclusion(ledger.store, 1, STORED_EVENTS + 1)
    with pytest.raises(InvalidEvent, match="not in a tree of size 10"):
        merkle_store.inclusion(ledger.store, 11, 10)
    with pytest.raises(InvalidEvent, match="seqs start at 1"):
        merkle_store.inclusion(ledger.store, 0, 10)
    with pytest.raises(InvalidEvent, match="need 0 <= from <= to"):
        merkle_store.consistency(ledger.store, 11, 10)
    assert merkle_store.tree_root(ledger.store, 0) == EMPTY_ROOT


CUTS: list[Any] = [
    pytest.param("DELETE FROM events WHERE seq > 40", "was cut off or rewritten", id="truncated"),
    pytest.param(
        "UPDATE events SET hash = '00' || substr(hash, 3) WHERE seq = 48",
        "cut off or rewritten",
        id="rewritten",
    ),
]


@pytest.mark.parametrize(("sql", "why"), CUTS)
def test_nodes_over_events_that_changed_are_refused(new_db: Callable[[str], str], sql: str, why: str) -> None:
    db = new_db("l.db")
    ledger = Ledger(db)
    ledger.append([paper(f"2101.{i:05d}", ts(i)) for i in range(50)])
    merkle_store.tree_root(ledger.store, 50)  # fills leaves 1..48
    ledger.store.close()
    edit(db, sql)
    with pytest.raises(ChainBroken, match=why):
        merkle_store.tree_root(Ledger(db).store, 30)


VERIFY_TAMPERS: list[tuple[str, Callable[[str], None], int, str]] = [
    (
        "altered-node",
        lambda db: edit(
            db, "UPDATE merkle_nodes SET hash = ? WHERE level = 5 AND idx = 1", params=(bytes(32),)
        ),
        33,
        r"Merkle node \(5, 1\) over seqs 33..64 does not match",
    ),
    (
        "removed-node",
        lambda db: edit(db, "DELETE FROM merkle_nodes WHERE level = 4 AND idx = 2"),
        33,
        r"Merkle node \(4, 2\) over seqs 33..48 is missing",
    ),  # fmt: skip
    (
        "truncated-below-the-tree",
        lambda db: edit(db, "DELETE FROM events WHERE seq > 60"),
        61,
        "built over 64 events but the ledger holds 60",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("tamper", "seq", "why"), [pytest.param(*t[1:], id=t[0]) for t in VERIFY_TAMPERS])
def test_verify_rechecks_the_stored_nodes(
    new_db: Callable[[str], str], tamper: Callable[[str], None], seq: int, why: str
) -> None:
    db = new_db("l.db")
    ledger = Ledger(db)
    ledger.append([paper(f"2101.{i:05d}", ts(i)) for i in range(70)])
    merkle_store.tree_root(ledger.store, 70)
    report = ledger.verify()
    assert report.ok and report.merkle_nodes_checked == 4 + 2 + 1  # levels 4, 5, 6 over 64 leaves
    ledger.store.close()
    tamper(db)
    report = Ledger(db).verify()
    assert (report.ok, report.first_bad_seq) == (False, seq), report
    assert report.reason is not None
    assert re.search(why, report.reason), report.reason
    assert one(db, "SELECT count(*) FROM events") >= 60


@settings(max_examples=examples(60), deadline=None)
@given(
    parts=st.lists(st.integers(0, 70), max_size=6),
    min_level=st.integers(0, 4),
    seed=st.integers(0, 2**32),
)
def test_extend_completes_what_appends_one_at_a_time_complete(
    parts: list[int], min_level: int, seed: int
) -> None:
    """Many leaves at once, a level at a time: the same peaks, root and completed subtrees (those at
    `min_level` or above) as appending them one by one."""
    rng = random.Random(seed)
    one, many = CompactRange(), CompactRange()
    for n in parts:
        leaves = [rng.randbytes(32) for _ in range(n)]
        expected = [node for leaf in leaves for node in one.append(leaf) if node[0] >= min_level]
        assert sorted(many.extend(leaves, min_level)) == sorted(expected)
        assert (many.size, many.peaks, many.root()) == (one.size, one.peaks, one.root())

"""Inclusion proofs in chunks (service/proofs.py): one signed checkpoint, then proofs equal to
merkle_store.inclusion's for every seq, in any order and chunk, with or without leaves handed in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.model.errors import NotFound
from ledger.tlog import merkle_store
from ledger.tlog.chain import envelope_body
from ledger.tlog.checkpoint import Checkpointer, NotSigned
from ledger.tlog.merkle import leaf_hash
from service.ledger import Ledger
from service.proofs.proofs import Leaves, Signed, prove, prove_seqs, sign_covering
from tests import factories as fx

DbFactory = Callable[[Path, str], str]
SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 97, 130]


@pytest.fixture(scope="module")
def grown(db_factory: DbFactory, tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    """A ledger of 130 papers, appended one at a time (each size a test asks for is a tree it had)."""
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("grown"), "ledger.db"))
    for i in range(1, 131):
        ledger.append([fx.paper(f"2101.{i:05d}", fx.ts(i))])
    return ledger


def _expected(ledger: Ledger, seq: int, size: int) -> list[str]:
    return [merkle_store.b64(h) for h in merkle_store.inclusion(ledger.store, seq, size).path]


def _tree(ledger: Ledger, size: int) -> merkle_store.StoredTree:
    return merkle_store.ensure(ledger.store, size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "order",
    [
        pytest.param(lambda n: list(range(1, n + 1)), id="all"),
        pytest.param(lambda n: list(range(n, 0, -3)), id="backwards-sparse"),
        pytest.param(lambda n: [n, 1, (n + 1) // 2], id="edges"),
    ],
)
@pytest.mark.parametrize("handed", ["none", "leaves", "mapping"])
def test_proofs_equal_merkle_store_inclusion(
    grown: Ledger, size: int, order: Callable[[int], list[int]], handed: str
) -> None:
    signed = Signed("note", "key", size, _tree(grown, size))
    seqs = order(size)
    leaves: Leaves | dict[int, bytes] | None = None
    if handed != "none":
        # every other event's leaf handed in (the rest read), as a bundle hands those it wrote
        read = {
            e.seq: leaf_hash(envelope_body(e)) for e in grown.store.envelopes(list(range(1, size + 1, 2)))
        }
        if handed == "leaves":
            leaves = Leaves()
            for seq in sorted(read):
                leaves.add(seq, read[seq])
        else:
            leaves = read
    got = prove(grown, seqs, signed, leaves)
    assert [p["seq"] for p in got] == seqs
    for p in got:
        assert p == {
            "seq": p["seq"],
            "leaf_index": p["seq"] - 1,
            "tree_size": size,
            "inclusion_path": _expected(grown, p["seq"], size),
        }


def test_prove_seqs_signs_one_checkpoint_covering_them(new_db: Callable[[str], str]) -> None:
    ledger = Ledger(new_db("l.db"))
    ledger.append([fx.paper(f"2101.{i:05d}", fx.ts(i)) for i in range(1, 40)])
    out = prove_seqs(ledger, [3, 39, 17])
    cp = Checkpointer.for_db(ledger.store)
    assert out["checkpoint"] == cp.latest().note and out["key"] == cp.verifier().vkey
    assert [p["inclusion_path"] for p in out["proofs"]] == [_expected(ledger, s, 39) for s in (3, 39, 17)]
    assert prove_seqs(ledger, [])["proofs"] == []


def test_read_only_proofs_are_against_the_last_signed_checkpoint(new_db: Callable[[str], str]) -> None:
    ledger = Ledger(new_db("l.db"))
    ledger.append([fx.paper(f"2101.{i:05d}", fx.ts(i)) for i in range(1, 20)])
    with pytest.raises(NotSigned, match="no checkpoint has been signed"):
        sign_covering(ledger, 5, sign=False)
    Checkpointer.for_db(ledger.store).latest()
    ledger.append([fx.paper("2101.00099", fx.ts(99))])
    signed = sign_covering(ledger, 19, sign=False)
    assert signed.size == 19 and prove(ledger, [19], signed)[0]["inclusion_path"] == _expected(ledger, 19, 19)
    with pytest.raises(NotSigned, match=r"does not cover seq 20, and this server is read-only"):
        sign_covering(ledger, 20, sign=False)


def test_a_seq_outside_the_tree_is_refused(grown: Ledger) -> None:
    signed = Signed("note", "key", 20, _tree(grown, 20))
    with pytest.raises(NotFound, match="seq 21 is not in the tree of size 20"):
        prove(grown, [21], signed)

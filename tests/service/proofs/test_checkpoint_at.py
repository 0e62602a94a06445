"""The signed checkpoint of exactly one head (service/proofs/proofs.py `checkpoint_at`): the one an
answer computed at that head carries. On the backend under test."""

from __future__ import annotations

import pytest

from ledger.model.errors import NotFound
from ledger.tlog.checkpoint import Checkpointer, NotSigned, open_checkpoint
from ledger.tlog.checkpoint_notes import unsigned_checkpoint
from service.ledger import Ledger
from service.proofs.proofs import checkpoint_at
from tests import factories as fx
from tests.conftest import NewDb

A = "2101.00001"


class Screened:
    """A ledger of a few events, and its size: the head an answer was computed at."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.size = ledger.head().seq


@pytest.fixture
def screened(new_db: NewDb) -> Screened:
    ledger = Ledger(new_db("l.db"))
    ledger.append([fx.paper(f"2101.{i:05d}", fx.ts(i)) for i in range(1, 11)])
    return Screened(ledger)


def test_the_last_signed_checkpoint_of_that_size_is_reused(screened: Screened) -> None:
    cp = Checkpointer.for_db(screened.ledger.store)
    kept = cp.latest()
    signed = checkpoint_at(screened.ledger, screened.size)
    assert signed.note == kept.note and signed.size == screened.size
    assert signed.key == cp.verifier().vkey


def test_a_newer_head_is_signed_then_and_kept(screened: Screened) -> None:
    cp = Checkpointer.for_db(screened.ledger.store)
    cp.latest()
    screened.ledger.append([fx.paper(A, fx.ts(30), version=2)])
    signed = checkpoint_at(screened.ledger, screened.size + 1)
    assert unsigned_checkpoint(signed.note).size == screened.size + 1
    assert screened.ledger.store.tree.last_checkpoint() == signed.note


def test_an_older_head_is_signed_as_a_prefix_and_not_kept(screened: Screened) -> None:
    screened.ledger.append([fx.paper(A, fx.ts(30), version=2)])
    cp = Checkpointer.for_db(screened.ledger.store)
    newest = cp.latest()
    signed = checkpoint_at(screened.ledger, screened.size)
    opened = open_checkpoint(signed.note, cp.verifier()).checkpoint
    assert opened.size == screened.size and opened.size < newest.checkpoint.size
    assert screened.ledger.store.tree.last_checkpoint() == newest.note  # never goes back
    assert checkpoint_at(screened.ledger, screened.size).note == signed.note  # Ed25519 is deterministic


def test_a_read_only_server_gives_only_a_kept_checkpoint_of_that_size(screened: Screened) -> None:
    with pytest.raises(NotSigned, match="no checkpoint has been signed"):
        checkpoint_at(screened.ledger, screened.size, sign=False)
    Checkpointer.for_db(screened.ledger.store).latest()
    assert checkpoint_at(screened.ledger, screened.size, sign=False).size == screened.size
    with pytest.raises(NotSigned, match=f"is of size {screened.size}, not 3, and this server is read-only"):
        checkpoint_at(screened.ledger, 3, sign=False)


def test_a_head_past_the_ledgers_is_refused(screened: Screened) -> None:
    with pytest.raises(NotFound, match=f"tree size {screened.size + 5} is beyond the ledger's head"):
        checkpoint_at(screened.ledger, screened.size + 5)

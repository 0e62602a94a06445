"""The monitor (service/monitor.py, `ledger monitor`): a client that keeps the last checkpoint it
verified catches a truncation, a rewrite and a bad signature; on real servers with a real monitor."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ledger.checkpoint import SignedCheckpoint, Signer
from ledger.checkpoint_notes import Checkpoint
from ledger.held_checkpoint import CONSISTENT, REWRITTEN, TRUNCATED
from ledger.merkle import MemoryTree, consistency_proof, leaf_hash, root
from service.monitor import BAD_SIGNATURE, FIRST, STALE, Gone, MonitorState, observe, proof_from_json
from tests.api_fixtures import ledger_command, running_server
from tests.test_held_checkpoint import (
    Victim,
    _grown,
    _other_ledger,
    _rolled_back,
    _rolled_back_and_regrown,
    _victim,
)

NewDb = Callable[[str], str]
SIGNER = Signer.parse(
    # the Go reference key (golang.org/x/mod/sumdb/note), as tests/test_checkpoint.py retypes it
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
)


def _tree(n: int, tag: str = "a") -> MemoryTree:
    return MemoryTree([leaf_hash(f"{tag}{i}".encode()) for i in range(n)])


def _note(tree: MemoryTree, size: int, signer: Signer = SIGNER) -> str:
    return signer.sign_note(Checkpoint(signer.name, size, root(tree, size)).text())


def _prover(tree: MemoryTree, held: int | None = None) -> Callable[[int, int], Sequence[bytes]]:
    """The proofs a ledger holding `tree` (its first `held` leaves, if given) would serve."""
    size = len(tree.leaves) if held is None else held

    def proof(old: int, new: int) -> Sequence[bytes]:
        if new > size:
            raise Gone(f"the ledger holds {size} events, fewer than the {new} asked for")
        return consistency_proof(tree, old, new)

    return proof


def _kept(tree: MemoryTree, size: int) -> SignedCheckpoint:
    note = _note(tree, size)
    return SignedCheckpoint(Checkpoint(SIGNER.name, size, root(tree, size)), note)


def test_the_first_checkpoint_is_kept_then_each_extension_is_proven() -> None:
    tree = _tree(50)
    first = observe(None, _note(tree, 20), SIGNER.verifier, _prover(tree))
    assert (first.status, first.ok) == (FIRST, True) and first.kept is not None
    assert first.kept.checkpoint.size == 20
    grown = observe(first.kept, _note(tree, 50), SIGNER.verifier, _prover(tree))
    assert grown.status == CONSISTENT and "20 -> 50 events" in grown.message
    assert grown.kept is not None and grown.kept.checkpoint.size == 50
    same = observe(grown.kept, _note(tree, 50), SIGNER.verifier, _prover(tree))
    assert same.status == CONSISTENT and same.kept == grown.kept


@pytest.mark.parametrize(
    ("served", "size", "status", "words"),
    [
        pytest.param(
            _tree(30), 30, TRUNCATED, "truncated: a checkpoint of 40 events was kept", id="truncated"
        ),
        pytest.param(_tree(40, "b"), 40, REWRITTEN, "two checkpoints of 40 events", id="fork"),
        pytest.param(_tree(45, "b"), 45, REWRITTEN, "does not extend the kept one", id="rewritten-grown"),
        pytest.param(
            _tree(50), 30, STALE, "stale: the ledger served an older checkpoint", id="stale-but-honest"
        ),
    ],
)
def test_a_smaller_or_other_tree_is_named(served: MemoryTree, size: int, status: str, words: str) -> None:
    kept = _kept(_tree(50), 40)
    seen = observe(kept, _note(served, size), SIGNER.verifier, _prover(served))
    assert seen.status == status and words in seen.message, seen.message
    assert seen.kept == kept  # nothing new is kept after a smaller or other tree
    assert seen.ok is (status == STALE)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda n: n.replace("\n40\n", "\n41\n"), id="size-altered"),
        pytest.param(
            lambda n: Signer.parse(
                "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
            ).sign_note("other\n40\nAAAA\n"),
            id="other-text",
        ),
        pytest.param(lambda n: n.split("\n\n")[0] + "\n", id="signature-cut"),
    ],
)
def test_a_bad_signature_is_caught(damage: Callable[[str], str]) -> None:
    tree = _tree(50)
    seen = observe(_kept(tree, 30), damage(_note(tree, 40)), SIGNER.verifier, _prover(tree))
    assert seen.status == BAD_SIGNATURE and not seen.ok


@pytest.mark.parametrize(
    ("body", "why"),
    [
        pytest.param({"from": 1, "to": 3, "consistency_path": []}, "other sizes", id="other-sizes"),
        pytest.param({"from": 2, "to": 3, "consistency_path": [1]}, "not a list of base64", id="not-strings"),
        pytest.param({"from": 2, "to": 3, "consistency_path": ["%%"]}, "not base64", id="not-base64"),
        pytest.param([], "other sizes", id="not-an-object"),
    ],
)
def test_a_malformed_proof_answer_is_refused(body: object, why: str) -> None:
    from ledger.merkle import ProofError

    with pytest.raises(ProofError, match=why):
        proof_from_json(body, 2, 3)


def test_state_is_kept_atomically_and_checked_again(tmp_path: Path) -> None:
    state = MonitorState(tmp_path / "m")
    assert state.load(SIGNER.verifier) is None
    kept = _kept(_tree(50), 40)
    state.keep(kept)
    assert state.load(SIGNER.verifier) == kept
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["checkpoint"]  # no temporary file left
    evidence = state.evidence(kept, "served\n", "rewritten: ...")
    assert evidence.read_text().startswith("rewritten: ...\n\n-- the checkpoint kept --\n" + kept.note)
    state.path.write_text(kept.note.replace("\n40\n", "\n41\n"))
    from ledger.checkpoint_notes import NoteError

    with pytest.raises(NoteError, match="does not verify"):
        state.load(SIGNER.verifier)


# -- a real monitor on real servers -----------------------------------------------------------------


def _monitor(base: str, vkey: str, state: Path) -> subprocess.CompletedProcess[str]:
    cmd = [*ledger_command(), "monitor", base, "--key", vkey, "--state", str(state), "--once"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("damage", "code", "words"),
    [
        pytest.param(_grown, 0, "consistent: 40 -> 49 events", id="grown"),
        pytest.param(_rolled_back, 2, "truncated: a checkpoint of 40 events was kept", id="truncated"),
        pytest.param(_rolled_back_and_regrown, 2, "rewritten: the tree of 45 events", id="rewritten"),
        pytest.param(_other_ledger, 2, "rewritten: the tree of 50 events", id="another-ledger"),
    ],
)
def test_a_monitor_process_catches_the_server(
    new_db: NewDb, tmp_path: Path, damage: Callable[[Victim, NewDb], str], code: int, words: str
) -> None:
    from ledger.checkpoint import Checkpointer
    from service.ledger import Ledger

    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    state = tmp_path / "monitor"
    with running_server(victim.db) as server:
        first = _monitor(server.base, vkey, state)
        assert first.returncode == 0 and "first checkpoint kept: size 40" in first.stdout, first.stderr
    served = damage(victim, new_db)
    with running_server(served) as server:
        seen = _monitor(server.base, vkey, state)
    assert seen.returncode == code and words in seen.stdout, seen.stdout + seen.stderr
    kept = MonitorState(state).load(Checkpointer.for_db(Ledger(victim.db).store).verifier())
    assert kept is not None
    if code == 0:
        assert kept.checkpoint.size == 49
    else:
        assert kept.checkpoint.size == 40  # what was caught is not kept; the evidence is
        assert "evidence kept in" in seen.stderr and len(list(state.glob("evidence-*.txt"))) == 1


def test_an_unreachable_ledger_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    from tests.api_fixtures import free_port

    seen = _monitor(f"http://127.0.0.1:{free_port()}", SIGNER.verifier.vkey, tmp_path / "m")
    assert seen.returncode == 1 and "could not read the ledger" in seen.stderr

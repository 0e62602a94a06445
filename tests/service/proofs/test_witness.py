"""The witness (service/witness.py, ledger/witness_state.py, api/witness_app.py): C2SP tlog-witness
add-checkpoint through the service object and through HTTP, and the state's compare-and-set."""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from api.witness.app import create_witness_app
from ledger.tlog import merkle
from ledger.tlog.checkpoint import Checkpoint, Signer
from ledger.tlog.cosign import WitnessSigner, cosignatures
from ledger.tlog.witness_state import WitnessState
from service.proofs.witness import MAX_BODY_BYTES, MAX_PROOF_LINES, SIZE_CONTENT_TYPE, Witness, parse_request
from tests.conftest import examples

ORIGIN = "log.example/a"
NOW = 1_700_000_000
LOG = Signer(ORIGIN, Ed25519PrivateKey.from_private_bytes(bytes(32)))
WITNESS = WitnessSigner("witness.example/w1", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
LEAVES = [merkle.leaf_hash(f"event {i}".encode()) for i in range(64)]
FORKED = LEAVES[:5] + [merkle.leaf_hash(f"rewritten {i}".encode()) for i in range(5, 64)]


def tree_root(size: int, leaves: Sequence[bytes] = LEAVES) -> bytes:
    return merkle.root(merkle.MemoryTree(leaves[:size]), size)


def proof(old: int, new: int, leaves: Sequence[bytes] = LEAVES) -> list[bytes]:
    return merkle.consistency_proof(merkle.MemoryTree(leaves[:new]), old, new)


def note(size: int, leaves: Sequence[bytes] = LEAVES, signer: Signer = LOG) -> str:
    return signer.sign_note(Checkpoint(signer.name, size, tree_root(size, leaves)).text())


def body(old: int, hashes: Sequence[bytes], signed: str) -> bytes:
    lines = "".join(base64.b64encode(h).decode() + "\n" for h in hashes)
    return f"old {old}\n{lines}\n{signed}".encode()


def add(old: int, new: int, leaves: Sequence[bytes] = LEAVES) -> bytes:
    """A well-formed request taking the witness from `old` to `new` over `leaves`."""
    return body(old, proof(old, new, leaves) if old else [], note(new, leaves))


@pytest.fixture
def state(tmp_path: Path) -> WitnessState:
    return WitnessState(tmp_path / "witness.db")


@pytest.fixture
def witness(state: WitnessState) -> Witness:
    return Witness(state, WITNESS, {ORIGIN: LOG.verifier})


def cosigned(w: Witness, request: bytes, signed: str) -> int:
    """Post `request`, expect 200, and return the timestamp of the witness's valid cosignature."""
    answer = w.add_checkpoint(request, NOW)
    assert (answer.status, answer.content_type) == (200, "text/plain; charset=utf-8"), answer.body
    return cosignatures(signed + answer.body.decode(), [WITNESS.verifier])[WITNESS.vkey]


def test_the_first_checkpoint_is_cosigned_and_remembered(witness: Witness, state: WitnessState) -> None:
    assert cosigned(witness, add(0, 5), note(5)) == NOW
    latest = state.latest(ORIGIN)
    assert latest is not None and (latest.size, latest.root, latest.updated) == (5, tree_root(5), NOW)
    assert cosignatures(latest.note, [WITNESS.verifier]) == {WITNESS.vkey: NOW}


@pytest.mark.parametrize(("first", "second"), [(5, 13), (1, 2), (8, 64), (3, 3), (0, 7)])
def test_an_extension_with_a_real_consistency_proof_is_cosigned(
    witness: Witness, first: int, second: int
) -> None:
    cosigned(witness, add(0, first), note(first))
    cosigned(witness, add(first, second), note(second))


def test_a_stale_old_size_gets_409_with_the_latest_size(witness: Witness) -> None:
    cosigned(witness, add(0, 8), note(8))
    for stale in (add(0, 13), add(5, 13)):
        answer = witness.add_checkpoint(stale, NOW)
        assert (answer.status, answer.body, answer.content_type) == (409, b"8\n", SIZE_CONTENT_TYPE)


def test_a_bad_proof_gets_422(witness: Witness) -> None:
    cosigned(witness, add(0, 5), note(5))
    bad = proof(5, 13)
    bad[0] = bytes(32)
    answer = witness.add_checkpoint(body(5, bad, note(13)), NOW)
    assert answer.status == 422 and b"does not verify" in answer.body


def test_a_rewritten_history_is_refused_with_422(witness: Witness) -> None:
    cosigned(witness, add(0, 8), note(8))
    # the forked tree shares leaves 0..4 only: its own proof from 8 does not lead to the root cosigned
    answer = witness.add_checkpoint(body(8, proof(8, 13, FORKED), note(13, FORKED)), NOW)
    assert answer.status == 422


def test_the_same_size_with_another_root_is_refused_with_409(witness: Witness) -> None:
    cosigned(witness, add(0, 8), note(8))
    answer = witness.add_checkpoint(body(8, [], note(8, FORKED)), NOW)
    assert (answer.status, answer.body, answer.content_type) == (409, b"8\n", SIZE_CONTENT_TYPE)


def test_an_old_size_above_the_checkpoint_gets_400(witness: Witness) -> None:
    cosigned(witness, add(0, 8), note(8))
    answer = witness.add_checkpoint(body(8, [], note(5)), NOW)
    assert answer.status == 400 and b"above the checkpoint size" in answer.body  # tlog-witness: 400


def test_a_bad_log_signature_gets_403(witness: Witness) -> None:
    forged = note(5).replace(base64.b64encode(tree_root(5)).decode(), base64.b64encode(tree_root(6)).decode())
    impostor = Signer(ORIGIN, Ed25519PrivateKey.generate())
    for signed in (forged, note(5, signer=impostor)):
        assert witness.add_checkpoint(body(0, [], signed), NOW).status == 403


def test_an_unknown_log_gets_404(witness: Witness) -> None:
    other = Signer("log.example/unknown", Ed25519PrivateKey.generate())
    assert witness.add_checkpoint(body(0, [], note(5, signer=other)), NOW).status == 404


def test_a_proof_from_size_zero_must_be_empty(witness: Witness) -> None:
    assert witness.add_checkpoint(body(0, [bytes(32)], note(5)), NOW).status == 422


MALFORMED: list[Any] = [
    pytest.param(b"", "no empty line", id="empty"),
    pytest.param(add(0, 5).replace(b"old 0", b"old 00"), "leading zeroes", id="leading-zero"),
    pytest.param(add(0, 5).replace(b"old 0", b"old -1"), "not a decimal", id="negative"),
    pytest.param(add(0, 5).replace(b"old 0", b"new 0"), "not `old <size>`", id="no-old-line"),
    pytest.param(add(0, 5).replace(b"old 0\n", b"old 0\n!!\n"), "not base64", id="proof-not-base64"),
    pytest.param(add(0, 5).replace(b"old 0\n", b"old 0\nAAAA\n"), "not a 32-byte hash", id="proof-short"),
    pytest.param(body(0, [bytes(32)] * (MAX_PROOF_LINES + 1), note(5)), "more than 63", id="64-proof-lines"),
    pytest.param(add(0, 5).replace(b"\xe2\x80\x94", b"--"), "malformed signature line", id="no-em-dash"),
    pytest.param(add(0, 5)[:-1], "not a signed checkpoint", id="no-final-newline"),
    pytest.param(add(0, 5).replace(b"log.example/a\n5", b"log.example/a\n05"), "decimal", id="size-zero"),
    pytest.param(add(0, 5) + b"\xff", "not UTF-8", id="not-utf8"),
    pytest.param(add(0, 5).replace(b"old 0", b"old " + b"9" * 5000), "above 2^64-1", id="old-huge"),
    pytest.param(add(0, 5).replace(b"old 0", b"old 18446744073709551616"), "above 2^64-1", id="old-2^64"),
    pytest.param(
        add(0, 5).replace(b"/a\n5\n", b"/a\n" + b"9" * 5000 + b"\n"), "above 2^64-1", id="size-huge"
    ),
    pytest.param(add(0, 5).replace(b"/a\n5\n", b"/a\n"), "decimal", id="no-size-line"),
    pytest.param(add(0, 5).replace(b"old 0\n", b"old 0\x07\n"), "decimal", id="control-char"),
]


@pytest.mark.parametrize(("request_body", "reason"), MALFORMED)
def test_a_malformed_body_gets_400(witness: Witness, request_body: bytes, reason: str) -> None:
    answer = witness.add_checkpoint(request_body, NOW)
    assert answer.status == 400 and reason.encode() in answer.body, answer.body


def test_an_oversized_body_gets_413(witness: Witness) -> None:
    assert witness.add_checkpoint(b"x" * (MAX_BODY_BYTES + 1), NOW).status == 413


@settings(max_examples=examples(50), deadline=None)
@given(junk=st.binary(max_size=300))
def test_no_junk_body_is_cosigned_or_crashes(tmp_path_factory: pytest.TempPathFactory, junk: bytes) -> None:
    w = Witness(WitnessState(tmp_path_factory.mktemp("w") / "w.db"), WITNESS, {ORIGIN: LOG.verifier})
    assert w.add_checkpoint(junk, NOW).status in (400, 403, 404, 409, 413, 422)


def test_concurrent_advances_from_the_same_size_only_one_wins(witness: Witness, state: WitnessState) -> None:
    cosigned(witness, add(0, 4), note(4))
    sizes = list(range(5, 17))
    barrier = threading.Barrier(len(sizes))
    answers: dict[int, int] = {}

    def post(size: int) -> None:
        request = add(4, size)
        barrier.wait()
        answers[size] = witness.add_checkpoint(request, NOW).status

    threads = [threading.Thread(target=post, args=(s,)) for s in sizes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [s for s, status in answers.items() if status == 200]
    assert len(winners) == 1 and sorted(answers.values()) == [200] + [409] * (len(sizes) - 1)
    latest = state.latest(ORIGIN)
    assert latest is not None and latest.size == winners[0]


def test_advance_is_a_compare_and_set(state: WitnessState) -> None:
    assert state.latest(ORIGIN) is None
    assert state.advance(ORIGIN, 0, 5, tree_root(5), "n5")
    assert not state.advance(ORIGIN, 0, 6, tree_root(6), "n6")  # no longer at 0
    assert not state.advance(ORIGIN, 5, 6, tree_root(6), "n6", old_root=tree_root(4))  # other root at 5
    assert state.advance(ORIGIN, 5, 6, tree_root(6), "n6", old_root=tree_root(5))
    with pytest.raises(ValueError, match="never moves a log back"):
        state.advance(ORIGIN, 6, 5, tree_root(5), "n5")
    latest = state.latest(ORIGIN)
    assert latest is not None and (latest.size, latest.note) == (6, "n6")


def test_the_state_survives_reopening(tmp_path: Path) -> None:
    WitnessState(tmp_path / "w.db").advance(ORIGIN, 0, 3, tree_root(3), "n3", updated=7)
    latest = WitnessState(tmp_path / "w.db").latest(ORIGIN)
    assert latest is not None and (latest.size, latest.root, latest.updated) == (3, tree_root(3), 7)


def test_parse_request_reads_the_spec_grammar() -> None:
    req = parse_request(add(5, 13))
    assert (req.old, req.proof, req.checkpoint.size) == (5, proof(5, 13), 13)


def test_a_log_key_must_be_named_by_its_origin(state: WitnessState) -> None:
    with pytest.raises(ValueError, match="is named"):
        Witness(state, WITNESS, {"log.example/b": LOG.verifier})


# -- over HTTP --------------------------------------------------------------------------------------


@pytest.fixture
def client(witness: Witness) -> TestClient:
    return TestClient(create_witness_app(witness, clock=lambda: NOW))


def test_http_cosigns_then_answers_409_with_the_size(client: TestClient) -> None:
    r = client.post("/add-checkpoint", content=add(0, 5))
    assert r.status_code == 200 and r.text.startswith("\u2014 witness.example/w1 ")
    assert cosignatures(note(5) + r.text, [WITNESS.verifier]) == {WITNESS.vkey: NOW}
    r = client.post("/add-checkpoint", content=add(0, 6))
    assert (r.status_code, r.text, r.headers["content-type"]) == (409, "5\n", SIZE_CONTENT_TYPE)
    r = client.post("/add-checkpoint", content=add(5, 6))
    assert r.status_code == 200


@pytest.mark.parametrize(
    ("request_body", "status"),
    [
        pytest.param(b"garbage", 400, id="malformed"),
        pytest.param(b"x" * (MAX_BODY_BYTES + 1), 413, id="oversized"),
        pytest.param(
            body(0, [], note(5, signer=Signer("other.example", Ed25519PrivateKey.generate()))),
            404,
            id="unknown",
        ),
    ],
)
def test_http_refuses_bad_bodies_without_a_500(client: TestClient, request_body: bytes, status: int) -> None:
    assert client.post("/add-checkpoint", content=request_body).status_code == status


def test_http_bounds_a_streamed_body_without_content_length(client: TestClient) -> None:
    def chunks() -> Any:
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b"y" * 1024

    assert client.post("/add-checkpoint", content=chunks()).status_code == 413


def test_http_only_posts(client: TestClient) -> None:
    assert client.get("/add-checkpoint").status_code == 405

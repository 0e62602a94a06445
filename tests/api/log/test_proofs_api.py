"""The transparency-log routes (api/proofs.py) on a minimal app: proofs verify against the signed
checkpoint with the served key, and errors have the ledger's JSON shape."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import build_state, install_state
from api.errors import install_error_handlers
from api.log.proofs import router
from api.settings import Settings
from ledger.storage.backend import side_path
from ledger.tlog.chain import envelope_body
from ledger.tlog.checkpoint import open_checkpoint, parse_vkey
from ledger.tlog.merkle import leaf_hash, verify_consistency, verify_inclusion
from service.ledger import Ledger
from tests.factories import paper, ts
from tests.raw import replace_checkpoint, stored_checkpoint


def _grow(ledger: Ledger, start: int, count: int) -> None:
    ledger.append([paper(f"2101.{i:05d}", ts(i)) for i in range(start, start + count)])


@pytest.fixture
def ledger(new_db: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> Ledger:
    monkeypatch.setenv("LEDGER_ORIGIN", "ledger.example/citations")
    ledger = Ledger(new_db("ledger.db"))
    _grow(ledger, 0, 37)
    return ledger


@pytest.fixture
def client(ledger: Ledger) -> TestClient:
    app = FastAPI()
    install_state(app, build_state(Settings(db=ledger.url), ledger))
    install_error_handlers(app)
    app.include_router(router)
    return TestClient(app)


def _b64(text: str) -> bytes:
    return base64.b64decode(text)


def test_key_checkpoint_and_inclusion_proof_verify_together(client: TestClient, ledger: Ledger) -> None:
    key = client.get("/checkpoint/key")
    assert key.status_code == 200 and key.headers["content-type"].startswith("text/plain")
    verifier = parse_vkey(key.text)
    assert verifier.name == "ledger.example/citations"
    note = client.get("/checkpoint")
    assert note.status_code == 200 and note.headers["content-type"].startswith("text/plain")
    cp = open_checkpoint(note.text, verifier).checkpoint
    assert (cp.origin, cp.size) == ("ledger.example/citations", 37)
    assert note.headers["Ledger-Head"].startswith("37 ")
    assert client.get("/checkpoint").text == note.text  # the head did not move: the same note

    for event in ledger.store.read_log():
        r = client.get(f"/evidence/{event.seq}/proof", params={"tree_size": cp.size})
        assert r.status_code == 200, r.text
        body = r.json()
        assert (body["seq"], body["leaf_index"], body["tree_size"]) == (event.seq, event.seq - 1, 37)
        leaf = leaf_hash(envelope_body(event))
        assert _b64(body["leaf_hash"]) == leaf and _b64(body["root_hash"]) == cp.root
        verify_inclusion(event.seq - 1, cp.size, leaf, [_b64(h) for h in body["inclusion_path"]], cp.root)
    default = client.get("/evidence/5/proof").json()
    assert default["tree_size"] == 37


def test_a_moved_head_gets_a_new_checkpoint_consistent_with_the_old(
    client: TestClient, ledger: Ledger
) -> None:
    verifier = parse_vkey(client.get("/checkpoint/key").text)
    old = open_checkpoint(client.get("/checkpoint").text, verifier).checkpoint
    _grow(ledger, 37, 30)
    new = open_checkpoint(client.get("/checkpoint").text, verifier).checkpoint
    assert (old.size, new.size) == (37, 67)
    r = client.get("/checkpoint/consistency", params={"from": old.size, "to": new.size})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["from"], body["to"]) == (37, 67)
    assert _b64(body["old_root_hash"]) == old.root and _b64(body["new_root_hash"]) == new.root
    verify_consistency(old.size, new.size, old.root, new.root, [_b64(h) for h in body["consistency_path"]])
    assert client.get("/checkpoint/consistency", params={"from": 10}).json()["to"] == 67


@pytest.mark.parametrize(
    ("url", "status", "code", "text"),
    [
        ("/evidence/38/proof", 404, "not_found", "there is no event seq 38: the head is seq 37"),
        ("/evidence/38/proof?tree_size=37", 422, "invalid", "not in a tree of size 37"),
        ("/evidence/5/proof?tree_size=4", 422, "invalid", "ask with tree_size >= 5"),
        ("/evidence/5/proof?tree_size=99", 404, "not_found", "beyond the ledger's head (seq 37)"),
        ("/evidence/0/proof", 422, "invalid", "seq"),
        ("/evidence/x/proof", 422, "invalid", "seq"),
        ("/checkpoint/consistency?from=20&to=10", 422, "invalid", "need 0 <= from <= to"),
        ("/checkpoint/consistency?from=20&to=99", 404, "not_found", "beyond the ledger's head"),
        ("/checkpoint/consistency", 422, "invalid", "from"),
    ],
)
def test_errors_have_the_ledger_shape(
    client: TestClient, url: str, status: int, code: str, text: str
) -> None:
    r = client.get(url)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == code and text in error["message"]
    assert "details" in error


def test_an_inconsistent_ledger_is_refused_a_checkpoint(client: TestClient, ledger: Ledger) -> None:
    from ledger.tlog.checkpoint import Checkpoint, Signer

    db = ledger.url
    first = client.get("/checkpoint").text
    assert stored_checkpoint(db) == first
    # A validly signed checkpoint of 40 events: as if the database had been rolled back from 40 to 37.
    signer = Signer.parse(side_path(db, ".key").read_text())
    replace_checkpoint(db, signer.sign_note(Checkpoint(signer.name, 40, bytes(32)).text()))
    r = client.get("/checkpoint")
    assert r.status_code == 503
    error = r.json()["error"]
    assert error["code"] == "chain_broken"
    assert "a checkpoint of 40 events was signed, but the ledger now holds 37" in error["message"]
    # A state that does not verify: refused too, never overwritten.
    signed = stored_checkpoint(db)
    assert signed is not None
    replace_checkpoint(db, signed.replace("\n40\n", "\n41\n"))
    r = client.get("/checkpoint")
    assert (r.status_code, r.json()["error"]["code"]) == (503, "checkpoint_refused")
    assert "\n41\n" in (stored_checkpoint(db) or "")

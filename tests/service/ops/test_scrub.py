"""Scrubbing, integrity answers that say what they checked, and a read-only server (backend under test).

An integrity report resumes from the last verified point, so an event before it edited in place is not
re-hashed by that answer: the answer must say so, and a scrub pass (service/scrub.py: `ledger scrub`, the
server's background thread) must find the edit, record it, and make /healthz and every integrity
answer name the seq. A read-only server signs nothing and creates no file.
"""

from __future__ import annotations

import base64
import json
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from api.app import create_app
from api.ops.scrub import passes_of
from api.settings import Settings
from cli.main import main
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.backend import side_path
from ledger.storage.verify import verify_store, walk_paced
from ledger.tlog.chain import envelope_body, link_hash
from ledger.tlog.checkpoint import open_checkpoint, parse_vkey
from ledger.tlog.merkle import leaf_hash, verify_inclusion
from ledger.tlog.merkle_store import inclusion
from service.ledger import Ledger
from service.ops import scrub
from service.ops.scrub import PassLog, scrub_pass
from tests import raw
from tests.chain_helpers import imported_fixture_db
from tests.conftest import FIXTURE_PATH, NewDb
from tests.factories import paper, ts
from tests.ledger.storage.test_verify import BROKEN
from tests.old_layout import build_old_ledger, version_before
from tests.waiting import wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

PAPER = "2509.02480"
AS_OF = {"as_of": "2026-08-08T08:47:00Z"}
OTHER = "2101.00001"  # seq 1: a paper that is not among the record's events
FIRST = 17  # the record's first event (its paper snapshot): seqs 1..16 are another 16-leaf block
N = 148  # 16 other papers + the fixture's 132 events (seqs 17..148)


def _ledger_db(new_db: NewDb) -> str:
    """Seqs 1..16 are other papers (one Merkle block of their own); seqs 17..148 build the record."""
    db = new_db()
    ledger = Ledger(db)
    ledger.append([paper(f"2101.{i:05d}", ts(i)) for i in range(1, FIRST)])
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    ledger.close()
    return db


@pytest.fixture
def db(new_db: NewDb) -> str:
    return _ledger_db(new_db)


def _client(db: str, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(db=db, **settings)))


def _integrity(client: TestClient, arxiv_id: str = PAPER) -> dict[str, Any]:
    r = client.get(f"/paper/{arxiv_id}/integrity", params=AS_OF)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _edit_other_paper(db: str) -> None:
    """Seq 1's data changed in place, its hash left alone (triggers off, as an attacker would)."""
    raw.edit(db, f"UPDATE events SET data = replace(data, '{OTHER}', '2101.99999') WHERE seq = 1")


def _assert_chain_broken_503(r: Any, seq: int, head_seq: int) -> None:
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] == "chain_broken"
    assert f"broken at seq {seq}" in error["message"]
    assert error["details"]["first_bad_seq"] == seq and error["details"]["head"]["seq"] == head_seq
    assert r.headers["Ledger-Head"].startswith(f"{head_seq} ")


def _verify_cli_ok(db: str) -> None:
    result = CliRunner().invoke(main, ["verify", "--db", db])
    assert result.exit_code == 0, result.output


# -- the integrity report says what it checked ------------------------------------------------------


def test_integrity_after_an_in_place_edit_outside_the_records_events(db: str) -> None:
    client = _client(db)
    first = _integrity(client)
    # nothing recorded vouched for the chain yet: this answer walked all of it, and recorded that
    assert first["ok"] is True and first["chain"]["walked"] == {"from": 1, "to": N}
    assert first["chain"]["last_full_walk"]["by"] == "integrity"

    _edit_other_paper(db)
    served = client.get("/evidence", params={"limit": 1}).json()["events"][0]
    assert served["data"]["arxiv_id"] == "2101.99999"  # what /evidence serves now
    second = _integrity(client)
    chain = second["chain"]
    # the edit is before the verified point: this answer re-hashed nothing and says exactly that
    assert chain["walked"] is None and chain["events_checked"] == 0
    assert chain["trusted"]["from"] == 1 and chain["trusted"]["to"] == N
    assert chain["last_full_walk"] == first["chain"]["last_full_walk"]
    assert "every stored event re-hashed" not in second["method"]
    assert f"seqs 1..{N} were not re-hashed for this answer" in second["method"]

    # a scrub pass walks everything again: from then on every answer names the seq
    found = scrub_pass(Ledger(db).store, passes_of(client.app))  # type: ignore[arg-type]
    assert found is not None and (found.ok, found.first_bad_seq) == (False, 1)
    third = _integrity(client)
    assert third["ok"] is False and third["first_bad_seq"] == 1
    assert third["chain"]["first_bad_seq"] == 1 and third["chain"]["last_full_walk"]["by"] == "scrub"
    assert "stored bytes do not match the stored hash" in third["chain"]["reason"]
    _assert_chain_broken_503(client.get("/healthz"), 1, N)
    # another server process over the same database sees the recorded pass too
    _assert_chain_broken_503(_client(db).get("/healthz"), 1, N)


def _rehash_alone(db: str, seq: int) -> None:
    """Change the event's data AND its stored hash to match (its neighbours left alone)."""
    e = Ledger(db).store.envelopes([seq])[0]
    data = e.data.replace(b"MLP-Offload", b"LLP-Offload")
    assert data != e.data
    h = link_hash(e.prev_hash, envelope_body(msgspec.structs.replace(e, data=data)))
    raw.edit(db, "UPDATE events SET data = ?, hash = ? WHERE seq = ?", params=(data.decode(), h, seq))


def _edit_alone(db: str, seq: int) -> None:
    raw.edit(db, f"UPDATE events SET data = replace(data, 'MLP-Offload', 'LLP-Offload') WHERE seq = {seq}")


@pytest.mark.parametrize(
    ("tamper", "bad", "reason"),
    [
        # a lone rehash: its bytes match its new hash, the next event still names the old one
        (_rehash_alone, FIRST + 1, "prev_hash does not match"),
        (_edit_alone, FIRST, "stored bytes do not match the stored hash"),
    ],
    ids=["rehashed", "not-rehashed"],
)
def test_integrity_after_an_in_place_edit_of_one_of_the_records_events(
    db: str, tamper: Callable[[str, int], None], bad: int, reason: str
) -> None:
    client = _client(db)
    assert _integrity(client)["ok"] is True  # walks and remembers up to the head, signs a checkpoint
    tamper(db, FIRST)  # the record's paper snapshot, now before the verified point
    report = _integrity(client)
    assert report["chain"]["walked"] is None  # the chain walk itself re-hashed nothing, and says so
    # each listed event is re-hashed from the bytes /evidence serves, linked to the stored hash before
    # it, and its inclusion proof checked against the checkpoint signed before the edit
    assert report["ok"] is False and report["first_bad_seq"] == bad
    assert reason in report["problems"][0]["reason"] and report["problems"][0]["seq"] == bad
    edited = report["events"][0]
    assert edited["seq"] == FIRST and edited["proof_ok"] is False
    # the other proofs of its 16-leaf block hash the edited leaf too; the rest use the stored node
    assert all(e["proof_ok"] is True for e in report["events"] if e["seq"] > 2 * 16)
    assert [e["seq"] for e in report["events"] if not (e["hash_ok"] and e["linked"])] == [bad]
    # a scrub names the same seq
    found = scrub_pass(Ledger(db).store, passes_of(client.app))  # type: ignore[arg-type]
    assert found is not None and found.first_bad_seq == bad


def test_an_edit_in_the_block_of_a_records_event_is_named_by_its_proof(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.append([paper(OTHER, ts(1))])  # seq 1, then the record's events from seq 2: one block
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    client = _client(db)
    assert _integrity(client)["ok"] is True
    _edit_other_paper(db)
    # seq 1 is not the record's, but the proofs of seqs 2..16 recompute its leaf: the answer finds it
    report = _integrity(client)
    assert report["chain"]["walked"] is None
    assert report["ok"] is False and report["first_bad_seq"] == 1
    assert report["problems"] == [
        {
            "seq": 1,
            "reason": "stored bytes do not match the stored hash (the event was altered) (found re-hashing "
            "the block of an event whose inclusion proof failed)",
        }
    ]
    assert {e["seq"] for e in report["events"] if e["proof_ok"] is False} == set(range(2, 17))


# -- ledger scrub and ledger verify --resume ----------------------------------------------------------


def test_ledger_scrub_exits_2_naming_the_first_broken_seq(db: str) -> None:
    clean = CliRunner().invoke(main, ["scrub", "--db", db])
    assert clean.exit_code == 0, clean.output
    assert f"OK: scrub walked seqs 1..{N} ({N} events) from " in clean.output
    assert f"head seq {N}; recorded in the database" in clean.output
    _verify_cli_ok(db)
    health = _client(db).get("/healthz").json()
    assert health["last_full_walk"]["by"] == "verify"  # `ledger verify` records its full walk too

    raw.edit(db, "UPDATE events SET observed_us = observed_us + 1 WHERE seq = 40")
    # the resumed verify re-hashes nothing before its point, and says which seqs it trusted on what
    resumed = CliRunner().invoke(main, ["verify", "--db", db, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert f"Trusted, not re-hashed now: seqs 1..{N} (seq {N} still has the hash" in resumed.output
    assert "last full walk from seq 1: verify from " in resumed.output

    broken = CliRunner().invoke(main, ["scrub", "--db", db])
    assert broken.exit_code == 2, broken.output
    assert broken.output.startswith("BROKEN at seq 40: observed_us index column does not match")
    assert "(scrub walked 39 good events before it" in broken.output
    as_json = json.loads(CliRunner().invoke(main, ["scrub", "--db", db, "--json"]).stdout)
    assert (as_json["ok"], as_json["first_bad_seq"], as_json["recorded"]) == (False, 40, True)
    assert as_json["walked"] == {"from": 1, "to": 39}

    again = CliRunner().invoke(main, ["verify", "--db", db, "--resume"])
    assert again.exit_code == 2 and again.output.startswith("BROKEN at seq 40: the last full walk")
    resumed_json = json.loads(CliRunner().invoke(main, ["verify", "--db", db, "--resume", "--json"]).stdout)
    assert (resumed_json["ok"], resumed_json["first_bad_seq"]) == (False, 40)
    assert resumed_json["trusted"]["to"] == N and resumed_json["walked"] is None
    _assert_chain_broken_503(_client(db).get("/healthz"), 40, N)
    assert _integrity(_client(db))["first_bad_seq"] == 40


def test_verify_resume_names_what_it_walked_now(db: str) -> None:
    _verify_cli_ok(db)
    Ledger(db).append([paper(f"2102.{i:05d}", ts(i)) for i in range(10, 13)])
    out = json.loads(CliRunner().invoke(main, ["verify", "--db", db, "--resume", "--json"]).stdout)
    assert out["ok"] is True and out["walked"] == {"from": N + 1, "to": N + 3}
    assert out["trusted"]["to"] == N and out["resumed_from"] == N
    assert out["last_full_walk"]["by"] == "verify" and out["last_full_walk"]["walked"] == {"from": 1, "to": N}
    text = CliRunner().invoke(main, ["verify", "--db", db, "--resume"]).output
    assert text.startswith(f"OK: 0 events verified after seq {N + 3} (no event re-hashed now)")


# -- the pass itself ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_db(db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The imported fixture, its WAL checkpointed on SQLite (as in tests/ledger/storage/test_verify.py),
    to copy."""
    return imported_fixture_db(db_factory, tmp_path_factory.mktemp("scrub"))


@pytest.mark.parametrize("batch", [1, 7, 132], ids=["batch-1", "batch-7", "batch-all"])
@pytest.mark.parametrize(("tamper", "reason"), BROKEN)
def test_a_paced_walk_finds_what_a_full_verify_finds(
    base_db: str, tmp_path: Path, tamper: Callable[[str], int], reason: str, batch: int
) -> None:
    copy = raw.copy_db(base_db, tmp_path, "tampered.db")
    bad = tamper(copy)
    store = Ledger(copy).store
    full = verify_store(store)
    paced = walk_paced(store, batch=batch, between=lambda: True)
    assert paced is not None and (paced.ok, paced.first_bad_seq) == (False, bad)
    assert (paced.reason, paced.events_checked) == (full.reason, full.events_checked)


def test_a_pass_is_recorded_stops_promptly_and_moves_the_resume_point(db: str) -> None:
    ledger = Ledger(db)
    store = ledger.store
    passes = PassLog(store, ledger.clock)
    stop = threading.Event()
    stop.set()
    assert scrub_pass(store, passes, batch=10, stop=stop) is None  # stopped after one batch
    assert passes.last() is None and store.verifying.verified_point() is None
    done = scrub_pass(store, passes, batch=10, pace=0.5)
    assert done is not None and (done.ok, done.events, done.head_seq, done.kind) == (True, N, N, "scrub")
    assert store.scrub.last_pass() == done and not passes.in_memory(done)
    assert store.verifying.verified_point() is not None and store.verifying.verified_point().seq == N  # type: ignore[union-attr]


def test_only_one_process_scrubs_at_a_time(db: str) -> None:
    mine, other = Ledger(db).store, Ledger(db).store  # two connections, as two server processes have
    passes = PassLog(mine, SYSTEM_CLOCK)
    with other.scrub.exclusive("scrub", create=True) as got:
        assert got
        wait = scrub._scrub_if_due(mine, passes, 3600.0, threading.Event(), 1.0, scrub.BATCH)
        assert wait > 0 and passes.last() is None  # the other one holds the lock: no pass here
    scrub._scrub_if_due(mine, passes, 3600.0, threading.Event(), 1.0, scrub.BATCH)
    assert passes.last() is not None and passes.last().ok  # type: ignore[union-attr]
    # due again only after the interval: the next look runs no pass
    done = passes.last()
    assert scrub._scrub_if_due(mine, passes, 3600.0, threading.Event(), 1.0, scrub.BATCH) > 0
    assert passes.last() == done


def test_the_server_scrubs_in_the_background_and_healthz_turns_503(db: str) -> None:
    app = create_app(Settings(db=db, scrub_interval=0.05))
    with TestClient(app) as client:  # runs the lifespan: the scrubber starts
        wait_until(lambda: passes_of(app).last() is not None, "a scrub pass", every=0.02)
        health = client.get("/healthz")
        assert health.status_code == 200
        walk = health.json()["last_full_walk"]
        assert (walk["by"], walk["ok"], walk["walked"]) == ("scrub", True, {"from": 1, "to": N})
        _edit_other_paper(db)
        wait_until(
            lambda: not passes_of(app).last().ok,  # type: ignore[union-attr]
            "a failed scrub pass",
            every=0.02,
        )
        _assert_chain_broken_503(client.get("/healthz"), 1, N)
        assert _integrity(client)["first_bad_seq"] == 1
    # shutdown stopped the thread (it waits between batches and passes on an Event)
    assert not [t for t in threading.enumerate() if t.name == "ledger-scrub" and t.is_alive()]


# -- the schema step ---------------------------------------------------------------------------------


def test_the_scrub_passes_step_upgrades_an_existing_ledger(db: str, new_db: NewDb) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "scrub_passes"), Ledger(db))
    ledger = Ledger(old)  # migrates the older schema
    assert ledger.store.scrub.last_pass() is None and ledger.head().seq == N
    done = scrub_pass(ledger.store, PassLog(ledger.store, ledger.clock))
    assert done is not None and done.ok and ledger.store.scrub.last_pass() == done


# -- a read-only server writes nothing --------------------------------------------------------------


def _written(db: str, state_dir: Path) -> dict[str, Any]:
    """Everything a server could have written: files, the stored checkpoint, nodes, resume point, passes."""
    return {
        "files": sorted(p.name for p in state_dir.iterdir()),
        "checkpoint": raw.stored_checkpoint(db),
        "nodes": raw.one(db, "SELECT count(*) FROM merkle_nodes"),
        "fill": raw.rows(db, "SELECT leaves, chain_hash FROM merkle_fill"),
        "point": raw.rows(db, "SELECT seq, hash, verified_at FROM verified_point"),
        "passes": raw.one(db, "SELECT count(*) FROM scrub_passes"),
    }


def test_get_checkpoint_on_a_read_only_server_creates_no_key_nor_checkpoint(db: str, tmp_path: Path) -> None:
    client = _client(db, read_only=True)
    files = sorted(p.name for p in tmp_path.iterdir())
    r = client.get("/checkpoint")
    assert r.status_code == 409, r.text
    assert r.json()["error"]["code"] == "not_signed" and "signs nothing" in r.json()["error"]["message"]
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert raw.stored_checkpoint(db) is None and not side_path(db, ".key").exists()
    _verify_cli_ok(db)


def test_a_read_only_server_signs_nothing_and_creates_no_file(db: str, tmp_path: Path) -> None:
    client = _client(db, read_only=True)
    before = _written(db, tmp_path)
    assert before["checkpoint"] is None and not side_path(db, ".key").exists()

    for url in ("/checkpoint", "/checkpoint/key"):
        r = client.get(url)
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert set(error) == {"code", "message", "details"} and error["code"] == "not_signed"
        assert "read-only" in error["message"]
    report = _integrity(client)
    assert report["ok"] is True and report["proofs"] == [] and report["checkpoint"] is None
    assert "no checkpoint has been signed" in report["proofs_note"]
    assert all(e["proof_ok"] is None for e in report["events"])
    # proofs computed from nodes not stored yet: computed for the answer, not written
    proof = client.get("/evidence/5/proof", params={"tree_size": N})
    assert proof.status_code == 200
    assert client.get("/checkpoint/consistency", params={"from": 20, "to": N}).status_code == 200
    health = client.get("/healthz").json()
    assert health["read_only"] is True and health["last_full_walk"]["by"] == "integrity"  # in memory
    assert _written(db, tmp_path) == before

    # a writable side signs one; the read-only server serves it, and still signs nothing new
    signed = CliRunner().invoke(main, ["checkpoint", "--db", db])
    assert signed.exit_code == 0, signed.output
    vkey = CliRunner().invoke(main, ["key", "--db", db]).output.strip()
    Ledger(db).append([paper(f"2102.{i:05d}", ts(i)) for i in range(10, 13)])  # seqs N+1..N+3
    before = _written(db, tmp_path)
    r = client.get("/checkpoint")
    assert r.status_code == 200 and r.text == signed.output
    assert r.headers["Ledger-Checkpoint"] == "last-signed"
    assert r.headers["Ledger-Head"].startswith(f"{N + 3} ")  # the note may be behind the head
    assert client.get("/checkpoint/key").text.strip() == vkey
    covered = _integrity(client)
    cp = open_checkpoint(covered["checkpoint"], parse_vkey(vkey)).checkpoint
    assert cp.size == N and covered["key"] == vkey and covered["proofs_note"] is None
    assert covered["ok"] is True and all(e["proof_ok"] is True for e in covered["events"])
    beyond = _integrity(client, "2102.00011")  # its snapshot is seq N+2: past the signed checkpoint
    assert beyond["proofs"] == [] and f"does not cover seq {N + 2}" in beyond["proofs_note"]
    assert _written(db, tmp_path) == before

    # the proof computed without storing is the one a writable server serves
    event = Ledger(db).store.envelopes([5])[0]
    body = proof.json()
    writable = inclusion(Ledger(db).store, 5, N)
    assert [base64.b64decode(h) for h in body["inclusion_path"]] == writable.path
    verify_inclusion(4, N, leaf_hash(envelope_body(event)), writable.path, writable.root)
    _verify_cli_ok(db)


def test_a_read_only_server_keeps_its_passes_in_memory(db: str, tmp_path: Path) -> None:
    app = create_app(Settings(db=db, read_only=True))
    client = TestClient(app)
    before = _written(db, tmp_path)
    passes = passes_of(app)
    assert passes.writable is False
    scrub._scrub_if_due(Ledger(db).store, passes, 3600.0, threading.Event(), 1.0, scrub.BATCH)
    done = passes.last()
    assert done is not None and done.ok and passes.in_memory(done)
    assert client.get("/healthz").json()["last_full_walk"] == done.to_dict()
    assert _written(db, tmp_path) == before  # no pass row, no resume point, no lock file
    _verify_cli_ok(db)

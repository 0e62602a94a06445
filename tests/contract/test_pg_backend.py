"""What only PostgreSQL needs showing: its triggers, a tamper behind them, the API, a restored database.

The statement budget on PostgreSQL is tests/projections/test_record.py's, in the suite's PostgreSQL pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.storage.projector import READ_BY_RECORDS
from service.ledger import Ledger
from tests.factories import measurement_json, paper, ts

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"


@pytest.fixture
def loaded(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """A PostgreSQL ledger holding the real record, its derived rows merged (the guarded level)."""
    monkeypatch.setattr("ledger.storage.sql_store.MOVES", (1, 1, 1))
    ledger = Ledger(pg_url)
    ledger.import_bytes(FIXTURE.read_bytes())
    ledger.ops.project(READ_BY_RECORDS)  # the standing checks' rows, the projector's (the merged level here)
    return ledger


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET data = data WHERE seq = 1",
        "DELETE FROM events WHERE seq = 132",
        "TRUNCATE events CASCADE",
        "UPDATE check_works SET notices = notices",
        "DELETE FROM check_works",
        "TRUNCATE check_works",
        "DELETE FROM event_keys",
        "TRUNCATE event_keys",
        "INSERT INTO events SELECT seq, event_id, stream, stream_version, type, observed_at, observed_us,"
        " recorded_at, recorded_us, data, prev_hash, hash FROM events WHERE seq = 1"
        " ON CONFLICT (seq) DO UPDATE SET data = '{}'",
    ],
)
def test_database_refuses_changes(loaded: Ledger, sql: str) -> None:
    with psycopg.connect(loaded.url) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute(sql)
    assert loaded.verify().ok and loaded.head().seq == 132


def test_verify_names_an_event_edited_behind_the_triggers(loaded: Ledger) -> None:
    """A superuser can switch the triggers off; the chain still names the altered event."""
    with psycopg.connect(loaded.url, autocommit=True) as conn:
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        conn.execute("UPDATE events SET data = replace(data, 'MLP-Offload', 'MLP-Onload') WHERE seq = 1")
        conn.execute("ALTER TABLE events ENABLE ALWAYS TRIGGER events_append_only")
    report = loaded.verify()
    assert not report.ok and report.first_bad_seq == 1
    assert report.reason == "stored bytes do not match the stored hash (the event was altered)"


def test_api_over_postgresql(loaded: Ledger) -> None:
    """The API does not know its backend: writes, records, evidence and errors as on SQLite."""
    client = TestClient(create_app(Settings(db=loaded.url, tokens=("s3cret",))))
    as_of = "2026-08-08T08:47:00Z"
    got = client.get(f"/paper/2509.02480/citation-record.json?as_of={as_of}")
    assert got.status_code == 200 and got.content == FIXTURE.read_bytes()
    assert got.headers["ledger-head"].startswith("132 ")
    body = {"events": [measurement_json()]}
    posted = client.post("/events", json=body, headers={"Authorization": "Bearer s3cret"})
    assert posted.status_code == 201, posted.text
    assert posted.json()["head"]["seq"] == 133
    evidence = client.get("/evidence?after=131")
    assert evidence.status_code == 200 and [e["seq"] for e in evidence.json()["events"]] == [132, 133]
    assert client.get("/paper/2509.02480/citation-record").status_code == 200
    assert client.get("/paper/9999.99999/citation-record.json").status_code == 404
    # integrity, proofs and changes are served from PostgreSQL too
    proof = client.get("/evidence/1/proof")
    assert proof.status_code == 200, proof.text
    assert proof.json()["tree_size"] == 133
    note = client.get("/checkpoint")
    assert note.status_code == 200 and proof.json()["root_hash"] in note.text
    integrity = client.get(f"/paper/2509.02480/integrity?as_of={as_of}")
    assert integrity.status_code == 200 and integrity.json()["chain"]["ok"] is True
    changes = client.get("/paper/2509.02480/changes?from=2026-08-01T00:00:00Z&to=2026-11-02T00:00:00Z")
    assert changes.status_code == 200, changes.text
    held = client.post("/verify", content=FIXTURE.read_bytes())
    assert held.status_code == 200 and held.json()["ok"] is True, held.text


def test_a_database_restored_from_an_older_backup_cannot_make_the_node_forget_its_checkpoint(
    loaded: Ledger, pg_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signed checkpoint row goes back with the database; this node's copy in the state dir does not."""
    from urllib.parse import urlsplit

    from ledger.model.errors import ChainBroken
    from ledger.tlog.checkpoint import Checkpointer
    from tests.raw import copy_db

    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path))
    url = loaded.url
    loaded.close()
    older = copy_db(url, tmp_path, "older")  # the "backup": 132 events, no checkpoint yet
    ledger = Ledger(url)
    ledger.append([paper("2101.00001", ts(0))])
    signed = Checkpointer.for_db(ledger.store).latest()
    assert signed.checkpoint.size == 133
    ledger.close()
    name, old = urlsplit(url).path.lstrip("/"), urlsplit(older).path.lstrip("/")
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:  # restore it under the same name
        admin.execute(f'DROP DATABASE "{name}"')
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{old}"')
    restored = Ledger(url)
    assert restored.head().seq == 132
    report = restored.verify()
    assert not report.ok and report.first_bad_seq == 133 and "cut off" in (report.reason or "")
    with pytest.raises(ChainBroken, match="refusing to sign"):
        Checkpointer.for_db(restored.store).latest()

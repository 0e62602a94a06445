"""What only PostgreSQL needs showing: triggers, tamper detection, statement budget, the API over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.events import Event
from ledger.service import Ledger
from tests.factories import check, citation, oid_of, paper, resolution, ts, work

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"


@pytest.fixture
def loaded(pg_url: str) -> Ledger:
    """A PostgreSQL ledger holding the real record."""
    ledger = Ledger(pg_url)
    ledger.import_bytes(FIXTURE.read_bytes())
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


def test_statement_budget_150_references_30_inbound(pg_url: str) -> None:
    """caps.database_statements = 6 on PostgreSQL too: counted by the store's statement trace."""
    pid = "2101.00001"
    events: list[Event] = [paper(pid, ts(0)), paper("2101.00002", ts(0, 1)), paper("2101.00003", ts(0, 2))]
    events.append(check("crossref", ts(500), None))
    for n in range(150):
        w = work(f"w-{n}", ts(1, n), pith="2101.00002" if n % 2 else None)
        events.append(citation(oid_of(n), pid, ts(1, n), n, w))
        events.append(resolution(oid_of(n), ts(2, n), cited_arxiv="2101.00002" if n % 2 else "2101.00003"))
    for n in range(30):
        citing = f"2201.{n:05d}"
        events.append(paper(citing, ts(3, n)))
        events.append(citation(oid_of(1000 + n), citing, ts(4, n), 0, work(f"x-{n}", ts(4, n))))
        events.append(resolution(oid_of(1000 + n), ts(5, n), cited_arxiv=pid))
    ledger = Ledger(pg_url)
    ledger.append(events)
    ledger.record(pid)
    statements: list[str] = []
    ledger.store.trace = statements  # type: ignore[attr-defined]
    try:
        rec, _, _ = ledger.record(pid)
    finally:
        ledger.store.trace = None  # type: ignore[attr-defined]
    counted = [
        s
        for s in statements
        if not s.startswith(("BEGIN", "COMMIT")) and "ORDER BY seq DESC LIMIT 1" not in s
    ]
    assert rec["reference_resolution"]["total_outbound_references"] == 150
    assert len(rec["inbound"]) == 30
    assert all(o["standing_notice"]["state"] == "measured" for o in rec["outbound"])
    assert 5 <= len(counted) <= rec["caps"]["database_statements"], counted


def test_api_over_postgresql(loaded: Ledger) -> None:
    """The API does not know its backend: writes, records, evidence and errors as on SQLite."""
    client = TestClient(create_app(Settings(db=loaded.url, tokens=("s3cret",))))
    as_of = "2026-08-08T08:47:00Z"
    got = client.get(f"/paper/2509.02480/citation-record.json?as_of={as_of}")
    assert got.status_code == 200 and got.content == FIXTURE.read_bytes()
    assert got.headers["ledger-head"].startswith("132 ")
    body = {
        "events": [
            {
                "type": "measurement.observed",
                "observed_at": "2026-11-01T00:00:00Z",
                "data": {
                    "arxiv_id": "2509.02480",
                    "source": "openalex",
                    "metric": "cited_by_count",
                    "value": 4,
                    "source_release": None,
                    "query_url": None,
                },
            }
        ]
    }
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

    from ledger.checkpoint import Checkpointer
    from ledger.errors import ChainBroken
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

"""No anonymous request pays for a bulk load: the first integrity report after `ledger import` of an
NDJSON file walks nothing, the import having walked what it stored as it committed."""

from __future__ import annotations

from pathlib import Path

import msgspec
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.model.codec import event_to_dict
from ledger.model.importer import parse_input
from service.intake.load import import_file
from service.ledger import Ledger
from tests.conftest import NewDb

PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"


def test_the_first_integrity_report_after_an_import_walks_nothing(
    new_db: NewDb, tmp_path: Path, fixture_bytes: bytes
) -> None:
    events = parse_input(fixture_bytes).events
    path = tmp_path / "record.ndjson"
    path.write_bytes(b"".join(msgspec.json.encode(event_to_dict(e)) + b"\n" for e in events))
    db = new_db()
    ledger = Ledger(db)
    got = import_file(ledger, path, batch_size=50)
    ledger.close()
    assert (got.appended, got.batches) == (132, 3)
    client = TestClient(create_app(Settings(db=db)))
    report = client.get(f"/paper/{PAPER}/integrity", params={"as_of": AS_OF}).json()
    assert report["ok"] is True
    chain = report["chain"]
    assert chain["events_checked"] == 0 and chain["walked"] is None  # nothing walked in the request
    assert chain["trusted"]["to"] == 132  # vouched for by the import's walks, which it names
    assert chain["last_full_walk"]["by"] == "verify" and chain["last_full_walk"]["ok"] is True

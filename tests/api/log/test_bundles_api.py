"""GET /paper/{id}/bundle (api/bundles.py): the bytes `ledger bundle` writes, streamed; refusals before
the first byte in the error shape; a cap on the bundles one process writes at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import build_state, install_state
from api.errors import install_error_handlers
from api.log import bundles
from api.settings import Settings
from ledger.model.events import Event
from ledger.model.instants import parse_as_of
from ledger.tlog.checkpoint import Checkpointer
from projections import record as projection
from service.ledger import Ledger
from service.proofs.bundle import encode_bundle
from service.proofs.checker import check_bundle
from tests import factories as fx
from tests.bundle_oracle import record_evidence

CITED = "2101.00001"


@pytest.fixture
def ledger(new_db: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path))  # a PostgreSQL ledger's key goes there
    monkeypatch.setitem(projection.CAPS, "inbound", 2)  # the bundle must carry the hidden ones too
    ledger = Ledger(new_db("ledger.db"))
    events: list[Event] = [fx.paper(CITED, fx.ts(0))]
    for i in range(5):
        citing = f"2101.{i + 10:05d}"
        events += [
            fx.paper(citing, fx.ts(1 + i)),
            fx.citation(fx.oid_of(i), citing, fx.ts(1 + i)),
            fx.resolution(fx.oid_of(i), fx.ts(1 + i), "verified_exact", cited_arxiv=CITED),
        ]
    ledger.append(events)
    return ledger


def _client(ledger: Ledger, read_only: bool = False) -> TestClient:
    app = FastAPI()
    install_state(app, build_state(Settings(db=ledger.url, read_only=read_only), ledger))
    install_error_handlers(app)
    app.include_router(bundles.router)
    return TestClient(app)


@pytest.fixture
def client(ledger: Ledger) -> Iterator[TestClient]:
    yield _client(ledger)
    assert bundles.SLOTS.busy == 0  # every answer gave its slot back


def test_the_route_streams_the_bytes_ledger_bundle_writes(client: TestClient, ledger: Ledger) -> None:
    answer = client.get(f"/paper/{CITED}/bundle", params={"as_of": fx.ts(40)})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["content-disposition"] == f"attachment; filename={CITED}.bundle.json"
    assert answer.headers["Ledger-Head"].startswith("16 ")
    assert answer.content == encode_bundle(record_evidence(ledger, CITED, parse_as_of(fx.ts(40))))
    report = check_bundle(answer.content, Checkpointer.for_db(ledger.store).verifier())
    assert report.ok, report.problems
    body = answer.json()
    assert len(body["record"]["inbound"]) == 2
    # the two it shows with their citing papers, and every inbound observation it only counts
    types = [e["type"] for e in body["events"]]
    assert types.count("citation.observed") == types.count("resolution.observed") == 5
    assert types.count("paper.observed") == 3


@pytest.mark.parametrize(
    ("path", "params", "status", "code", "match"),
    [
        pytest.param(f"/paper/{CITED}/bundle", {"as_of": "2001-01-01"}, 404, "not_found", "no paper snapshot",
                     id="before-the-paper"),
        pytest.param("/paper/2912.99999/bundle", {}, 404, "not_found", "never been observed",
                     id="unknown-paper"),
        pytest.param(f"/paper/{CITED}/bundle", {"as_of": "yesterday"}, 422, "invalid", "as_of",
                     id="bad-as-of"),
        pytest.param("/paper/not-an-id/bundle", {}, 422, "invalid", "arxiv", id="bad-id"),
    ],
)  # fmt: skip
def test_refusals_come_before_the_first_byte(
    client: TestClient, path: str, params: dict[str, str], status: int, code: str, match: str
) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["code"] == code and match in error["message"].lower()


def test_a_process_writes_a_bounded_number_of_bundles_at_once(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundles.SLOTS, "busy", bundles.SLOTS.cap)
    answer = client.get(f"/paper/{CITED}/bundle")
    assert answer.status_code == 503 and answer.headers["Retry-After"] == bundles.RETRY_AFTER
    assert answer.json()["error"]["code"] == "too_many_bundles"
    assert bundles.SLOTS.busy == bundles.SLOTS.cap  # a refusal takes no slot
    monkeypatch.setattr(bundles.SLOTS, "busy", 0)


def test_a_slot_is_given_back_when_the_client_goes_away(client: TestClient) -> None:
    with client.stream("GET", f"/paper/{CITED}/bundle") as answer:
        assert answer.status_code == 200
        next(answer.iter_raw(16))
    # the stream was left half read: closing it closes the generator, which gives the slot back
    assert bundles.SLOTS.busy == 0


def test_a_read_only_server_signs_nothing(ledger: Ledger) -> None:
    client = _client(ledger, read_only=True)
    answer = client.get(f"/paper/{CITED}/bundle")
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "not_signed"
    Checkpointer.for_db(ledger.store).latest()  # a writer signs the head
    answer = client.get(f"/paper/{CITED}/bundle")
    assert answer.status_code == 200
    assert check_bundle(answer.content, Checkpointer.for_db(ledger.store).verifier()).ok

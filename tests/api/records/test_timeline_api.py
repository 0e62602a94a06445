"""The timeline on the paper page and the record page, and `ledger timeline`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from api.app import create_app
from api.settings import Settings
from cli.main import main
from service.ledger import Ledger
from tests.api.test_api import AUTH, PAPER, TOKEN, TestClient, ledger_of
from tests.conftest import NewDb
from tests.factories import measurement_json

FIRST = "2026-08-07T16:39:03.985890Z"
LAST = "2026-08-08T06:32:00.761636Z"


@pytest.fixture
def loaded(new_db: NewDb, fixture_bytes: bytes) -> TestClient:
    client = TestClient(create_app(Settings(db=new_db(), tokens=(TOKEN,))))
    ledger_of(client).import_bytes(fixture_bytes)
    return client


def test_the_record_page_opens_with_the_timeline(loaded: TestClient) -> None:
    r = loaded.get(f"/paper/{PAPER}/citation-record", params={"as_of": FIRST})
    assert r.status_code == 200
    head = ledger_of(loaded).head()
    assert r.headers["Ledger-Head"] == f"{head.seq} {head.hash}"
    text = r.text
    assert text.index('<section id="timeline"') < text.index('<section id="coverage"')
    assert f'At <span class="mono">{FIRST}</span> (change 1 of 3)' in text
    assert 'value="0"' in text and 'rel="next"' in text and "no earlier change" in text
    assert f'href="?as_of={LAST}"' in text  # a mark: the record as of the crossref check


def test_the_paper_page_follows_as_of(loaded: TestClient) -> None:
    r = loaded.get(f"/paper/{PAPER}", params={"as_of": "2026-08-08"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "The record as of 2026-08-08T23:59:59.999999Z" in r.text
    assert "As of 8 August 2026, this Paper Citation Record lists 56 of 56" in r.text
    assert f'The last change at or before this instant, at <span class="mono">{LAST}</span>' in r.text
    # its marks open the record page; before the first snapshot there is no record yet
    assert f'href="{PAPER}/citation-record?as_of={LAST}"' in r.text
    early = loaded.get(f"/paper/{PAPER}", params={"as_of": "2026-08-01"})
    assert early.status_code == 200 and "No record yet at this instant" in early.text
    # the JSON answer is the snapshots, as before
    j = loaded.get(f"/paper/{PAPER}", headers={"accept": "application/json"})
    assert set(j.json()) == {"arxiv_id", "links", "snapshots"}


@pytest.mark.parametrize("path", [f"/paper/{PAPER}", f"/paper/{PAPER}/citation-record"])
def test_a_bad_as_of_is_a_page_naming_it(loaded: TestClient, path: str) -> None:
    r = loaded.get(path, params={"as_of": "soon"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")
    assert "as_of" in r.text


def test_an_unknown_paper(loaded: TestClient) -> None:
    for path in ("/paper/2101.00001", "/paper/2101.00001/citation-record"):
        r = loaded.get(path)
        assert r.status_code == 404 and "has never been observed" in r.text


def test_kept_per_head_and_an_append_shows_at_once(
    loaded: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import service.records

    built: list[str] = []
    real = service.records.build_timeline

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(service.records, "build_timeline", counting)
    before = loaded.get(f"/paper/{PAPER}/citation-record").text
    loaded.get(f"/paper/{PAPER}", params={"as_of": FIRST})  # the same head: the same timeline
    assert built == [PAPER]
    body = {"events": [measurement_json(PAPER, "2026-11-01T00:00:00Z", value=7)]}
    assert loaded.post("/events", json=body, headers=AUTH).status_code == 201
    after = loaded.get(f"/paper/{PAPER}/citation-record").text
    assert built == [PAPER, PAPER]
    assert "3 instants where the record changed" in before
    assert "4 instants where the record changed" in after and "openalex cited_by_count 7" in after


def test_the_cli_prints_one_line_per_instant(new_db: NewDb, fixture_bytes: bytes) -> None:
    db = new_db()
    Ledger(db).import_bytes(fixture_bytes)
    result = CliRunner().invoke(main, ["timeline", PAPER, "--db", db])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{FIRST}  the record begins: 56 outbound references, 0 inbound; first snapshot v1"
        "  (116 events, seq 1–129)",
        "2026-08-08T06:31:55.242210Z  retraction_watch checked  (event 131)",
        f"{LAST}  crossref checked  (event 132)",
    ]
    as_json: dict[str, Any] = json.loads(
        CliRunner().invoke(main, ["timeline", PAPER, "--json", "--db", db]).output
    )
    assert [i["at"] for i in as_json["instants"]] == [FIRST, "2026-08-08T06:31:55.242210Z", LAST]
    assert as_json["instants"][2]["seqs"] == [132] and as_json["inbound_by_day"] is False
    missing = CliRunner().invoke(main, ["timeline", "2101.00001", "--db", db])
    assert missing.exit_code == 1
    assert "error: arXiv:2101.00001 has never been observed in this ledger" in missing.output


def test_the_start_up_heap_is_settled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import api.app

    calls: list[str] = []
    monkeypatch.setattr(api.app, "_SETTLED", False)
    monkeypatch.setattr(api.app.gc, "collect", lambda: calls.append("collect"))
    monkeypatch.setattr(api.app.gc, "freeze", lambda: calls.append("freeze"))
    api.app.settle_heap()
    api.app.settle_heap()
    assert calls == ["collect", "freeze"]

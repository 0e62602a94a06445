"""The resolution's evidence, its event and its inclusion proof, over real sockets against `ledger serve`
(on the backend under test), with the real resolver over a slice of its development set: a browser gets
pages a librarian can read (the reference as given, each field marked, the score on its scale, the method
in words, the runner-up and why it lost, a person's name and date); a JSON client gets the same bytes as
before; every answer varies on Accept."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.model.codec import Encodable, canonical, envelope_json
from ledger.model.instants import parse_as_of
from ledger.tlog import merkle_store
from service.ledger import Ledger
from service.resolver.shown import resolution_view
from tests.api_fixtures import Server, running_server
from tests.conftest import NewDb
from tests.e2e.test_browser import browser  # noqa: F401 (the fixture)
from tests.e2e.test_browser_timeline import PARTS, _screenshot, _words

pytestmark = pytest.mark.process

TOKEN = "evidence-pages-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHOT_HEIGHT = 2280  # px: the whole page, from the reference to the way to correct it
SLICE = Path(__file__).parent.parent / "data" / "resolver-dev-slice"
PAPER = "2601.00001"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
JSON_CLIENT = {"Accept": "application/json"}
EXACT = "54fe237b-9e7a-59a7-8127-7021cdb0f188"  # q000469, apa: title, author, year and numbers
STRUCTURED = "6dbe97fd-4c0c-5e4c-82c2-606a5feb1047"  # q031197: journal, volume, issue, page, no title
WRONG_YEAR = "907a1ba3-b5b6-50e5-b0f1-65391f6fa2eb"  # q000469 with 1980 for 1976
YEAR_ONLY = "915a5957-d1d7-51b7-b708-766f8869217e"
PERSON = "c16ef93e-1843-590a-be28-e7cdc45dc26e"  # q000334: its work is not in the catalogue


class World:
    """A served ledger holding the slice's paper, its references and catalogue, resolved."""

    def __init__(self, server: Server, db: str) -> None:
        self.server, self.db = server, db
        # an instant after every write: the JSON answers are then the same whenever they are asked
        self.as_of = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def get(self, path: str, headers: dict[str, str]) -> httpx.Response:
        r = httpx.get(self.server.base + path, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["vary"] == "Accept"
        return r

    def page(self, oid: str) -> str:
        r = self.get(f"/paper/{PAPER}/observations/{oid}/resolution?as_of={self.as_of}", BROWSER)
        assert r.headers["content-type"].startswith("text/html")
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", r.text)).split())  # what a reader sees

    def view(self, oid: str) -> dict[str, Any]:
        r = self.get(f"/paper/{PAPER}/observations/{oid}/resolution?as_of={self.as_of}", JSON_CLIENT)
        body: dict[str, Any] = r.json()
        return body


@pytest.fixture
def world(new_db: NewDb) -> Iterator[World]:
    db = new_db()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"], timeout=60) as server:
        events = [json.loads(line) for line in (SLICE / "refs.ndjson").read_text().splitlines()]
        r = httpx.post(f"{server.base}/events", json={"events": events}, headers=AUTH, timeout=60)
        assert r.status_code == 201, r.text
        url = f"{server.base}/ingest/works?observed_at=2026-09-01T00:00:00Z"
        r = httpx.post(url, content=(SLICE / "works.ndjson").read_bytes(), headers=AUTH, timeout=60)
        assert r.status_code == 201, r.text
        r = httpx.post(f"{server.base}/resolve", json={"papers": [PAPER]}, headers=AUTH, timeout=60)
        assert r.status_code == 200, r.text
        body = {"observation_id": PERSON, "by": "Ada Lovelace", "none": True}
        r = httpx.post(f"{server.base}/resolve/person", json=body, headers=AUTH, timeout=60)
        assert r.status_code == 201, r.text
        yield World(server, db)


def test_the_page_shows_the_reference_as_given_and_each_field_marked(world: World) -> None:
    page = world.page(EXACT)
    assert "Adams, D. J. (1976). Calculating the low temperature vapour line by Monte Carlo." in page
    for row in ("title found in the text Calculating the low temperature vapour line by Monte Carlo ✓ agreed",
                "first author found in the text Adams ✓ agreed", "year found in the text 1976 ✓ agreed",
                "first page found in the text 647 ✓ agreed",
                "journal or venue found in the text Molecular Physics ✓ agreed",
                "DOI — 10.1080/00268977600102101 · absent not found in the reference"):  # fmt: skip
        assert row in page
    wrong = world.page(WRONG_YEAR)
    assert "Adams, D. J. (1980)." in wrong
    assert "year another in the text 1976 ✗ disagreed" in wrong
    structured = world.page(STRUCTURED)
    for row in ("journal-title Molecular Physics", "first-page 647", "volume 32 32 ✓ agreed",
                "title — Calculating the low temperature vapour line by Monte Carlo · absent"):  # fmt: skip
        assert row in structured


def test_the_page_says_the_score_on_its_scale_the_method_and_the_runner_up(world: World) -> None:
    view = world.view(EXACT)
    points = view["evidence"]["score"]
    page = world.page(EXACT)
    scale = f"Score {points} of 117 points; a match found by searching needs 52, 25 of them from the title"
    assert scale in page
    assert "Method title, first author and year agree (the title word for word)" in page
    ru = view["evidence"]["runner_up"]
    assert ru["doi"] == "10.1080/00268977900100171"
    gap = points - ru["score"]
    assert (f"Runner-up “Calculating the high-temperature vapour line by Monte Carlo” (1979), DOI "
            f"10.1080/00268977900100171, {ru['score']} points: it scored {gap} points below the "
            "chosen work") in page  # fmt: skip
    assert "Method identifier" not in page and "Score 1" not in page.replace(f"Score {points}", "")
    assert "this ledger's resolver (method sbmv+guards, version 3)" in page
    unresolved = world.page(YEAR_ONLY)
    assert "the catalogue was searched with the reference's words; no candidate was accepted" in unresolved


def test_a_persons_decision_names_the_person_and_the_date(world: World) -> None:
    view = world.view(PERSON)
    day = view["resolution"]["observed_at"][:10]
    page = world.page(PERSON)
    assert f"Resolved by a person, Ada Lovelace, on {day}" in page
    assert "by by" not in page
    assert "A person's decision: the event records who decided and when" in page
    assert "Taqdilution buffer. (2006). Cold Spring Harbor Protocols" in page


def test_json_clients_get_the_same_bytes_as_before(world: World) -> None:
    ledger = Ledger(world.db)
    try:
        for oid in (EXACT, PERSON):
            r = world.get(f"/paper/{PAPER}/observations/{oid}/resolution?as_of={world.as_of}", JSON_CLIENT)
            assert r.content == canonical(resolution_view(ledger, PAPER, oid, parse_as_of(world.as_of)))
            assert r.headers["content-type"] == "application/json"
        seq = world.view(EXACT)["resolution"]["seq"]
        head = ledger.head()
        for headers in (JSON_CLIENT, {}, {"Accept": "*/*"}):
            r = world.get(f"/evidence?after={seq - 1}&limit=1", headers)
            [e] = ledger.store.read_log(seq - 1, 1)
            nxt = None if seq == head.seq else f"/evidence?after={seq}&limit=1"
            body: dict[str, Encodable]
            body = {"events": [envelope_json(e)], "head": {"seq": head.seq, "hash": head.hash},
                    "next_after": None if nxt is None else seq, "next": nxt}  # fmt: skip
            assert r.content == canonical(body)
            r = world.get(f"/evidence/{seq}/proof", headers)
            proof = merkle_store.inclusion(ledger.store, seq, head.seq)
            assert r.content == canonical(proof.to_json())
    finally:
        ledger.close()


def test_the_event_and_its_proof_are_pages_for_a_browser(world: World) -> None:
    view = world.view(EXACT)
    links = view["resolution"]["links"]
    event = world.get(links["event"], BROWSER)
    assert event.headers["content-type"].startswith("text/html")
    seq = view["resolution"]["seq"]
    assert f"Event seq {seq}" in event.text and "resolution.observed" in event.text
    assert f'href="/evidence/{seq}/proof"' in event.text
    assert "&#34;catalogue_seq&#34;" in event.text  # its data, indented for a reader
    proof = world.get(links["proof"], BROWSER)
    assert proof.headers["content-type"].startswith("text/html")
    root = world.get(links["proof"], JSON_CLIENT).json()["root_hash"]
    assert f"Event seq {seq} is in the ledger's Merkle tree" in proof.text and root in proof.text


def test_the_evidence_page_in_a_real_browser(world: World, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """The page docs/resolver.md shows (docs/images/resolution-evidence.png, remade with
    LEDGER_UPDATE_SCREENSHOTS=1), and its proof link opening a page."""
    page = browser.new_page(viewport={"width": 1000, "height": SHOT_HEIGHT})
    try:
        url = f"{world.server.base}/paper/{PAPER}/observations/{EXACT}/resolution"
        response = page.goto(url)
        assert response is not None and response.status == 200
        assert response.headers["content-type"].startswith("text/html")
        assert page.locator("section#reference blockquote").inner_text().startswith("Adams, D. J. (1976).")
        rows = page.locator("table.fields tr")
        assert rows.count() == 10 and rows.nth(1).is_visible()  # a header and nine fields
        outline = "\n".join(_words(part) for part in page.evaluate(PARTS))
        _screenshot("resolution-evidence", page.screenshot(), outline, tmp_path)
        # the event and its proof open as pages, not raw JSON
        with page.expect_navigation():
            page.get_by_role("link", name="inclusion proof").first.click()
        assert "is in the ledger's Merkle tree" in page.locator("h1").inner_text()
    finally:
        page.close()


def test_a_proof_past_the_head_is_a_page_for_a_browser_and_the_same_json_for_a_client(world: World) -> None:
    past = f"{world.server.base}/evidence/999999/proof"
    page = httpx.get(past, headers=BROWSER, timeout=30)
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert page.headers["vary"] == "Accept" and 'href="/evidence"' in page.text
    answers = [httpx.get(past, headers=headers, timeout=30) for headers in (JSON_CLIENT, {})]
    for r in answers:
        assert r.status_code == 404 and r.headers["vary"] == "Accept"
        assert r.headers["content-type"] == "application/json"
        assert r.json()["error"]["code"] == "not_found" and "999999" in r.json()["error"]["message"]
    assert answers[0].content == answers[1].content

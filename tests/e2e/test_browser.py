"""The record page in a real headless Chromium, served by a real `ledger serve` process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.sources import SourceFile, ingest
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.e2e.test_chain_banner import ALTERED, EDITED, RECORD, _tamper, _verified_ledger
from tests.paths import ROOT
from tests.service.alerts.test_alerts import RW
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger
from tests.waiting import wait_until

ARTIFACTS = ROOT / "artifacts"
SAMPLE = ROOT / "ledger" / "samples" / "2509.02480.record.json"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SECTIONS = ["coverage", "resolution", "measurements", "outbound", "inbound"]


def _chromium() -> str:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser() -> Any:
    """Debian's Chromium driven by Playwright; skipped when one of them is absent or when asked to."""
    if os.environ.get("LEDGER_TEST_SKIP_BROWSER"):
        pytest.skip("LEDGER_TEST_SKIP_BROWSER is set: the browser tests do not run")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    executable = _chromium()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def test_record_page_in_a_browser(browser: Any, new_db: NewDb):
    sample = json.loads(SAMPLE.read_bytes())
    ARTIFACTS.mkdir(exist_ok=True)
    with running_server(new_db()) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            response = page.goto(server.page_url)
            assert response is not None and response.status == 200

            h1 = page.locator("h1")
            assert h1.is_visible() and h1.inner_text() == sample["paper"]["title"]
            thesis = page.get_by_text(sample["thesis"], exact=True)
            assert thesis.is_visible()
            for section in SECTIONS:
                assert page.locator(f"section#{section} h2").is_visible(), section
            assert page.locator("article.obs").count() == len(sample["outbound"])
            page.screenshot(path=str(ARTIFACTS / "record-page.png"))

            # the as_of form brings the same route back at another instant
            page.fill("#as_of", "2026-08-09")
            with page.expect_navigation():
                page.click("form button[type=submit]")
            assert page.url.endswith("/paper/2509.02480/citation-record?as_of=2026-08-09")
            assert page.get_by_text("As of 9 August 2026, this Paper Citation Record").is_visible()
            assert page.input_value("#as_of") == "2026-08-09T23:59:59.999999Z"

            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(server.page_url)
            overflow = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert overflow[0] <= overflow[1], f"horizontal overflow on a phone: {overflow}"
            assert page.locator("h1").is_visible()
            page.screenshot(path=str(ARTIFACTS / "record-page-phone.png"))
        finally:
            page.close()


def test_the_record_page_shows_a_notice_on_a_cited_work_at_the_top(browser: Any, new_db: NewDb) -> None:
    """After a Retraction Watch file names one of its cited works, the page leads with the notice,
    links its feed, and the feed is what the link names."""
    db = new_db("alerted.db")
    ingest(sample_ledger(db), SourceFile("retraction-watch", RW, T_INGEST))
    ARTIFACTS.mkdir(exist_ok=True)
    with running_server(db, args=["--no-samples"]) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            assert page.goto(f"{server.base}/paper/{CITING}/citation-record").status == 200
            section = page.locator("section#alerts")
            assert section.is_visible() and section.locator("h2").inner_text() == "Notices on cited works"
            assert section.locator("li.alert").count() == 7
            assert section.get_by_text("Expression of concern", exact=False).first.is_visible()
            # each notice names the work it is on by its DOI (or arXiv id) and title
            cell = section.locator("li.alert", has_text="10.5555/j.cell.2019.05.031")
            assert cell.count() == 2
            assert "· DOI 10.5555/j.cell.2019.05.031 “Work w-cell”:" in cell.first.inner_text()
            box = section.bounding_box()
            coverage = page.locator("section#coverage").bounding_box()
            assert box is not None and coverage is not None and box["y"] < coverage["y"]  # at the top
            page.screenshot(path=str(ARTIFACTS / "record-page-alerts.png"))
            feed = section.get_by_role("link", name="Atom feed of these notices")
            assert feed.get_attribute("href") == f"/paper/{CITING}/alerts.atom"
        finally:
            page.close()


def _offline(page: Any) -> list[str]:
    """Cut the page off every network but the loopback server's: what it asked elsewhere, refused."""
    refused: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    page.route("**/*", route)
    return refused


def test_api_documentation_renders_with_the_network_cut(browser: Any, new_db: NewDb):
    """Swagger UI comes from the package (fastapi-offline), not a CDN: with every request but those to
    the server refused, /docs lists the routes (and asked nothing of anyone else)."""
    with running_server(new_db(), args=["--no-samples"]) as server:
        page = browser.new_page()
        try:
            refused = _offline(page)
            assert page.goto(server.base + "/docs").status == 200
            summary = page.locator(".opblock-summary-path", has_text="/paper/{arxiv_id}/citation-record.json")
            summary.first.wait_for(timeout=30_000)
            paths = page.locator(".opblock-summary-path").all_inner_texts()
            assert {"/search", "/events", "/checkpoint", "/healthz"} <= {p.strip() for p in paths}
            page.screenshot(path=str(ARTIFACTS / "api-docs-offline.png"))
            page.locator(".opblock-summary-path", has_text="/search").first.click()
            page.get_by_text("Title words (letters and digits").first.wait_for(timeout=30_000)
            assert refused == []
        finally:
            page.close()


def test_the_index_page_finds_a_paper_by_title_words(browser: Any, new_db: NewDb):
    sample = json.loads(SAMPLE.read_bytes())
    with running_server(new_db()) as server:
        page = browser.new_page()
        try:
            assert page.goto(server.base + "/").status == 200
            page.fill("input[name=q]", "memory wall")
            with page.expect_navigation():
                page.click("form[role=search] button[type=submit]")
            assert page.url.endswith("/search?q=memory+wall")
            hit = page.get_by_role("link", name=sample["paper"]["title"])
            with page.expect_navigation():
                hit.click()
            assert page.url.endswith("/paper/2509.02480/citation-record")
            assert page.locator("h1").inner_text() == sample["paper"]["title"]
        finally:
            page.close()


def test_a_broken_chain_is_said_at_the_top_of_the_record_page(browser: Any, new_db: NewDb) -> None:
    """The tour's edit (a title's stored bytes changed, the hash not): once the server's start-up walk
    has found it, the record page leads with an alert naming the seq, above the altered title."""
    db = new_db()
    _verified_ledger(db)
    _tamper(db)
    ARTIFACTS.mkdir(exist_ok=True)
    with running_server(db, ready=(200, 503)) as server:
        wait_until(lambda: httpx.get(f"{server.base}/healthz").status_code == 503, "the start-up walk ends")
        page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone: the top is small
        try:
            assert page.goto(server.base + RECORD).status == 200
            alert = page.get_by_role("alert")
            assert alert.is_visible()
            assert f"The ledger's chain is broken at seq {EDITED}:" in alert.inner_text()
            box, h1 = alert.bounding_box(), page.locator("h1").bounding_box()
            assert box is not None and h1 is not None
            assert box["y"] < h1["y"] and box["y"] + box["height"] <= 844  # first thing, in the first screen
            assert ALTERED in page.locator("h1").inner_text()
            page.screenshot(path=str(ARTIFACTS / "record-page-chain-broken.png"))
        finally:
            page.close()


def _follow(page: Any, click: Any, *, negotiated: bool = True) -> Any:
    """Click, wait for the page it loads, and check it is a page (not JSON shown as text)."""
    with page.expect_navigation() as nav:
        click()
    response = nav.value
    assert response is not None and response.headers["content-type"].startswith("text/html"), response.url
    assert response.headers.get("vary") == ("Accept" if negotiated else None)
    return response


def test_the_record_pages_buttons_bring_pages_not_json(browser: Any, new_db: NewDb) -> None:
    """Integrity report, What changed since (empty, then with a date) and the timeline's change link:
    each a page for people, the proofs a click away."""
    first = "2026-08-07T16:39:03.985890Z"
    with running_server(new_db()) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            assert page.goto(server.page_url).status == 200
            _follow(page, lambda: page.get_by_role("link", name="Integrity report").click())
            assert page.locator("h1").inner_text() == "Integrity of the record of arXiv:2509.02480"
            assert page.locator("#verdict").inner_text().startswith("Verified.")
            # an event's inclusion proof unfolds in place; its seq links to the proof as the ledger serves it
            row = page.locator("#seq-1")
            assert row.get_by_role("link", name="1").get_attribute("href") == "/evidence/1/proof"
            row.locator("summary").click()
            assert row.locator("ol li").first.is_visible()

            page.goto(server.page_url)
            answer = _follow(page, lambda: page.get_by_role("button", name="What changed since").click())
            assert answer.status == 422
            assert page.locator("#fix").inner_text().startswith("What to fix: In the “What changed since”")
            back = page.get_by_role("link", name="Back to the record")
            _follow(page, back.click, negotiated=False)

            page.fill("#changes_from", first)
            _follow(page, lambda: page.get_by_role("button", name="What changed since").click())
            assert page.locator("h1").inner_text() == "What changed in the record of arXiv:2509.02480"
            assert page.locator("#verdict").inner_text().startswith("The record changed.")
            assert page.locator("#verdict a").first.get_attribute("href") == "/evidence/131/proof"

            page.goto(server.page_url)
            link = page.locator("#tl-now").get_by_role("link", name="what changed, with each event")
            _follow(page, link.click)
            assert page.locator("h1").inner_text() == "What changed in the record of arXiv:2509.02480"
            assert errors == []
        finally:
            page.close()

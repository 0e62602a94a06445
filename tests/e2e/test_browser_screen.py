"""The screen page in a real headless Chromium, served by a real `ledger serve` process: grouped by
citing paper, sorted by a click on a column's heading, and the screenshot docs/screen.md shows
(remade with LEDGER_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.e2e.test_browser import browser  # noqa: F401 (the fixture)
from tests.e2e.test_browser_timeline import PARTS, _screenshot, _words
from tests.screen_scenario import seeded_ledger

# each paper's group: its id and its lines' reference indexes, in the order shown
ROWS = """() => [...document.querySelectorAll('#screen tbody')].map(b => [b.dataset.paper,
  [...b.rows].slice(1).map(r => r.cells[0].dataset.value)])"""


def test_the_screen_page_groups_by_paper_and_sorts(browser: Any, new_db: NewDb, tmp_path: Path) -> None:  # noqa: F811
    db = new_db()
    ledger, _ = seeded_ledger(db)
    ledger.close()
    with running_server(db, args=["--no-samples"]) as server:
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        try:
            response = page.goto(f"{server.base}/screen?as_of=2026-02-05")
            assert response is not None and response.status == 200
            assert response.headers["vary"] == "Accept"
            assert (
                page.locator("h1").inner_text() == "Screen of every paper as of 2026-02-05T23:59:59.999999Z"
            )
            assert page.evaluate(ROWS) == [
                ["2101.00001", ["4", "7"]], ["2101.00002", ["0"]], ["2101.00003", ["3"]],
            ]  # fmt: skip
            outline = "\n".join(_words(part) for part in page.evaluate(PARTS))
            _screenshot("screen-page", page.screenshot(full_page=True), outline, tmp_path)
            heading = page.locator("#screen thead th").first
            heading.click()  # ascending: as it came
            assert heading.get_attribute("aria-sort") == "ascending"
            heading.click()  # descending: within each paper, and the papers by their first line
            assert heading.get_attribute("aria-sort") == "descending"
            assert page.evaluate(ROWS) == [
                ["2101.00001", ["7", "4"]], ["2101.00003", ["3"]], ["2101.00002", ["0"]],
            ]  # fmt: skip
            # the form asks again at another instant
            page.fill("input[name=as_of]", "2026-03-01")
            with page.expect_navigation():
                page.click("form button[type=submit]")
            assert page.evaluate(ROWS) == [
                ["2101.00001", ["4"]], ["2101.00002", ["0"]], ["2101.00003", ["2"]],
            ]  # fmt: skip
            page.set_viewport_size({"width": 390, "height": 844})
            overflow = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert overflow[0] <= overflow[1], f"horizontal overflow on a phone: {overflow}"
        finally:
            page.close()

"""The timeline and its slider in a real headless Chromium, served by a real `ledger serve` process.

Screenshots go to the test's temporary directory (kept by pytest for the last runs); everything is
checked by element (a mark's lane, class and link), never by pixels. The README's screenshots are made
here too (LEDGER_UPDATE_SCREENSHOTS=1 writes them into docs/images/).
"""

from __future__ import annotations

import difflib
import os
import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ledger.model.instants import format_as_of, parse_ts
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.e2e.test_browser import browser  # noqa: F401 (the fixture)
from tests.paths import ROOT
from tests.timeline_history import PAPER, history

SAMPLE = "2509.02480"
FIRST = "2026-08-07T16:39:03.985890Z"
CHECKS = {
    "check:retraction_watch": "2026-08-08T06:31:55.242210Z",
    "check:crossref": "2026-08-08T06:32:00.761636Z",
}
MARKS = "svg[data-chart=events] g[data-lane={lane}] a"


def _marks(page: Any, lane: str) -> list[dict[str, str]]:
    """The lane's marks as the browser holds them: href, instants (data-i) and rect class."""
    return page.eval_on_selector_all(
        MARKS.format(lane=f'"{lane}"'),
        "els => els.map(a => ({href: a.getAttribute('href'), i: a.dataset.i,"
        " cls: a.querySelector('rect').getAttribute('class')}))",
    )


def _loaded(page: Any, at: str) -> None:
    """Wait (a generous deadline) until the slider has loaded the record as of `at` in place."""
    page.wait_for_function(f"document.getElementById('timeline').dataset.loaded === {at!r}", timeout=30_000)


@contextmanager
def _record_page(chromium: Any, server: Any, paper: str, height: int) -> Iterator[tuple[Any, str]]:
    """A new page on `paper`'s record (answered 200) and its URL; at the end no script error was
    thrown, and the page is closed."""
    page = chromium.new_page(viewport={"width": 1100, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        url = f"{server.base}/paper/{paper}/citation-record"
        assert page.goto(url).status == 200
        yield page, url
        assert errors == []
    finally:
        page.close()


def _no_overflow_on_a_phone(page: Any, url: str, shot: Path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(url)
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"horizontal overflow on a phone: {width} > {inner}"
    assert page.locator("#tl-range").is_visible() and page.locator("#tl-now").is_visible()
    # the chart scrolls inside its own box instead, its cursor brought into view
    box = page.locator(".tl-scroll").first
    assert box.evaluate("b => b.scrollWidth > b.clientWidth && b.scrollLeft > 0")
    page.screenshot(path=str(shot))


def test_the_sample_paper(browser: Any, new_db: NewDb, tmp_path: Path) -> None:  # noqa: F811
    with (
        running_server(new_db()) as server,
        _record_page(browser, server, SAMPLE, 1000) as (page, url),
    ):
        for lane, at in CHECKS.items():
            assert [m["href"] for m in _marks(page, lane)] == [f"?as_of={at}"], lane
        snapshots = _marks(page, "snapshots")
        assert snapshots[-1]["href"] == f"?as_of={FIRST}" and snapshots[-1]["cls"] == "m"
        # the references were observed before the first snapshot: hollow marks, shown from FIRST
        citations = _marks(page, "citations")
        assert citations and {m["cls"] for m in citations} == {"e"}
        assert {m["href"] for m in citations} == {f"?as_of={FIRST}"}
        assert page.locator("#tl-at").inner_text() == f"{CHECKS['check:crossref']} · change 3 of 3"
        page.locator("#timeline").screenshot(path=str(tmp_path / "timeline-sample.png"))

        page.locator("#tl-range").focus()
        page.keyboard.press("Home")
        _loaded(page, FIRST)
        assert page.url == f"{url}?as_of={FIRST}"
        assert page.input_value("#as_of") == FIRST  # the record below is the one as of FIRST
        assert page.locator("#tl-now li").first.inner_text().startswith("the record begins: 56 outbound")
        page.keyboard.press("ArrowRight")
        _loaded(page, CHECKS["check:retraction_watch"])
        assert page.url.endswith(f"?as_of={CHECKS['check:retraction_watch']}")
        assert page.locator("#tl-now li").all_inner_texts() == ["retraction_watch checked"]
        assert "Checked: retraction_watch at" in page.locator("#outbound").inner_text()
        assert "crossref at" not in page.locator("#outbound").inner_text()
        _no_overflow_on_a_phone(page, url, tmp_path / "timeline-sample-phone.png")


@pytest.fixture
def synthetic_db(new_db: NewDb) -> str:
    db = new_db()
    ledger = Ledger(db)
    events = history().events
    for i in range(0, len(events), 1000):
        ledger.append(events[i : i + 1000])
    ledger.close()
    return db


def test_a_paper_with_5000_events(browser: Any, synthetic_db: str, tmp_path: Path) -> None:  # noqa: F811
    made = history()
    timeline, _ = Ledger(synthetic_db).records.timeline(PAPER)
    with (
        running_server(synthetic_db, args=["--no-samples"]) as server,
        _record_page(browser, server, PAPER, 1400) as (page, url),
    ):
        svg_bytes = page.eval_on_selector_all(
            "svg.tl-chart", "els => els.reduce((n, e) => n + new Blob([e.outerHTML]).size, 0)"
        )
        assert svg_bytes < 200_000, svg_bytes
        notices = _marks(page, "notices")
        strong = {m["href"] for m in notices if m["cls"] == "s"}
        assert strong == {f"?as_of={format_as_of(parse_ts(at))}" for at in made.notice_first.values()}
        gone = format_as_of(parse_ts(made.notice_gone["expression_of_concern"]))
        assert [m["href"] for m in notices if m["cls"] != "s"] == [f"?as_of={gone}"]
        versions = [
            i.at
            for i in timeline.instants
            if any(c.startswith(("first snapshot", "snapshot v")) for c in i.changes)
        ]
        assert [m["href"] for m in _marks(page, "snapshots")] == [f"?as_of={v}" for v in versions]
        assert len(_marks(page, "resolutions")) < 200  # 2,450 marks merged into bands
        lines = page.eval_on_selector_all("svg[data-chart=measures] g[data-lane] path", "ps => ps.length")
        assert lines == 2  # one line per source, never summed
        assert page.locator("#timeline details").count() == 3
        page.locator("#timeline").screenshot(path=str(tmp_path / "timeline-5000.png"))

        # a strong mark moves the slider, the record and the URL to the notice's instant
        retraction = format_as_of(parse_ts(made.notice_first["retraction"]))
        page.locator(f'svg a[href="?as_of={retraction}"]').first.click()
        _loaded(page, retraction)
        assert page.url == f"{url}?as_of={retraction}"
        index = next(n for n, i in enumerate(timeline.instants) if i.at == retraction)
        assert page.input_value("#tl-range") == str(index)
        assert (
            "retraction_watch reports a retraction of “Cited work 7”" in page.locator("#tl-now").inner_text()
        )
        assert "retraction reported by retraction_watch" in page.locator("#outbound").inner_text()

        page.locator("#tl-range").focus()
        page.keyboard.press("End")
        _loaded(page, timeline.instants[-1].at)
        assert "version 4" in page.locator("h1").inner_text()
        page.keyboard.press("Home")
        _loaded(page, timeline.instants[0].at)
        assert "version 1" in page.locator("h1").inner_text()
        assert "lists 0 of 0 outbound references" in page.locator("header").inner_text()
        assert page.url == f"{url}?as_of={timeline.instants[0].at}"

        # the paper page: the same timeline, its slider moving the record summary
        paper_url = f"{server.base}/paper/{PAPER}"
        page.goto(f"{paper_url}?as_of={retraction}")
        page.locator("#tl-range").focus()
        page.keyboard.press("ArrowRight")
        after = timeline.instants[index + 1].at
        _loaded(page, after)
        assert page.url == f"{paper_url}?as_of={after}"
        assert page.locator("#tl-record h2").inner_text() == f"The record as of {after}"
        _no_overflow_on_a_phone(page, url, tmp_path / "timeline-5000-phone.png")


IMAGES = ROOT / "docs" / "images"
UPDATE = "LEDGER_UPDATE_SCREENSHOTS"
SHOT_HEIGHT = 830  # px of the timeline shown: its lanes, slider, the instant's changes, the coverage
# the record page's parts in order: each child of <main>, its id or class, and its heading
PARTS = """() => [...document.querySelector("main").children].map(e => [e.tagName.toLowerCase(),
  e.id ? "#" + e.id : (e.className ? "." + e.className.split(" ").join(".") : ""),
  (e.querySelector("h1, h2") || {innerText: ""}).innerText].join(" ").trim())"""


def _size(png: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def _words(text: str) -> str:
    """Visible text as lines, hashes (which differ on every machine) and runs of spaces folded."""
    lines = (
        re.sub(r"\s+", " ", re.sub(r"[0-9a-f]{16,}", "<hash>", line)).strip() for line in text.splitlines()
    )
    return "\n".join(line for line in lines if line)


def _screenshot(name: str, png: bytes, outline: str, tmp_path: Path) -> None:
    """Write docs/images/NAME.png and its outline (LEDGER_UPDATE_SCREENSHOTS=1), else check them.

    Pixels differ with the machine's fonts, so what is compared is the image's size and the page's
    outline beside it (NAME.txt): its parts in order and their words. A page that gained or lost a part,
    as when the timeline came to the top of the record page, fails here until the images are remade.
    """
    width, height = _size(png)
    text = f"{name}.png: {width}x{height}\n{outline}\n"
    where = IMAGES if os.environ.get(UPDATE) == "1" else tmp_path
    (where / f"{name}.png").write_bytes(png)
    (where / f"{name}.txt").write_text(text)
    if where == IMAGES:
        return
    committed = (IMAGES / f"{name}.txt").read_text()
    diff = "".join(
        difflib.unified_diff(committed.splitlines(True), text.splitlines(True), "committed", "now")
    )
    assert committed == text, (
        f"docs/images/{name}.png no longer shows today's page (the new one is in {tmp_path}); "
        f"remake it with {UPDATE}=1 pytest tests/e2e/test_browser_timeline.py -k screenshot:\n{diff}"
    )
    assert _size((IMAGES / f"{name}.png").read_bytes()) == (width, height)


def test_the_readme_screenshot_of_the_record_page(browser: Any, new_db: NewDb, tmp_path: Path) -> None:  # noqa: F811
    """The sample as of 8 August 2026 (an unbroken chain), the timeline at its top."""
    with running_server(new_db()) as server:
        page = browser.new_page(viewport={"width": 1000, "height": 1100})
        try:
            assert page.goto(server.page_url).status == 200
            assert page.locator("#chain-broken").count() == 0
            outline = "\n".join(_words(part) for part in page.evaluate(PARTS))
            _screenshot("record-page", page.screenshot(), outline, tmp_path)
        finally:
            page.close()


def test_the_readme_screenshot_of_the_timeline(browser: Any, synthetic_db: str, tmp_path: Path) -> None:  # noqa: F811
    """The paper of 5,000 events, its slider at the retraction of a cited work."""
    retraction = format_as_of(parse_ts(history().notice_first["retraction"]))
    with running_server(synthetic_db, args=["--no-samples"]) as server:
        page = browser.new_page(viewport={"width": 752, "height": 1000})
        try:
            url = f"{server.base}/paper/{PAPER}/citation-record?as_of={retraction}"
            assert page.goto(url).status == 200
            timeline = page.locator("#timeline")
            box = timeline.bounding_box()
            assert box is not None and box["height"] > SHOT_HEIGHT
            # the section's top, a fixed height: its full height would vary with the fonts' line breaks
            clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": SHOT_HEIGHT}
            shot = page.screenshot(clip=clip, full_page=True)
            _screenshot("timeline", shot, _words(timeline.inner_text()), tmp_path)
        finally:
            page.close()

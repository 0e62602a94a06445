"""The record's "what changed" and "integrity" URLs over a real socket: curl (Accept: */*) gets JSON, a
browser's Accept gets a page, errors likewise, and both answers say `Vary: Accept`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api_fixtures import Server, running_server

pytestmark = pytest.mark.process

PAPER = "2509.02480"
FIRST = "2026-08-07T16:39:03.985890Z"  # the sample's first snapshot
# what Chromium and Firefox send when following a link or submitting a form
JSON = "application/json"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
CHANGES = f"/paper/{PAPER}/changes?from={FIRST}"
INTEGRITY = f"/paper/{PAPER}/integrity"
URLS = [CHANGES, INTEGRITY, f"/paper/{PAPER}/changes?from={FIRST}&to=2026-08-08T08:47:00Z"]
# (url, status, the field or words the answer names)
ERRORS = [
    (f"/paper/{PAPER}/changes?from=", 422, "from"),  # the record page's box left empty
    (f"/paper/{PAPER}/changes?from=2026-13-45", 422, "from"),
    (f"/paper/{PAPER}/changes?from={FIRST}&to=yesterday", 422, "to"),
    (f"/paper/{PAPER}/integrity?as_of=someday", 422, "as_of"),
    (f"/paper/{PAPER}/integrity?page=9", 404, "page"),
    ("/paper/2401.00001/changes?from=2026-01-01", 404, "2401.00001"),
    ("/paper/nope/integrity", 422, "arxiv_id"),
]


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `ledger serve` over the sample for the module: the tests only read."""
    directory = tmp_path_factory.mktemp("negotiated")
    with running_server(db_factory(directory), cwd=directory) as s:
        yield s


def _curl(url: str) -> tuple[int, dict[str, str], bytes]:
    """GET with curl as people run it (its own Accept: */*): status, headers (lower-case), body."""
    exe = shutil.which("curl")
    if exe is None:
        pytest.skip("curl is not installed")
    out = subprocess.run([exe, "-s", "-i", "--max-time", "30", url], capture_output=True, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _browser(url: str) -> httpx.Response:
    return httpx.get(url, headers={"Accept": BROWSER}, timeout=30)


@pytest.mark.parametrize("path", URLS)
def test_curl_gets_json_and_a_browser_a_page(server: Server, path: str) -> None:
    status, headers, body = _curl(server.base + path)
    assert status == 200 and headers["content-type"] == "application/json"
    assert headers["vary"] == "Accept"
    doc = json.loads(body)
    assert doc["arxiv_id"] == PAPER
    page = _browser(server.base + path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["vary"] == "Accept"
    assert page.headers["ledger-head"] == headers["ledger-head"]
    assert page.text.startswith("<!doctype html>") and f"arXiv:{PAPER}" in page.text
    # the proofs a click away: each event named links to its inclusion proof
    assert f'href="/evidence/{doc["events"][0]["seq"]}/proof"' in page.text


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        ("application/json", False),
        ("application/json, text/html", False),  # a tie: JSON
        ("text/html;q=0.5, application/json;q=0.9", False),
        ("text/html, application/json;q=0.9", True),
        ("TEXT/HTML", True),
        ("text/*;q=0.5, */*;q=0.1", True),
        ("text/html;q=0", False),
        ("", False),
    ],
)
def test_html_only_when_it_ranks_above_json(server: Server, accept: str, html: bool) -> None:
    answer = httpx.get(server.base + CHANGES, headers={"Accept": accept}, timeout=30)
    assert answer.status_code == 200 and answer.headers["vary"] == "Accept"
    kind = answer.headers["content-type"]
    assert kind.startswith("text/html") if html else kind == "application/json", (accept, kind)


@pytest.mark.parametrize(("path", "status", "named"), ERRORS)
def test_errors_are_a_page_for_a_browser_and_the_json_shape_for_clients(
    server: Server, path: str, status: int, named: str
) -> None:
    code, headers, body = _curl(server.base + path)
    assert code == status and headers["content-type"] == "application/json"
    assert headers["vary"] == "Accept"
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message", "details"} and named in json.dumps(error)
    page = _browser(server.base + path)
    assert page.status_code == status and page.headers["content-type"].startswith("text/html")
    assert page.headers["vary"] == "Accept"
    assert '"error"' not in page.text and error["message"].split(":")[0] in page.text
    if named in ("from", "to", "as_of"):  # it says which box or parameter to fix and what to type there
        assert 'id="fix"' in page.text and "YYYY-MM-DD" in page.text


def test_the_empty_changes_box_names_the_box(server: Server) -> None:
    page = _browser(f"{server.base}/paper/{PAPER}/changes?from=&to=2026-08-08T08:47:00Z")
    assert page.status_code == 422
    assert "In the “What changed since” box, type a date as YYYY-MM-DD" in page.text
    assert f'href="/paper/{PAPER}/citation-record"' in page.text


def test_answers_alternating_between_clients_never_cross(server: Server) -> None:
    """The app's caches hold records and timelines, not answers: JSON, page, JSON again from one URL, each
    client gets its own kind, on the negotiated URLs and on /paper/{id} at a fixed instant (whose default
    is the page, and whose timeline is cached per head)."""
    for path in (CHANGES, INTEGRITY, f"/paper/{PAPER}?as_of=2026-08-08"):
        for accept, kind in (("application/json", JSON), (BROWSER, "text/html"), ("application/json", JSON)):
            answer = httpx.get(server.base + path, headers={"Accept": accept}, timeout=30)
            assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind), path
            assert answer.headers["vary"] == "Accept", path

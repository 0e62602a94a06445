"""An instant the ledger cannot know yet (as_of, known_at, from, to past now and the 5 minutes of clock
skew appends allow) is refused, naming now: 422 over HTTP (an HTML page for the pages), a usage error in
the CLI; and a malformed date is refused with the same words and hint by both doors. On the backend
under test."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from api.app import create_app
from api.settings import Settings
from cli.main import main
from ledger.model.errors import InvalidEvent
from ledger.model.instants import FUTURE_SLACK_US, SYSTEM_CLOCK, format_as_of, read_instant
from service.ledger import Ledger
from tests.paths import DATA

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

PAPER = "2509.02480"
FUTURE = "2999-01-01"
RECORD = (DATA / "2509.02480.record.json").read_bytes()
NOW_IS = re.compile(r"now is (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


@pytest.fixture
def client(imported_ledger: Ledger) -> TestClient:
    return TestClient(create_app(Settings(db=imported_ledger.url)), raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("route", "param"),
    [
        (f"/paper/{PAPER}/citation-record.json", "as_of"),
        (f"/paper/{PAPER}/citation-record.json", "known_at"),
        (f"/paper/{PAPER}/integrity", "as_of"),
        (f"/paper/{PAPER}/integrity", "known_at"),
        (f"/paper/{PAPER}/bundle", "as_of"),
        (f"/paper/{PAPER}/bundle", "known_at"),
        (f"/paper/{PAPER}/changes", "to"),
        (f"/paper/{PAPER}/changes", "from"),
    ],
)
def test_an_instant_in_the_future_is_422_naming_now(client: TestClient, route: str, param: str) -> None:
    before = SYSTEM_CLOCK.now_us()
    r = client.get(route, params={"from": "2026-08-01", param: FUTURE})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["details"]["where"] == param
    assert error["message"].startswith(f"{param}: '{FUTURE}' is in the future (now is ")
    assert "the ledger cannot know what it will hold then" in error["message"]
    now = NOW_IS.search(error["message"])
    assert now is not None and error["details"]["now"] == now[1]
    assert now[1] >= format_as_of(before - before % 1_000_000)


def test_verify_refuses_a_known_at_in_the_future(client: TestClient) -> None:
    r = client.post("/verify", params={"known_at": FUTURE}, content=RECORD)
    assert r.status_code == 422 and r.json()["error"]["details"]["where"] == "known_at"


@pytest.mark.parametrize("route", [f"/paper/{PAPER}/citation-record", f"/paper/{PAPER}"])
def test_a_page_as_of_the_future_is_a_422_page(client: TestClient, route: str) -> None:
    r = client.get(route, params={"as_of": FUTURE})
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]
    assert "is in the future" in r.text and "As of 1 January 2999" not in r.text


def test_an_instant_within_the_clock_skew_is_taken(client: TestClient) -> None:
    soon = format_as_of(SYSTEM_CLOCK.now_us() + FUTURE_SLACK_US - 60_000_000)
    r = client.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": soon})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("offset_us", "refused"),
    [(0, False), (FUTURE_SLACK_US, False), (FUTURE_SLACK_US + 1, True), (-(10**12), False)],
)
def test_the_limit_is_now_plus_the_clock_skew(offset_us: int, refused: bool) -> None:
    now = 1_800_000_000_000_000
    text = format_as_of(now + offset_us)
    if refused:
        with pytest.raises(
            InvalidEvent, match=r"^as_of: .* is in the future \(now is 2027-01-15T08:00:00Z\)"
        ):
            read_instant(text, "as_of", now)
    else:
        assert read_instant(text, "as_of", now) == now + offset_us


@pytest.mark.parametrize(
    "args",
    [
        ["record", PAPER, "--as-of", "{t}"],
        ["record", PAPER, "--known-at", "{t}"],
        ["bundle", PAPER, "--as-of", "{t}", "--out", "b.json"],
        ["diff", PAPER, "2026-08-01", "{t}"],
    ],
)
def test_the_cli_refuses_an_instant_in_the_future(
    imported_ledger: Ledger, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [a.format(t=FUTURE) for a in args] + ["--db", imported_ledger.url]
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 2, out.output
    assert f"'{FUTURE}' is in the future (now is " in out.stderr
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("bad", ["2025-13-01", "yesterday", "2026-08-08T08:47:00", "2026-02-30"])
@pytest.mark.parametrize(
    ("route", "param", "args", "option"),
    [
        (f"/paper/{PAPER}/citation-record.json", "as_of", ["record", PAPER, "--as-of"], "--as-of"),
        (f"/paper/{PAPER}/citation-record.json", "known_at", ["record", PAPER, "--known-at"], "--known-at"),
        (f"/paper/{PAPER}/changes", "to", ["diff", PAPER, "2026-08-01"], "TO"),
    ],
)
def test_the_cli_refuses_a_bad_date_with_the_words_of_the_http_422(
    client: TestClient,
    imported_ledger: Ledger,
    bad: str,
    route: str,
    param: str,
    args: list[str],
    option: str,
) -> None:
    r = client.get(route, params={"from": "2026-08-01", param: bad})
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert message.startswith(f"{param}: ") and message.endswith(
        "; expected RFC 3339 with an offset or YYYY-MM-DD"
    )
    reason = message.removeprefix(f"{param}: ")
    out = CliRunner().invoke(main, [*args, bad, "--db", imported_ledger.url])
    assert out.exit_code == 2
    assert f"Invalid value for {option}: {reason}\n" in out.stderr

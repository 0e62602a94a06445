"""Standing alerts over HTTP (api/watches.py): watches behind the token, alerts as JSON, SSE and Atom."""

from __future__ import annotations

import base64
import json
from typing import Any

import feedparser
import pytest

from api.app import create_app
from api.settings import Settings
from service.alerts import alerts as al
from service.alerts import webhooks as wh
from service.sources import SourceFile, ingest
from tests.api.test_api import AUTH, TOKEN, TestClient, ledger_of
from tests.conftest import NewDb
from tests.service.alerts.test_alerts import RW, RW_NOTICES
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_events


@pytest.fixture
def sampled(new_db: NewDb) -> TestClient:
    """The API over the sample ledger of the source tests (works with DOIs, cited by CITING)."""
    api = TestClient(create_app(Settings(db=new_db(), tokens=(TOKEN,))))
    ledger_of(api).append(sample_events())
    return api


def _watch(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/watches", json=body, headers=AUTH)
    assert answer.status_code == 201, answer.text
    made: dict[str, Any] = answer.json()
    return made


def _raise(client: TestClient) -> None:
    """What the server's alerting thread does after a commit (a TestClient runs no lifespan)."""
    al.raise_new(ledger_of(client).store, ledger_of(client).clock)


def test_a_watch_is_made_listed_read_and_removed(sampled: TestClient) -> None:
    made = _watch(sampled, {"arxiv_id": CITING, "callback_url": "https://hooks.example/a", "secret": "s"})
    assert made["kind"] == "paper" and made["arxiv_id"] == CITING and made["signed"] is True
    assert "secret" not in made and {"w-cell", "w-plos", "w-arxiv"} <= set(made["works_covered"])
    listed = sampled.get("/watches", headers=AUTH).json()
    assert [w["id"] for w in listed["watches"]] == [made["id"]] and listed["next"] is None
    one = sampled.get(f"/watches/{made['id']}", headers=AUTH).json()
    assert one["works_covered"] == made["works_covered"]
    assert sampled.delete(f"/watches/{made['id']}", headers=AUTH).json() == {
        "id": made["id"],
        "removed": True,
    }
    gone = sampled.get(f"/watches/{made['id']}", headers=AUTH)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert sampled.get("/watches", headers=AUTH).json()["watches"] == []


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/watches"), ("GET", "/watches"), ("GET", "/watches/x"), ("DELETE", "/watches/x"),
     ("GET", "/watches/x/alerts"), ("GET", "/watches/x/deliveries"), ("GET", "/watches/x/alerts/stream")],
)  # fmt: skip
def test_every_watch_route_needs_the_token(sampled: TestClient, method: str, path: str) -> None:
    answer = sampled.request(method, path, json={"arxiv_id": CITING} if method == "POST" else None)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        pytest.param(b"[1", "not valid JSON", id="not-json"),
        pytest.param(b'{"works": ["isbn:1"]}', "works[0]", id="bad-work"),
        pytest.param(b'{"arxiv_id": "2101.00001", "callback_url": "https://192.168.0.1/x"}', "callback_url",
                     id="private-callback"),
        pytest.param(b'{"arxiv_id": "2101.00001", "arxiv_id": "2101.00002"}', "arxiv_id",
                     id="repeated-key"),
        pytest.param(b'{"arxiv_id": "2101.00001", "callback_url": "https://h.x/a", "secret": "whsec_!"}',
                     "secret", id="whsec-not-base64"),
    ],
)  # fmt: skip
def test_a_bad_watch_is_a_422_naming_the_field_and_nothing_is_stored(
    sampled: TestClient, body: bytes, where: str
) -> None:
    answer = sampled.post("/watches", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid" and where in error["message"]
    assert sampled.get("/watches", headers=AUTH).json()["watches"] == []


def test_alerts_page_in_the_order_raised_and_resume_after_a_number(sampled: TestClient) -> None:
    made = _watch(sampled, {"arxiv_id": CITING})
    ingest(ledger_of(sampled), SourceFile("retraction-watch", RW, T_INGEST))
    _raise(sampled)
    got = sampled.get(f"/watches/{made['id']}/alerts", headers=AUTH).json()
    kinds = sorted((a["work"]["work_id"], a["notice"]["kind"]) for a in got["alerts"])
    assert kinds == RW_NOTICES and got["next"] is None
    numbers = [a["n"] for a in got["alerts"]]
    assert numbers == sorted(numbers)
    rest = sampled.get(f"/watches/{made['id']}/alerts", params={"after": numbers[1]}, headers=AUTH).json()
    assert [a["n"] for a in rest["alerts"]] == numbers[2:]
    later = sampled.get(f"/watches/{made['id']}/alerts", params={"since": "2999-01-01"}, headers=AUTH).json()
    assert later["alerts"] == []


def test_the_alert_stream_sends_each_alert_once_and_resumes_from_last_event_id(sampled: TestClient) -> None:
    made = _watch(sampled, {"arxiv_id": CITING})
    ingest(ledger_of(sampled), SourceFile("retraction-watch", RW, T_INGEST))
    _raise(sampled)
    url = f"/watches/{made['id']}/alerts/stream"

    def read(headers: dict[str, str], want: int) -> list[tuple[int, dict[str, Any]]]:
        out: list[tuple[int, dict[str, Any]]] = []
        with sampled.stream("GET", url, headers={**AUTH, **headers}) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            n = None
            for line in answer.iter_lines():
                if line.startswith("id: "):
                    n = int(line[4:])
                elif line.startswith("data: "):
                    assert n is not None
                    out.append((n, json.loads(line[6:])))
                    if len(out) == want:
                        break
        return out

    first = read({}, 7)
    assert sorted((a["work"]["work_id"], a["notice"]["kind"]) for _, a in first) == RW_NOTICES
    resumed = read({"Last-Event-ID": str(first[1][0])}, 5)
    assert resumed == first[2:]


def test_the_paper_feed_is_valid_atom_with_an_entry_per_notice(sampled: TestClient) -> None:
    empty = sampled.get(f"/paper/{CITING}/alerts.atom")
    assert empty.status_code == 200 and empty.headers["content-type"].startswith("application/atom+xml")
    assert feedparser.parse(empty.content).entries == []
    ingest(ledger_of(sampled), SourceFile("retraction-watch", RW, T_INGEST))
    _raise(sampled)
    answer = sampled.get(f"/paper/{CITING}/alerts.atom")
    feed = feedparser.parse(answer.content)
    assert not feed.bozo, feed.bozo_exception
    assert feed.version == "atom10" and feed.feed.title == f"Notices on works cited by arXiv:{CITING}"
    assert len(feed.entries) == 7 and len({e.id for e in feed.entries}) == 7
    assert all(e.link.startswith("citation-record?as_of=") for e in feed.entries)
    # each entry names the work the notice is on by its DOI and title, never by the ledger's work_id
    cell = [e for e in feed.entries if "10.5555/j.cell.2019.05.031" in e.title]
    assert sorted(e.title for e in cell) == [
        f"{kind} of DOI 10.5555/j.cell.2019.05.031 “Work w-cell” (reported by retraction_watch)"
        for kind in ("expression of concern", "retraction")
    ]
    assert not any("w-cell" in e.summary.replace("Work w-cell", "") for e in feed.entries)
    assert sampled.get("/paper/not-an-id/alerts.atom").status_code == 422
    moved = sampled.get(f"/paper/arXiv:{CITING}v1/alerts.atom", follow_redirects=False)
    assert moved.status_code == 308 and moved.headers["location"] == f"/paper/{CITING}/alerts.atom"


def test_the_record_page_shows_the_notices_or_says_there_are_none(sampled: TestClient) -> None:
    before = sampled.get(f"/paper/{CITING}/citation-record").text
    assert "No notice for any cited work as of" in before and "no source has checked" in before
    ingest(ledger_of(sampled), SourceFile("retraction-watch", RW, T_INGEST))
    _raise(sampled)
    page = sampled.get(f"/paper/{CITING}/citation-record").text
    assert page.count('class="alert"') == 7 and "Retraction</strong> of reference" in page
    assert f"/paper/{CITING}/alerts.atom" in page
    past = sampled.get(f"/paper/{CITING}/citation-record", params={"as_of": "2026-01-01T00:10:00Z"}).text
    assert "No notice for any cited work as of" in past  # the check came after


def test_deliveries_are_listed_per_watch(sampled: TestClient) -> None:
    made = _watch(sampled, {"works": ["arxiv:2310.04610"], "callback_url": "https://hooks.example/b"})
    ingest(ledger_of(sampled), SourceFile("retraction-watch", RW, T_INGEST))
    _raise(sampled)
    refused = wh.Sent(None, None, "connection refused")
    wh.deliver_due(ledger_of(sampled).store, ledger_of(sampled).clock, lambda url, body, headers: refused)
    got = sampled.get(f"/watches/{made['id']}/deliveries", headers=AUTH).json()["deliveries"]
    assert [(d["attempt"], d["status"], d["error"]) for d in got] == [(1, None, "connection refused")]
    assert got[0]["next_at"] is not None


def test_a_secret_is_made_for_a_callback_given_none_and_told_only_at_creation(sampled: TestClient) -> None:
    made = _watch(sampled, {"arxiv_id": CITING, "callback_url": "https://hooks.example/a"})
    secret = made["secret"]
    assert made["signed"] is True and secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 24
    assert (
        _watch(sampled, {"arxiv_id": CITING, "callback_url": "https://hooks.example/b"})["secret"] != secret
    )
    assert "secret" not in _watch(sampled, {"arxiv_id": CITING})  # no callback: nothing to sign
    one = sampled.get(f"/watches/{made['id']}", headers=AUTH)
    listed = sampled.get("/watches", headers=AUTH)
    assert secret not in one.text and secret not in listed.text and one.json()["signed"] is True

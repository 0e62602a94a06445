"""The paper feed (GET /paper/{id}/alerts.atom) against a real `ledger serve`: characters XML 1.0 forbids
that an event or a source carries, ids and links that must not come from the request's Host header,
and LEDGER_PUBLIC_URL (checked at start)."""

from __future__ import annotations

import json
import re
import subprocess
import xml.dom.minidom
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import feedparser
import httpx
import msgspec
import pytest

from api.settings import Settings
from service.ledger import Ledger
from tests.api_fixtures import Server, free_port, ledger_command, running_server
from tests.factories import citation, oid_of
from tests.service.alerts.test_alerts import RW
from tests.service.sources.test_sources_support import CITING, T_INGEST, cited, sample_events, ts

TOKEN = "feed-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ATOM = "{http://www.w3.org/2005/Atom}"
TIMEOUT = 30
# characters XML 1.0 does not allow, each shown in the feed as U+FFFD
HOSTILE = "\x01\x0b\ufffe\uffff"
TITLE = f"Hostile{HOSTILE}title"
NOTICE_DOI = f"10.5555/notice{HOSTILE}x"
PUBLIC = "https://ledger.example.org/mirror"


def _hostile_citation() -> dict[str, Any]:
    """A citation by CITING of a work whose title carries HOSTILE, as a client appends it."""
    work = cited("w-hostile", ts(0), doi="10.5555/hostile.1")
    event = msgspec.to_builtins(citation(oid_of(80), CITING, ts(1), 8, work))
    event["data"]["cited_work"]["title"] = TITLE
    body: dict[str, Any] = event
    return body


def _hostile_rw() -> bytes:
    """The Retraction Watch fixture plus a row for the hostile work whose notice DOI carries HOSTILE."""
    header = RW.decode("utf-8-sig").splitlines()[0].split(",")
    row = dict.fromkeys(header, "")
    row.update({
        "Record ID": "99001", "Title": TITLE, "RetractionDate": "3/14/2026 0:00",
        "RetractionDOI": NOTICE_DOI, "OriginalPaperDOI": "10.5555/hostile.1",
        "RetractionNature": "Retraction", "Reason": f"+Why{HOSTILE};",
    })  # fmt: skip
    line = ",".join(f'"{v}"' for v in row.values())
    return RW + line.encode() + b"\r\n"


def _serve(db_factory: Any, directory: Path, env: dict[str, str]) -> Iterator[Server]:
    db = db_factory(directory)
    Ledger(db).append(sample_events())
    with running_server(db, env={"LEDGER_TOKENS": TOKEN, **env}, cwd=directory) as server:
        appended = httpx.post(
            f"{server.base}/events", json={"events": [_hostile_citation()]}, headers=AUTH, timeout=TIMEOUT
        )
        assert appended.status_code == 201, appended.text
        ingested = httpx.post(f"{server.base}/ingest/retraction-watch", params={"observed_at": T_INGEST},
                              content=_hostile_rw(), headers=AUTH, timeout=TIMEOUT)  # fmt: skip
        assert ingested.status_code == 201, ingested.text
        yield server


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server without LEDGER_PUBLIC_URL whose ledger holds the hostile title and notice."""
    yield from _serve(db_factory, tmp_path_factory.mktemp("feed"), {})


@pytest.fixture(scope="module")
def public(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same, with LEDGER_PUBLIC_URL set."""
    yield from _serve(db_factory, tmp_path_factory.mktemp("feed-public"), {"LEDGER_PUBLIC_URL": PUBLIC + "/"})


def _feed(server: Server, host: str | None = None) -> bytes:
    headers = {"Host": host} if host else {}
    answer = httpx.get(f"{server.base}/paper/{CITING}/alerts.atom", headers=headers, timeout=TIMEOUT)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/atom+xml")
    return answer.content


def test_characters_xml_forbids_are_shown_as_u_fffd_and_the_feed_parses_strictly(server: Server) -> None:
    raw = _feed(server)
    root = ET.fromstring(raw)  # strict: an ill-formed document raises
    xml.dom.minidom.parseString(raw)
    titles = [e.findtext(f"{ATOM}title") or "" for e in root.iter(f"{ATOM}entry")]
    # the work is named by its DOI and its title, each character XML forbids shown as U+FFFD
    named = f"DOI 10.5555/hostile.1 \u201cHostile{chr(0xFFFD) * 4}title\u201d"
    hostile = f"retraction of {named} (reported by retraction_watch)"
    assert hostile in titles
    summaries = " ".join(e.findtext(f"{ATOM}summary") or "" for e in root.iter(f"{ATOM}entry"))
    assert f"notice 10.5555/notice{chr(0xFFFD) * 4}x" in summaries
    assert not any(c in raw.decode() for c in HOSTILE)
    feed = feedparser.parse(raw)
    assert feed.bozo == 0, feed.get("bozo_exception")
    assert len(feed.entries) == 8 and any(e.title == hostile for e in feed.entries)


def test_the_ledger_refuses_a_lone_surrogate_so_no_feed_carries_one(server: Server) -> None:
    event = _hostile_citation()
    event["data"]["observation_id"] = oid_of(81)
    text = json.dumps({"events": [event]}).replace(json.dumps(TITLE)[1:-1], "lone \\ud800 surrogate")
    answer = httpx.post(f"{server.base}/events", content=text, headers=AUTH, timeout=TIMEOUT)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert (
        error["details"]["where"] == "events[0].data.cited_work.title"
        and "lone surrogate" in error["message"]
    )


def test_ids_and_links_do_not_depend_on_the_host_header(server: Server) -> None:
    one, other = _feed(server, "attacker.example"), _feed(server, "elsewhere.example:8443")
    assert one == other and b"attacker" not in one and b"127.0.0.1" not in one
    feed = feedparser.parse(one)
    assert feed.feed.id == f"tag:citation-ledger,2026:paper/{CITING}/alerts.atom"
    assert all(e.link.startswith("citation-record?as_of=") for e in feed.entries)
    # a reader resolves the relative links against the address it fetched the feed from
    url = f"{server.base}/paper/{CITING}/alerts.atom"
    headers = {"content-location": url, "content-type": "application/atom+xml"}
    read = feedparser.parse(one, response_headers=headers)
    assert read.bozo == 0
    link = read.entries[0].link
    assert link.startswith(f"{server.base}/paper/{CITING}/citation-record?as_of=")
    assert httpx.get(link, timeout=TIMEOUT).status_code == 200


def test_with_a_public_url_every_link_and_id_starts_with_it(public: Server) -> None:
    raw = _feed(public, "attacker.example")
    assert raw == _feed(public) and b"attacker" not in raw
    feed = feedparser.parse(raw)
    assert feed.bozo == 0 and feed.feed.id == f"{PUBLIC}/paper/{CITING}/alerts.atom"
    hrefs = re.findall(rb'href="([^"]*)"', raw)
    assert len(hrefs) == 2 + len(feed.entries) and all(h.startswith(PUBLIC.encode() + b"/") for h in hrefs)
    assert all(e.link.startswith(f"{PUBLIC}/paper/{CITING}/citation-record?as_of=") for e in feed.entries)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("ledger.example.org", "the scheme is not http or https"),
        ("ftp://ledger.example.org", "the scheme is not http or https"),
        ("https://ledger.example.org/?a=1", "it has a query"),
        ("https://ledger.example.org/#top", "it has a fragment"),
        ("https://", "there is no host"),
        ("https://ledger.example.org:99999", "Port out of range"),
        ("https://ledger example.org", "spaces, control or non-ASCII"),
        ("https://user:pw@ledger.example.org", "a user name"),
    ],
)
def test_a_bad_public_url_is_refused_naming_it(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)) as caught:
        Settings.from_env({"LEDGER_PUBLIC_URL": value})
    assert "LEDGER_PUBLIC_URL must be an absolute http(s) URL" in str(caught.value)
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("https://ledger.example.org/", "https://ledger.example.org"),
        ("http://10.0.0.5:8080/a/", "http://10.0.0.5:8080/a"),
        ("", None),
    ],
)
def test_a_good_public_url_is_kept_without_its_trailing_slash(value: str, kept: str | None) -> None:
    assert Settings.from_env({"LEDGER_PUBLIC_URL": value}).public_url == kept


def test_ledger_serve_refuses_to_start_with_a_bad_public_url(tmp_path: Path) -> None:
    cmd = [*ledger_command(), "serve", "--db", str(tmp_path / "l.db"), "--port", str(free_port())]
    done = subprocess.run(cmd, env={"LEDGER_PUBLIC_URL": "ftp://x", "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "LEDGER_PUBLIC_URL must be an absolute http(s) URL" in done.stderr, done.stderr

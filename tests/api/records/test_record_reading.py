"""The record page read by a librarian, over a real socket on the backend under test: beside the lines the
contract pins, each reference says that it is what its source said, what the source's method name means,
where the source contradicts itself, and the ledger's own resolution when the page shows another."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from ledger.model.codec import decode_json
from service.ledger import Ledger
from service.resolver.person import choice, resolve_by_person
from tests.api.records.test_render import hrefs, visible_lines
from tests.api.test_api import AUTH, TOKEN
from tests.api_fixtures import now_rfc3339, running_server
from tests.conftest import NewDb

PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"
HTML = {"Accept": "text/html"}


def _oid(record: dict[str, Any], ref: int) -> str:
    return next(o["observation_id"] for o in record["outbound"] if o["citation"]["reference_index"] == ref)


def _block(lines: list[str], oid: str) -> list[str]:
    """The lines of one outbound observation's block, up to the next observation or section."""
    i = lines.index(f"Observation {oid} · outbound")
    end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("Observation ")), len(lines))
    return lines[i + 1 : min(end, lines.index("Pith citing papers"))]


def _notes(block: list[str]) -> list[str]:
    return [line for line in block if line.startswith(("Note: ", "The ledger's own resolution: "))]


@pytest.mark.process
def test_each_contradiction_of_the_source_is_said_beside_its_lines(
    new_db: NewDb, fixture_bytes: bytes, fixture_record: dict[str, Any]
) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(fixture_bytes)
    # a person resolves two references the source linked yet left unresolved (33, 17) ...
    for ref, arxiv_id in ((33, "1909.08053"), (17, "1412.6980")):
        resolve_by_person(
            ledger, _oid(fixture_record, ref), choice("librarian", arxiv_id=arxiv_id), ledger.catalogue
        )
    ledger.close()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        # ... and the source speaks again about 17, later: the page shows the source's, the ledger's beside it
        later = {"observation_id": _oid(fixture_record, 17), "status": "unresolved",
                 "resolver_source": "raw_fallback", "cited_work": None, "cited_arxiv_id": None}  # fmt: skip
        event = {"type": "resolution.observed", "observed_at": now_rfc3339(), "data": later}
        r = httpx.post(f"{server.base}/events", json={"events": [event]}, headers=AUTH)
        assert r.status_code == 201, r.text
        url = f"{server.base}/paper/{PAPER}/citation-record"
        then = httpx.get(url, params={"as_of": AS_OF}, headers=HTML)
        now = httpx.get(url, headers=HTML)
        assert then.status_code == now.status_code == 200

        lines = visible_lines(then.text)
        # the record as the source gave it: the pinned lines stay, the notes come after them
        b33 = _block(lines, _oid(fixture_record, 33))
        assert b33[0] == "This paper cites reference 33 (no title parsed)."
        assert "Resolution: unresolved; no resolver link, observed 2026-08-05T11:38:40.899514Z" in b33
        assert "As the source gave it: its resolution names no method." in b33
        assert _notes(b33) == [
            "Note: the source contradicts itself: it links this reference to arXiv:1909.08053, yet calls it "
            "unresolved, names no resolver and parsed no title. The link is the source's; no resolver of "
            "this ledger has checked it."
        ]
        b2020 = _block(lines, _oid(fixture_record, 2020))
        assert "Reference 2020" in b2020
        assert (
            "Note: the source numbered this reference 2020, which looks like a year, not a place in a list "
            "of 56 references: the source probably took the year for its number."
        ) in b2020
        b4 = _block(lines, _oid(fixture_record, 4))
        assert "Resolution: verified fuzzy; raw_fallback, observed 2026-08-05T11:38:52.308637Z" in b4
        assert _notes(b4) == [
            "Note: the “title” the source parsed looks like an author list, not a work's title; its "
            "verified fuzzy match rests on that text, so read it as doubtful."
        ]
        assert (
            "As the source gave it: raw_fallback, the source read this reference from its raw text "
            "alone, with no identifier: the title, venue and year shown are pieces of that text, not a "
            "catalogued work's." in b4
        )
        b29 = _block(lines, _oid(fixture_record, 29))
        assert _notes(b29) == [
            "Note: the “title” the source parsed looks like a venue, or holds one (a proceedings, a "
            "journal, its volume or pages), not a work's title; its verified fuzzy match rests on that "
            "text, so read it as doubtful."
        ]
        b54 = _block(lines, _oid(fixture_record, 54))
        assert (
            "Note: the “title” the source parsed looks like a web address or an identifier, not a "
            "work's title." in b54
        )
        # a reference the source resolved with a real title has no note
        assert _notes(_block(lines, _oid(fixture_record, 34))) == []
        # before the person's resolutions, the ledger had none
        assert not any(line.startswith("The ledger's own resolution") for line in lines)

        lines = visible_lines(now.text)
        b33 = _block(lines, _oid(fixture_record, 33))
        assert any(line.startswith("How it was resolved: by person librarian") for line in b33)
        assert (
            "As the source gave it: unresolved; no method named, observed 2026-08-05T11:38:40.899514Z "
            "(the ledger's resolution is shown above)."
        ) in b33
        assert _notes(b33) == []  # the page now shows the ledger's resolution, which agrees with the link
        b17 = _block(lines, _oid(fixture_record, 17))
        assert any(line.startswith("Resolution: unresolved; raw_fallback") for line in b17)
        [own] = [line for line in b17 if line.startswith("The ledger's own resolution")]
        assert re.fullmatch(
            r"The ledger's own resolution: verified (exact|fuzzy) by a person, librarian, observed \S+; "
            r"the source's, shown above, came later\. · its evidence",
            own,
        ), own
        [evidence] = [
            h for h in hrefs(now.text) if f"/observations/{_oid(fixture_record, 17)}/resolution" in h
        ]
        shown = httpx.get(server.base + evidence, headers={"Accept": "application/json"})
        assert shown.status_code == 200
        body = decode_json(shown.content)
        assert isinstance(body, dict) and isinstance(body["resolution"], dict)
        assert body["resolution"]["resolver_source"] == "person:librarian"

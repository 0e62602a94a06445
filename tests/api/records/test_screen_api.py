"""GET /screen and /screen/changes over a real socket: JSON, CSV and the page from one URL (Vary:
Accept), pages that add up to the whole, refusals naming their field, and the same bytes from a
SQLite and a PostgreSQL ledger holding the same events."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ledger.model.instants import format_as_of
from tests.api_fixtures import Server, ledger_command, running_server
from tests.conftest import NewDb
from tests.screen_scenario import PAPERS, Seeded, seeded_ledger

HTML = {"Accept": "text/html"}
ASKED = "/screen?as_of=2026-02-05"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[Server, Seeded]]:
    """A `ledger serve` over the scenario, on the backend under test."""
    from tests.conftest import on_postgresql

    if on_postgresql():
        db = request.getfixturevalue("pg_cluster").create_db()
    else:
        db = str(tmp_path_factory.mktemp("screen") / "screen.db")
    ledger, seeded = seeded_ledger(db)
    ledger.close()
    with running_server(db, env={"LEDGER_STATE_DIR": str(tmp_path_factory.mktemp("state"))}) as server:
        yield server, seeded


def _get(server: Server, path: str, **kw: Any) -> httpx.Response:
    return httpx.get(server.base + path, timeout=30, **kw)


def _lines(body: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(i["citing"]["arxiv_id"], i["reference_index"], i["notice"]["kind"]) for i in body["items"]]


@pytest.mark.process
def test_the_screen_as_json_names_the_head_and_every_seq(served: tuple[Server, Seeded]) -> None:
    server, _ = served
    r = _get(server, ASKED)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["vary"] == "Accept"
    body = r.json()
    assert _lines(body) == [("2101.00001", 4, "retraction"), ("2101.00001", 7, "correction"),
                            ("2101.00002", 0, "retraction"), ("2101.00003", 3, "correction")]  # fmt: skip
    seq, hash_ = r.headers["ledger-head"].split()
    assert body["head"] == {"tree_size": int(seq), "hash": hash_}
    first = body["items"][0]
    assert first["citing"]["title"] == PAPERS["2101.00001"]
    assert first["resolution"]["resolver_source"] == "crossref_match"
    assert first["notice"]["learned_at"] == "2026-03-02T00:00:00.000000Z"
    assert set(first["seqs"]) >= {first["resolution"]["seq"], first["notice"]["check_seq"]}
    # each link answers: the resolution's evidence and the check's event
    evidence = _get(server, first["resolution"]["evidence"])
    assert evidence.status_code == 200 and evidence.json()["resolution"]["status"] == "verified_exact"
    check = _get(server, first["notice"]["evidence"]).json()
    assert [e["seq"] for e in check["events"]] == [first["notice"]["check_seq"]]
    assert check["events"][0]["type"] == "standing.checked"


@pytest.mark.process
def test_filters_and_known_at(served: tuple[Server, Seeded]) -> None:
    server, seeded = served
    body = _get(server, "/screen?as_of=2026-03-01&kind=retraction&exact_only=true").json()
    assert _lines(body) == [("2101.00001", 4, "retraction")]
    body = _get(server, "/screen?as_of=2026-03-01&paper=arXiv:2101.00003v2").json()
    assert _lines(body) == [("2101.00003", 2, "retraction")]
    assert body["filters"]["papers"] == ["2101.00003"]
    # known at the first batch's recording: no check was known yet
    known = format_as_of(seeded.first)
    assert _get(server, f"/screen?as_of=2026-03-01&known_at={known}").json()["items"] == []
    # known at the second: the later check and the person's resolution were not
    known = format_as_of(seeded.second)
    assert len(_get(server, f"/screen?as_of=2026-03-01&known_at={known}").json()["items"]) == 4


@pytest.mark.process
def test_pages_add_up_to_the_whole(served: tuple[Server, Seeded]) -> None:
    server, _ = served
    whole = _get(server, ASKED).json()["items"]
    got, token = [], None
    while True:
        r = _get(server, ASKED + "&limit=1" + (f"&page={token}" if token else "")).json()
        assert len(r["items"]) <= 1
        got += r["items"]
        token = r["next_page"]
        if token is None:
            break
    assert got == whole


@pytest.mark.process
def test_csv_and_the_page_come_from_the_same_url(served: tuple[Server, Seeded]) -> None:
    server, _ = served
    r = _get(server, ASKED, headers={"Accept": "text/csv"})
    assert r.headers["content-type"].startswith("text/csv") and r.headers["vary"] == "Accept"
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:3] == ["change", "citing_arxiv_id", "citing_title"]
    assert [(row[1], row[3], row[13]) for row in rows[1:]] == [
        ("2101.00001", "4", "retraction"), ("2101.00001", "7", "correction"),
        ("2101.00002", "0", "retraction"), ("2101.00003", "3", "correction"),
    ]  # fmt: skip
    assert _get(server, ASKED + "&format=csv").text == r.text
    page = _get(server, ASKED, headers=HTML)
    assert page.headers["content-type"].startswith("text/html") and page.headers["vary"] == "Accept"
    assert page.text.count('<tbody class="paper"') == 3  # grouped by paper
    assert (
        "Fabricated folding energies" in page.text
        and "retraction reported by retraction_watch on 2026-01-20, notice 10.1000/retraction.9." in page.text
    )
    assert "aria-sort" in page.text or "aria-sort" in page.text


@pytest.mark.process
def test_changes_name_the_events_responsible(served: tuple[Server, Seeded]) -> None:
    server, _ = served
    r = _get(server, "/screen/changes?from=2026-02-05&to=2026-03-01")
    assert r.status_code == 200 and r.headers["vary"] == "Accept"
    body = r.json()
    assert (body["from"], body["to"]) == ("2026-02-05T23:59:59.999999Z", "2026-03-01T23:59:59.999999Z")
    got = [(i["change"], i["citing"]["arxiv_id"], i["reference_index"], i["events"]) for i in body["items"]]
    assert got == [("cleared", "2101.00001", 7, [18]), ("flagged", "2101.00003", 2, [19]),
                   ("cleared", "2101.00003", 3, [18])]  # fmt: skip
    page = _get(server, "/screen/changes?from=2026-02-05&to=2026-03-01", headers=HTML)
    assert "cleared" in page.text and "flagged" in page.text


@pytest.mark.process
@pytest.mark.parametrize(
    ("path", "status", "where", "says"),
    [
        ("/screen?as_of=yesterday", 422, "as_of", "YYYY-MM-DD"),
        ("/screen?as_of=2999-01-01", 422, "as_of", "in the future"),
        ("/screen?known_at=2026-13-01", 422, "known_at", "invalid date"),
        ("/screen?kind=retracted", 422, "kind", "no notice kind"),
        ("/screen?page=nonsense", 422, "page", "not a page token"),
        ("/screen?page=" + "A" * 3000, 422, "page", "at most 2048"),
        ("/screen?limit=0", 422, "limit", "LEDGER_SCREEN_PAGE_MAX"),
        ("/screen?limit=501", 422, "limit", "LEDGER_SCREEN_PAGE_MAX"),
        ("/screen?paper=not-an-id", 422, "paper", ""),
        ("/screen?format=xml", 422, "format", "json, csv, html"),
        ("/screen?collection=a&paper=2101.00001", 422, "collection", "not both"),
        ("/screen/changes?to=2026-03-01", 422, "from", "required"),
        ("/screen/changes?from=2026-03-02&to=2026-03-01", 422, "from", "is after to"),
        ("/screen/changes?from=soon", 422, "from", "YYYY-MM-DD"),
    ],
)
def test_refusals_name_the_field(
    served: tuple[Server, Seeded], path: str, status: int, where: str, says: str
) -> None:
    server, _ = served
    r = _get(server, path)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["details"]["where"] == where
    assert says in error["message"]
    assert _get(server, path, headers=HTML).status_code == status


@pytest.mark.process
def test_a_collection_is_screened_by_its_members_as_known_at(new_db: NewDb, tmp_path: Any) -> None:
    db = new_db()
    ledger, seeded = seeded_ledger(db)
    ledger.close()
    (tmp_path / "state").mkdir()
    env = {"LEDGER_TOKENS": "screen-token", "LEDGER_STATE_DIR": str(tmp_path / "state")}
    with running_server(db, env=env) as server:
        made = httpx.post(
            server.base + "/collections/office",
            json={"add": ["arXiv:2101.00001v1", "https://arxiv.org/abs/2101.00003"]},
            headers={"Authorization": "Bearer screen-token"},
            timeout=30,
        )
        assert made.status_code == 201, made.text
        body = _get(server, ASKED + "&collection=office").json()
        assert _lines(body) == [("2101.00001", 4, "retraction"), ("2101.00001", 7, "correction"),
                                ("2101.00003", 3, "correction")]  # fmt: skip
        assert body["filters"]["collection"] == "office"
        changes = _get(server, "/screen/changes?from=2026-02-05&to=2026-03-01&collection=office").json()
        assert {i["citing"]["arxiv_id"] for i in changes["items"]} == {"2101.00001", "2101.00003"}
        # known before the collection was made, and a collection never made: 404 naming it
        before = _get(server, ASKED + f"&collection=office&known_at={format_as_of(seeded.second)}")
        assert before.status_code == 404
        assert "no collection 'office' known at" in before.json()["error"]["message"]
        never = _get(server, ASKED + "&collection=nobody")
        assert never.status_code == 404 and "no collection 'nobody'" in never.json()["error"]["message"]


@pytest.mark.process
def test_an_answer_carries_its_heads_checkpoint_and_a_page_comes_as_a_bundle(
    served: tuple[Server, Seeded], tmp_path: Any
) -> None:
    server, _ = served
    body = _get(server, ASKED).json()
    key = _get(server, "/checkpoint/key").text.strip()
    origin, size = body["checkpoint"].split("\n")[:2]
    assert int(size) == body["head"]["tree_size"] and key.startswith(origin + "+")
    r = _get(server, ASKED + "&bundle=true")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    (tmp_path / "screen.bundle.json").write_bytes(r.content)
    (tmp_path / "pinned.vkey").write_text(key)
    checked = subprocess.run(
        [*ledger_command(), "check-bundle", "screen.bundle.json", "--key", "pinned.vkey"],
        cwd=tmp_path, capture_output=True, text=True, check=False, env={"PATH": os.environ["PATH"]},
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith(f"OK: a screen as of {body['as_of']}, computed at tree size {size}")
    assert f"each of its {len(body['items'])} row(s)" in checked.stdout
    page = _get(server, ASKED, headers=HTML).text
    assert "The signed checkpoint of this head" in page and "bundle=true" in page


@pytest.mark.process
def test_sqlite_and_postgresql_answer_the_same_bytes(new_db: NewDb, pg_cluster: Any, tmp_path: Any) -> None:
    """The same events (the same recorded times, so the same hashes) on both backends: the screen, its
    changes and their CSV, page by page, byte for byte."""
    answers: list[list[bytes]] = []
    for db in (str(tmp_path / "lite.db"), pg_cluster.create_db()):
        ledger, _ = seeded_ledger(db)
        ledger.close()
        state = tmp_path / f"state{len(answers)}"
        state.mkdir()
        got: list[bytes] = []
        with running_server(db, env={"LEDGER_STATE_DIR": str(state)}) as server:
            for path in (ASKED, ASKED + "&limit=2", "/screen?as_of=2026-03-01&format=csv",
                         "/screen/changes?from=2026-02-05&to=2026-03-01",
                         "/screen/changes?from=2026-01-01&to=2026-03-01&limit=1&format=csv"):  # fmt: skip
                r = _get(server, path)
                assert r.status_code == 200
                got.append(_unsigned(r.content))
                if "limit=2" in path:
                    token = json.loads(r.content)["next_page"]
                    got.append(_unsigned(_get(server, f"{path}&page={token}").content))
        answers.append(got)
    assert answers[0] == answers[1]


def _unsigned(body: bytes) -> bytes:
    """A JSON answer less its signed checkpoint, which is each ledger's own key's (CSV as it is)."""
    if not body.startswith(b"{"):
        return body
    answer = json.loads(body)
    assert answer.pop("checkpoint").split("\n")[1] == str(answer["head"]["tree_size"])
    return json.dumps(answer, sort_keys=True).encode()


@pytest.mark.process
def test_the_page_cap_is_a_setting(new_db: NewDb, tmp_path: Any) -> None:
    """LEDGER_SCREEN_PAGE_MAX=2: a page holds 2 lines by default, and 3 asked for is refused naming it."""
    db = new_db()
    ledger, _ = seeded_ledger(db)
    ledger.close()
    env = {"LEDGER_SCREEN_PAGE_MAX": "2", "LEDGER_STATE_DIR": str(tmp_path)}
    with running_server(db, env=env) as server:
        body = _get(server, ASKED).json()
        assert len(body["items"]) == 2 and body["next_page"] is not None
        r = _get(server, ASKED + "&limit=3")
        assert r.status_code == 422 and r.json()["error"]["details"]["where"] == "limit"
        assert "1..2 (the page cap, set by LEDGER_SCREEN_PAGE_MAX)" in r.json()["error"]["message"]

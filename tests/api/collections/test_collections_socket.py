"""Collections over a real `ledger serve` and real sockets (api/collections/routes.py): changed behind a
write token (recorded as its writer), read as known at any instant, refused naming the field; and a
watch on a collection alerting, by its feed and its webhook, for the works its members cite."""

from __future__ import annotations

import hashlib
import http.server
import threading
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from standardwebhooks import Webhook

from cli.main import main
from ledger.model.codec import event_to_dict
from ledger.model.instants import format_recorded, parse_instant
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.factories import check, citation, notice, oid_of, paper, work
from tests.waiting import wait_until

TOKEN = "collections-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
P1, P2, P3 = "2101.00001", "2101.00002", "2101.00003"
SECRET = "whsec_" + "Y29sbGVjdGlvbi13YXRjaC1zZWNyZXQx"  # base64 of 24 bytes
NOW = "2026-11-01T00:00:00Z"


def _cli(db: str, *args: str) -> str:
    done = CliRunner().invoke(main, [*args, "--db", db])
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.mark.process
def test_a_collection_is_changed_over_http_read_as_known_at_and_its_writer_recorded(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        client = httpx.Client(base_url=server.base, headers=AUTH, timeout=30)
        made = client.post(
            "/collections/office", json={"add": [f"arXiv:{P1}v2", f"https://arxiv.org/abs/{P2}"]}
        )
        assert made.status_code == 201, made.text
        first = made.json()
        assert (first["name"], first["add"], first["remove"], first["members"]) == ("office", [P1, P2], [], 2)
        assert made.headers["Ledger-Head"].startswith(f"{first['event']['seq']} ")
        removed = client.post("/collections/office", json={"remove": [P1]})
        assert removed.status_code == 201 and removed.json()["members"] == 1
        second = removed.json()["event"]["seq"]

        assert client.get("/collections").json() == {"collections": [{"name": "office", "members": 1}],
                                                     "known_at": None}  # fmt: skip
        read = httpx.get(f"{server.base}/collections/office")  # a read needs no token
        assert read.headers["Ledger-Head"].startswith(f"{second} ")  # the head it was read at
        now = read.json()
        assert (now["members"], now["total"], now["next"]) == ([P2], 1, None)
        stored = client.get("/evidence", params={"after": 0}).json()["events"]
        assert [(e["type"], e["stream"], e["stream_version"]) for e in stored] == [
            ("collection.changed", "collection:office", 1),
            ("collection.changed", "collection:office", 2),
        ]
        at_first = stored[0]["recorded_at"]
        then = client.get("/collections/office", params={"known_at": at_first}).json()
        assert then["members"] == [P1, P2] and then["known_at"] == format_recorded(parse_instant(at_first))
        before = format_recorded(parse_instant(at_first) - 1)
        never = client.get("/collections/office", params={"known_at": before})
        assert never.status_code == 404 and never.json()["error"]["code"] == "not_found"
        assert client.get("/collections", params={"known_at": before}).json()["collections"] == []
        # a large collection is read a page of 1,000 at a time
        many = [f"2102.{i:05d}" for i in range(1001)]
        assert client.post("/collections/big", json={"add": many}).json()["members"] == 1001
        page = client.get("/collections/big").json()
        assert (page["members"], page["total"], page["next"]) == (many[:1000], 1001, many[999])
        rest = client.get("/collections/big", params={"after": page["next"]}).json()
        assert (rest["members"], rest["next"]) == (many[1000:], None)
        # the CLI reads the same ledger, as known at the same instant
        assert _cli(db, "collection", "list", "office", "--known-at", at_first).split() == [P1, P2]
        assert _cli(db, "collection", "list").split() == [
            "big",
            "1001",
            "paper(s)",
            "office",
            "1",
            "paper(s)",
        ]
        client.close()
    ledger = Ledger(db)
    sha = hashlib.sha256(TOKEN.encode()).hexdigest()
    for seq in (first["event"]["seq"], second, second + 1):
        writer = ledger.store.writers.writer_of(seq)
        assert writer is not None and (writer.writer, writer.via) == (
            f"token:{sha}",
            "POST /collections/{name}",
        )
    assert ledger.verify().ok
    ledger.close()


@pytest.mark.process
def test_a_bad_change_is_a_4xx_naming_the_field_and_nothing_is_written(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_COLLECTION_MAX_IDS": "3", "LEDGER_COLLECTION_MAX_NAME": "10"}
    cases: list[tuple[str, Any, int, str, str]] = [
        ("/collections/office", {"add": [P1, "nope"]}, 422, "add[1]", "bad arXiv id"),
        ("/collections/office", {"add": [P1], "remove": [f"arXiv:{P1}"]}, 422, "remove", "both"),
        ("/collections/office", {"add": [P1, P2, P3, "2101.00004"]}, 422, "add", "LEDGER_COLLECTION_MAX_IDS"),
        ("/collections/office", {"add": []}, 422, "add", "at least one"),
        ("/collections/office", {"members": [P1]}, 422, "members", "unknown field"),
        ("/collections/office", [P1], 422, "$", "JSON object"),
        ("/collections/office", {"add": P1}, 422, "add", "a list"),
        ("/collections/a%20b", {"add": [P1]}, 422, "name", "bad collection name"),
        ("/collections/far-too-long-a-name", {"add": [P1]}, 422, "name", "LEDGER_COLLECTION_MAX_NAME"),
        ("/collections/office", {"remove": [P1]}, 404, "", "no collection 'office'"),
    ]
    with running_server(db, env=env, args=["--no-samples"]) as server:
        client = httpx.Client(base_url=server.base, timeout=30)
        unauthorised = client.post("/collections/office", json={"add": [P1]})
        assert unauthorised.status_code == 401
        for path, body, status, where, why in cases:
            answer = client.post(path, json=body, headers=AUTH)
            assert answer.status_code == status, (path, body, answer.text)
            error = answer.json()["error"]
            assert why in error["message"], (body, error)
            if where:
                assert error["details"]["where"] == where, (body, error)
        bad_instant = client.get("/collections/office", params={"known_at": "yesterday"})
        assert bad_instant.status_code == 422 and "known_at" in bad_instant.json()["error"]["message"]
        bad_name = client.get("/collections/a%20b")
        assert bad_name.status_code == 422 and bad_name.json()["error"]["details"]["where"] == "name"
        assert client.get("/evidence").json()["events"] == []  # nothing was written
        client.close()


class _Receiver:
    """A webhook receiver on 127.0.0.1 that takes every delivery (200) and keeps it."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self) -> list[dict[str, Any]]:
        """Each delivery verified under the watch's secret, as JSON."""
        with self.lock:
            got = list(self.got)
        return [Webhook(SECRET).verify(body, headers) for headers, body in got]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _post_events(client: httpx.Client, events: list[Any]) -> None:
    done = client.post("/events", json={"events": [event_to_dict(e) for e in events]})
    assert done.status_code == 201, done.text


@pytest.mark.process
def test_a_collection_watch_alerts_for_its_members_by_feed_and_webhook(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    receiver = _Receiver()
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_WEBHOOK_ALLOW": "127.0.0.1", "LEDGER_WEBHOOK_BACKOFF": "0.2"}
    try:
        with running_server(db, env=env, args=["--no-samples"]) as server:
            client = httpx.Client(base_url=server.base, headers=AUTH, timeout=30)
            events = []
            for i, p in enumerate((P1, P2), 1):
                events += [
                    paper(p, NOW),
                    citation(oid_of(i), p, NOW, 0, work(f"w-{i}", NOW, title=f"Work {i}")),
                ]
            _post_events(client, events)
            assert client.post("/collections/office", json={"add": [P1]}).status_code == 201
            missing = client.post("/watches", json={"collection": "nobody"})
            assert (
                missing.status_code == 404 and "no collection 'nobody'" in missing.json()["error"]["message"]
            )
            made = client.post("/watches", json={"collection": "office", "callback_url": receiver.url,
                                                 "secret": SECRET})  # fmt: skip
            assert made.status_code == 201, made.text
            watch = made.json()
            assert watch["kind"] == "collection" and watch["collection"] == "office"
            assert watch["works_covered"] == ["w-1"]
            _post_events(client, [check("crossref", NOW, None, [notice("w-1"), notice("w-2", "correction")])])

            def alerts() -> list[dict[str, Any]]:
                return list(client.get(f"/watches/{watch['id']}/alerts").json()["alerts"])

            first = wait_until(lambda: alerts() or None, "the member's alert raised")
            assert [(a["work"]["work_id"], a["notice"]["kind"]) for a in first] == [("w-1", "retraction")]
            assert first[0]["citing"][0]["arxiv_id"] == P1
            # P2 joins: the notice its work holds already is raised now, and delivered
            assert client.post("/collections/office", json={"add": [P2]}).status_code == 201

            def two() -> list[dict[str, Any]] | None:
                got = alerts()
                return got if len(got) == 2 else None

            both = wait_until(two, "the joining member's alert")
            assert both[1]["work"]["work_id"] == "w-2" and both[1]["citing"][0]["arxiv_id"] == P2

            def sent() -> list[dict[str, Any]] | None:
                got = receiver.bodies()
                return got if len(got) == 2 else None

            delivered = wait_until(sent, "both alerts delivered", 60)
            assert sorted(d["work"]["work_id"] for d in delivered) == ["w-1", "w-2"]
            assert all(
                d["watch"] == {"id": watch["id"], "kind": "collection", "target": "office"} for d in delivered
            )
            client.close()
    finally:
        receiver.close()


@pytest.mark.process
def test_a_change_is_charged_by_the_rate_limit(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    # one saved up, then one per 100 s: the second goes in on credit, the third waits
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_RATE_LIMIT": "0.01", "LEDGER_RATE_BURST": "1"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        client = httpx.Client(base_url=server.base, headers=AUTH, timeout=30)
        answers = [client.post("/collections/office", json={"add": [p]}) for p in (P1, P2, P3)]
        assert answers[-1].status_code == 429, [x.status_code for x in answers]
        assert answers[-1].json()["error"]["code"] == "rate_limited" and answers[-1].headers["retry-after"]
        members = client.get("/collections/office").json()["members"]
        assert len(members) == sum(x.status_code == 201 for x in answers) <= 2
        client.close()

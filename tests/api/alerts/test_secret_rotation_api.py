"""POST /watches/{id}/secret over a real `ledger serve` (api/watches.py): the owner rotates a watch's
webhook secret in place; the held alerts keep their webhook-ids and reach a receiver that took the
new secret, signed so that one still holding the old secret verifies too (`standardwebhooks`)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from ledger.model.instants import parse_ts
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.service.alerts.test_alerts import RW
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger
from tests.waiting import wait_until

A, B = "rotation-token-a", "rotation-token-b"
OLD = "whsec_" + "b2xkLXNlY3JldC1vbGQtc2VjcmV0LTEy"  # base64 of 24 bytes
ENV = {"LEDGER_TOKENS": f"{A},{B}", "LEDGER_WEBHOOK_ALLOW": "127.0.0.1", "LEDGER_WEBHOOK_BACKOFF": "0.2"}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _verifies(secret: str, headers: dict[str, str], body: bytes) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


class _Switching:
    """A receiver on 127.0.0.1 that answers 200 only to deliveries its current secret verifies (500
    before it has one): one that switched to the new secret as soon as it was told it."""

    def __init__(self) -> None:
        import http.server

        self.secret: str | None = None
        self.got: list[tuple[dict[str, str], bytes, int]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with outer.lock:
                    secret = outer.secret
                status = 200 if secret is not None and _verifies(secret, headers, body) else 500
                with outer.lock:
                    outer.got.append((headers, body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self) -> list[tuple[dict[str, str], bytes, int]]:
        with self.lock:
            return list(self.got)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.process
def test_the_owner_rotates_in_place_and_held_alerts_keep_their_webhook_ids(new_db: NewDb) -> None:
    db = new_db("rotation.db")
    ledger = sample_ledger(db)
    ledger.close()
    receiver = _Switching()
    try:
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
            b = httpx.Client(base_url=server.base, headers=_auth(B), timeout=30)
            done = a.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW,
                          headers={"Content-Type": "text/csv"})  # fmt: skip
            assert done.status_code == 201, done.text
            made = a.post("/watches", json={"arxiv_id": CITING, "callback_url": receiver.url, "secret": OLD})
            assert made.status_code == 201, made.text
            watch_id = made.json()["id"]
            alerts = a.get(f"/watches/{watch_id}/alerts").json()["alerts"]
            assert alerts and all(x["held_before_watch"] for x in alerts)
            wait_until(lambda: len(receiver.seen()) >= 2, "the held alerts tried and refused")
            before = receiver.seen()

            theirs = b.post(f"/watches/{watch_id}/secret", json={})
            assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "not_found"
            bad = a.post(f"/watches/{watch_id}/secret", json={"secret": "whsec_not base64!"})
            assert bad.status_code == 422 and bad.json()["error"]["details"]["where"] == "secret"
            rotated = a.post(f"/watches/{watch_id}/secret", content=b"")
            assert rotated.status_code == 200, rotated.text
            answer = rotated.json()
            new = answer["secret"]
            assert answer["id"] == watch_id and new.startswith("whsec_") and answer["old_secret_valid_until"]
            with receiver.lock:
                receiver.secret = new  # the receiver takes the new secret at once

            ids = {x["id"] for x in alerts}
            wait_until(lambda: {h["webhook-id"] for h, _, s in receiver.seen() if s == 200} >= ids,
                       "every held alert delivered under the new secret", 60)  # fmt: skip
            shown = a.get(f"/watches/{watch_id}").json()
            again = a.get(f"/watches/{watch_id}/alerts").json()["alerts"]
            a.close()
            b.close()
        assert shown["id"] == watch_id and "secret" not in shown  # told once, in the rotation's answer
        assert again == alerts  # the watch and its alerts as they were
        # the alerts tried before the rotation are the ones delivered after it, under the same ids
        assert {h["webhook-id"] for h, _, _ in before} <= ids
        assert all(_verifies(OLD, h, body) for h, body, _ in before)
        delivered = [(h, body) for h, body, s in receiver.seen() if s == 200]
        assert sorted(h["webhook-id"] for h, _ in delivered) == sorted(ids)  # each once
        for headers, body in delivered:
            assert json.loads(body)["id"] == headers["webhook-id"]
            assert _verifies(new, headers, body) and _verifies(OLD, headers, body)  # within the grace
            assert len(headers["webhook-signature"].split(" ")) == 2
    finally:
        receiver.close()


@pytest.mark.process
def test_the_grace_is_a_setting_and_a_rotation_is_a_write(new_db: NewDb) -> None:
    db = new_db("grace.db")
    sample_ledger(db).close()
    env = {**ENV, "LEDGER_WEBHOOK_SECRET_GRACE": "3600"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
        made = a.post("/watches", json={"arxiv_id": CITING, "callback_url": "https://hooks.example/h"})
        watch_id = made.json()["id"]
        given = a.post(f"/watches/{watch_id}/secret", json={"secret": "s3cret"})
        assert given.status_code == 200 and "secret" not in given.json()  # a secret given is not echoed
        until = given.json()["old_secret_valid_until"]
        quiet = a.post("/watches", json={"works": ["doi:10.1000/x"]}).json()["id"]
        none = a.post(f"/watches/{quiet}/secret", json={})
        assert none.status_code == 409 and "no callback_url" in none.json()["error"]["message"]
        anonymous = httpx.post(f"{server.base}/watches/{watch_id}/secret", json={}, timeout=30)
        assert anonymous.status_code == 401
        a.close()
    # an hour from the rotation (made moments after the watch), not the default day: the setting counts
    hours = (parse_ts(until) - parse_ts(made.json()["created_at"])) / 3.6e9
    assert 0.95 < hours < 1.05


HOSTILE: list[tuple[str, bytes, int]] = [
    ("not-json", b"not json", 422),
    ("a-list", b"[]", 422),
    ("null", b"null", 422),
    ("nul-in-secret", b'{"secret": "a\\u0000b"}', 422),
    ("lone-surrogate", b'{"secret": "\\ud800"}', 422),
    ("huge-number", b'{"secret": 1e400}', 422),
    ("repeated-key", b'{"secret": "s", "secret": "t"}', 422),
    ("long-secret", b'{"secret": "' + b"x" * 257 + b'"}', 422),
    ("empty-whsec", b'{"secret": "whsec_"}', 422),
    ("deep-nesting", b"[" * 100_000 + b"]" * 100_000, 422),
    ("over-the-body-limit", b'{"secret": "' + b"x" * 300_000 + b'"}', 413),
]


@pytest.mark.process
def test_a_hostile_rotation_is_a_4xx_and_changes_nothing(new_db: NewDb) -> None:
    db = new_db("hostile.db")
    sample_ledger(db).close()
    with running_server(db, env=ENV, args=["--no-samples"]) as server:
        a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
        made = a.post("/watches", json={"arxiv_id": CITING, "callback_url": "https://hooks.example/h"})
        watch_id = made.json()["id"]
        for case, body, status in HOSTILE:
            answer = a.post(
                f"/watches/{watch_id}/secret", content=body, headers={"Content-Type": "application/json"}
            )
            assert answer.status_code == status, (case, answer.text[:300])
            assert answer.json()["error"]["code"], case
        for bad_id in ("x" * 65, "a%00b", "%ED%A0%80"):
            answer = a.post(f"/watches/{bad_id}/secret", json={})
            assert answer.status_code in (404, 422), (bad_id, answer.text[:300])
        ledger = Ledger(db)
        stored = ledger.store.alerts.watch(watch_id)
        assert stored is not None and stored.old_secret is None and stored.secret == made.json()["secret"]
        # eight at once: each is one statement, so the last two made are the two that sign
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: a.post(f"/watches/{watch_id}/secret", json={}), range(8)))
        assert [x.status_code for x in answers] == [200] * 8
        handed = {x.json()["secret"] for x in answers}
        stored = ledger.store.alerts.watch(watch_id)
        assert stored is not None and len(handed) == 8
        assert stored.secret in handed and stored.old_secret in handed
        assert stored.secret != stored.old_secret
        ledger.close()
        a.close()

"""Rotating a watch's webhook secret in place (service/alerts.py rotate_secret, service/webhooks.py):
the watch, its alerts, their webhook-ids and its pending deliveries stay; deliveries are signed under
both secrets until the grace ends, then under the new one alone. Receivers are real sockets on
127.0.0.1 verifying with the `standardwebhooks` library; the clock of a rotation is injected, never
waited for."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from api.alerts.webhooks import sender
from cli.main import main
from ledger.model.errors import Conflict, InvalidEvent, NotFound
from ledger.model.instants import SYSTEM_CLOCK, format_recorded
from ledger.storage.backend import is_pg_url
from ledger.storage.state.alerts import Watch
from service.alerts import alerts as al
from service.alerts import webhooks as wh
from service.alerts.address_policy import AddressPolicy
from service.alerts.secrets import SECRET_GRACE_S, new_secret
from service.alerts.watch_spec import parse_rotation, parse_watch
from service.alerts.watches import rotate_secret
from service.ledger import Ledger
from service.sources import SourceFile, ingest
from tests.conftest import NewDb
from tests.old_layout import build_old_ledger, version_before
from tests.service.alerts.test_alerts import RW
from tests.service.alerts.test_webhooks import _due_now, _Receiver
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger

ALLOW = ["127.0.0.1"]
OWNER = "a" * 64  # a token's sha256, as the API passes it


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver([])
    yield r
    r.close()


def _held(new_db: NewDb, url: str, secret: str, db: str | None = None) -> tuple[Ledger, Watch]:
    """A ledger whose notices were held before the watch was made: its alerts are held, due now."""
    ledger = sample_ledger(db or new_db("r.db"))
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))
    spec = parse_watch({"arxiv_id": CITING, "callback_url": url, "secret": secret}, ALLOW)
    watch, _ = al.add_watch(ledger.store, ledger.clock, spec, OWNER)
    return ledger, watch


def _deliver(ledger: Ledger) -> int:
    return wh.deliver_due(ledger.store, ledger.clock, sender(AddressPolicy(ALLOW)))


def _verifies(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Whether a Standard Webhooks receiver holding `secret` takes this delivery."""
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


def _signatures(headers: dict[str, str]) -> list[str]:
    return headers["webhook-signature"].split(" ")


def test_a_held_alert_keeps_its_webhook_id_and_verifies_under_both_secrets_in_the_grace(
    new_db: NewDb, receiver: _Receiver
) -> None:
    old = new_secret()
    ledger, watch = _held(new_db, receiver.url, old)
    receiver.statuses = [500]
    assert _deliver(ledger) == 1  # one attempt per watch at a time: the first held alert fails
    ((first_headers, first_body),) = receiver.got
    assert _verifies(old, first_headers, first_body) and len(_signatures(first_headers)) == 1
    alerts_before = ledger.store.alerts.alerts(watch.id)
    depth = ledger.store.alerts.outbox_depth()

    secret, made = parse_rotation({})
    rotated = rotate_secret(ledger.store, ledger.clock, watch.id, secret, made, SECRET_GRACE_S, OWNER)

    assert made and secret.startswith("whsec_") and secret != old
    assert rotated.watch.id == watch.id and rotated.watch.secret == secret
    assert rotated.watch.old_secret == old and rotated.old_until_us == rotated.watch.old_secret_until_us
    assert ledger.store.alerts.alerts(watch.id) == alerts_before  # the alerts, their ids and bodies
    assert ledger.store.alerts.outbox_depth() == depth  # nothing pending was dropped
    _due_now(ledger)
    while _deliver(ledger):
        pass
    after = receiver.got[1:]
    assert len(after) == len(alerts_before)  # each alert delivered once more, the failed one again
    assert after[0][0]["webhook-id"] == first_headers["webhook-id"] == alerts_before[0].id
    assert {h["webhook-id"] for h, _ in after} == {a.id for a in alerts_before}
    for headers, body in after:
        assert len(_signatures(headers)) == 2
        assert _verifies(secret, headers, body), "a receiver holding the new secret"
        assert _verifies(old, headers, body), "a receiver still holding the old one, in the grace"
        assert headers["ledger-signature"] == wh.signature(secret, body)
    tries = ledger.store.alerts.deliveries(watch.id)
    assert [(d.alert_n, d.status) for d in tries[:2]] == [
        (alerts_before[0].n, 500),
        (alerts_before[0].n, 200),
    ]
    ledger.close()


def test_after_the_grace_the_old_secret_no_longer_verifies(new_db: NewDb, receiver: _Receiver) -> None:
    old = new_secret()
    ledger, watch = _held(new_db, receiver.url, old)
    secret = new_secret()
    # rotated a grace and a microsecond ago: the injected clock, not a wait
    at = SYSTEM_CLOCK.now_us() - int(SECRET_GRACE_S * 1e6) - 1
    rotated = rotate_secret(
        ledger.store, ledger.clock, watch.id, secret, False, SECRET_GRACE_S, OWNER, at_us=at
    )
    assert rotated.old_until_us < SYSTEM_CLOCK.now_us()
    assert _deliver(ledger) == 1
    ((headers, body),) = receiver.got
    assert len(_signatures(headers)) == 1
    assert _verifies(secret, headers, body)
    assert not _verifies(old, headers, body)
    with pytest.raises(WebhookVerificationError, match="No matching signature found"):
        Webhook(old).verify(body, headers)
    dropped = ledger.store.alerts.watch(watch.id)
    assert dropped is not None and (dropped.secret, dropped.old_secret, dropped.old_secret_until_us) == (
        secret,
        None,
        None,
    )
    ledger.close()


@pytest.mark.parametrize(("offset_us", "both"), [(-1, True), (0, False), (1, False), (-60_000_000, True)])
def test_the_old_secret_signs_exactly_until_the_grace_ends(new_db: NewDb, offset_us: int, both: bool) -> None:
    old, secret = new_secret(), new_secret()
    ledger, watch = _held(new_db, "https://hooks.example/h", old)
    grace = 60.0  # short enough that a signature at its end is within a receiver's 5 minutes of now
    rotated = rotate_secret(ledger.store, ledger.clock, watch.id, secret, False, grace, OWNER)
    tables = ledger.store.alerts
    with tables.updating():
        (due,) = tables.take_due(SYSTEM_CLOCK.now_us(), 1_000_000, 1)
    assert (due.old_secret, due.old_until_us) == (old, rotated.old_until_us)
    body = due.body.encode()
    headers = wh.headers_for(due, body, rotated.old_until_us + offset_us)
    assert len(_signatures(headers)) == (2 if both else 1)
    assert _verifies(secret, headers, body)
    assert _verifies(old, headers, body) == both
    ledger.close()


def test_a_watch_stored_unsigned_gets_its_first_secret_by_a_rotation(
    new_db: NewDb, receiver: _Receiver
) -> None:
    ledger = sample_ledger(new_db("u.db"))
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))
    spec = parse_watch({"arxiv_id": CITING, "callback_url": receiver.url}, ALLOW)
    watch, _ = al.add_watch(
        ledger.store, ledger.clock, spec._replace(secret=None)
    )  # as before every webhook was signed
    secret = new_secret()
    rotated = rotate_secret(ledger.store, ledger.clock, watch.id, secret, False, SECRET_GRACE_S)
    assert (rotated.watch.secret, rotated.watch.old_secret) == (secret, None)
    assert _deliver(ledger) == 1
    ((headers, body),) = receiver.got
    assert len(_signatures(headers)) == 1 and _verifies(secret, headers, body)
    ledger.close()


def test_of_two_rotations_the_later_keeps_the_earlier_secret_as_its_old_one(new_db: NewDb) -> None:
    first, second, third = new_secret(), new_secret(), new_secret()
    ledger, watch = _held(new_db, "https://hooks.example/h", first)
    rotate_secret(ledger.store, ledger.clock, watch.id, second, False, SECRET_GRACE_S, OWNER)
    now = rotate_secret(ledger.store, ledger.clock, watch.id, third, False, SECRET_GRACE_S, OWNER).watch
    assert (now.secret, now.old_secret) == (third, second)
    tables = ledger.store.alerts
    with tables.updating():
        (due,) = tables.take_due(SYSTEM_CLOCK.now_us(), 1_000_000, 1)
    body = due.body.encode()
    headers = wh.headers_for(due, body, ledger.clock.now_us())
    assert [_verifies(s, headers, body) for s in (first, second, third)] == [False, True, True]
    ledger.close()


def test_only_the_owner_rotates_and_a_watch_signing_nothing_has_no_secret_to_rotate(new_db: NewDb) -> None:
    old = new_secret()
    ledger, watch = _held(new_db, "https://hooks.example/h", old)
    with pytest.raises(NotFound, match="no watch"):
        rotate_secret(ledger.store, ledger.clock, watch.id, new_secret(), True, SECRET_GRACE_S, "b" * 64)
    assert ledger.store.alerts.watch(watch.id) == watch  # untouched
    quiet, _ = al.add_watch(ledger.store, ledger.clock, parse_watch({"arxiv_id": CITING}), OWNER)
    with pytest.raises(Conflict, match="no callback_url"):
        rotate_secret(ledger.store, ledger.clock, quiet.id, new_secret(), True, SECRET_GRACE_S, OWNER)
    with ledger.store.alerts.updating():
        ledger.store.alerts.remove_watch(watch.id, format_recorded(SYSTEM_CLOCK.now_us()))
    with pytest.raises(NotFound, match="no watch"):
        rotate_secret(ledger.store, ledger.clock, watch.id, new_secret(), True, SECRET_GRACE_S, OWNER)
    ledger.close()


@pytest.mark.parametrize(
    ("body", "where", "why"),
    [
        pytest.param([], "$", "a JSON object", id="not-an-object"),
        pytest.param({"secret": 5}, "secret", "a string of 1 to 256", id="not-a-string"),
        pytest.param({"secret": ""}, "secret", "a string of 1 to 256", id="empty"),
        pytest.param({"secret": "x" * 257}, "secret", "a string of 1 to 256", id="too-long"),
        pytest.param({"secret": "whsec_not base64!"}, "secret", "whsec_ and the base64", id="bad-whsec"),
        pytest.param({"grace": 1}, "grace", "unknown field", id="unknown-field"),
    ],
)
def test_a_bad_rotation_is_refused_naming_the_field(body: Any, where: str, why: str) -> None:
    with pytest.raises(InvalidEvent, match=why) as info:
        parse_rotation(body)
    assert info.value.where == where


def test_a_rotation_given_a_secret_keeps_it_and_one_given_none_makes_one() -> None:
    assert parse_rotation({"secret": "s3cret"}) == ("s3cret", False)
    made, was_made = parse_rotation({"secret": None})
    assert was_made and made.startswith("whsec_")


def test_the_cli_rotates_any_watch_and_shows_a_made_secret_once(new_db: NewDb) -> None:
    old = new_secret()
    db = new_db("cli.db")
    ledger, watch = _held(new_db, "https://hooks.example/h", old, db)
    ledger.close()
    run = CliRunner().invoke(
        main, ["watch", "rotate-secret", watch.id, "--grace", "60", "--json", "--db", db]
    )
    assert run.exit_code == 0, run.output
    answer = json.loads(run.stdout)
    assert answer["id"] == watch.id and answer["secret"].startswith("whsec_")
    given = CliRunner().invoke(main, ["watch", "rotate-secret", watch.id, "--secret", "s3cret", "--db", db])
    assert given.exit_code == 0 and "s3cret" not in given.output and "until" in given.output
    stored = Ledger(db).store.alerts.watch(watch.id)
    assert stored is not None and (stored.secret, stored.old_secret) == ("s3cret", answer["secret"])
    missing = CliRunner().invoke(main, ["watch", "rotate-secret", "no-such-watch", "--db", db])
    assert missing.exit_code != 0 and "no watch 'no-such-watch'" in missing.output


def _old_watch(db: str, secret: str) -> None:
    """A watch stored as the layout before rotations kept it."""
    row = (
        "old-watch",
        "paper",
        CITING,
        "https://hooks.example/h",
        secret,
        "2026-01-01T00:00:00Z",
        0,
        None,
        None,
    )
    sql = (
        "INSERT INTO watches (id, kind, target, callback_url, secret, created_at, created_seq, removed_at, "
        "owner) VALUES "
    )
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql + "(%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
        return
    lite = sqlite3.connect(db)
    with lite:
        lite.execute(sql + "(?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    lite.close()


def test_a_ledger_from_before_rotations_keeps_its_watches_secrets_and_rotates_them(new_db: NewDb) -> None:
    source = Ledger(new_db("source.db"))
    old_db = new_db("old.db")
    build_old_ledger(old_db, version_before(old_db, "secret_rotation"), source)
    source.close()
    _old_watch(old_db, "s3cret")
    upgraded = Ledger(old_db)
    try:
        kept = upgraded.store.alerts.watch("old-watch")
        assert kept is not None and (kept.secret, kept.old_secret, kept.old_secret_until_us) == (
            "s3cret",
            None,
            None,
        )
        secret = new_secret()
        rotated = rotate_secret(upgraded.store, upgraded.clock, "old-watch", secret, True, SECRET_GRACE_S)
        assert (rotated.watch.secret, rotated.watch.old_secret) == (secret, "s3cret")
    finally:
        upgraded.close()

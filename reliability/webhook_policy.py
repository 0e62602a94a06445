"""Two webhook figures: what a host named in LEDGER_WEBHOOK_ALLOW may be made to reach, and what
rotating a watch's secret costs its held alerts.

The first asks the address policy about a name listed that resolves to loopback, link-local and
cloud metadata addresses (and their embedded forms), then to the private ranges. The second makes a
watch over held alerts whose first delivery is refused, rotates its secret (in place where the code
can; by deleting the watch and making it again where it cannot), delivers what is due and counts the
deliveries made under a webhook-id the receiver had not been given before. No socket is opened.

    .venv/bin/python -m reliability.webhook_policy
"""

from __future__ import annotations

import ipaddress
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ledger.model.instants import SYSTEM_CLOCK, format_recorded
from service.alerts import alerts as al
from service.alerts import webhooks as wh
from service.alerts.address_policy import AddressPolicy
from service.alerts.secrets import new_secret
from service.alerts.watch_spec import parse_rotation, parse_watch
from service.alerts.watches import rotate_secret
from service.sources import SourceFile, ingest
from tests.service.alerts.test_alerts import RW
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger

NEVER = ["169.254.169.254", "169.254.1.1", "127.0.0.1", "127.1.2.3", "fe80::1", "::1", "::ffff:127.0.0.1",
         "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200", "0.0.0.0",
         "64:ff9b::a9fe:a9fe"]  # fmt: skip
PRIVATE = ["10.0.0.5", "172.16.0.1", "192.168.1.1", "100.64.0.1", "fd12:3456::1", "::ffff:10.0.0.5"]


class _Script:
    """A Send that refuses until told otherwise, keeping the headers of every POST."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self.ok = False

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str]) -> wh.Sent:
        self.headers.append(dict(headers))
        return wh.Sent(200 if self.ok else 500, "203.0.113.7", None)


def allow_list() -> None:
    """Print how many of the never-by-name addresses, and of the private ones, a listed name reaches."""
    policy = AddressPolicy(["hooks.internal"])
    opened = [a for a in NEVER if policy.refused("hooks.internal", ipaddress.ip_address(a)) is None]
    private = sum(policy.refused("hooks.internal", ipaddress.ip_address(a)) is None for a in PRIVATE)
    print(
        f"a name listed reaches {len(opened)} of {len(NEVER)} loopback/link-local/metadata addresses {opened}"
    )
    print(f"a name listed reaches {private} of {len(PRIVATE)} private addresses")


def rotation(directory: Path) -> None:
    """Print the deliveries a rotation causes, and how many carry a webhook-id never given before."""
    ledger = sample_ledger(directory / "rotation.db")
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))
    spec = parse_watch(
        {"arxiv_id": CITING, "callback_url": "https://hooks.example/h", "secret": new_secret()}
    )
    watch, _ = al.add_watch(ledger.store, ledger.clock, spec)
    send = _Script()
    wh.deliver_due(ledger.store, ledger.clock, send)  # the first held alert is refused: all stay pending
    held = {a.id for a in ledger.store.alerts.alerts(watch.id)}
    send.ok = True
    if hasattr(al, "rotate_secret"):
        how = "rotated in place"
        secret, made = parse_rotation({})
        rotate_secret(ledger.store, ledger.clock, watch.id, secret, made, 86_400.0)
    else:
        how = "deleted and made again"
        with ledger.store.alerts.updating():
            ledger.store.alerts.remove_watch(watch.id, format_recorded(SYSTEM_CLOCK.now_us()))
        al.add_watch(ledger.store, ledger.clock, spec._replace(secret=new_secret()))
    with ledger.store.alerts.updating():  # due now, as if the backoff had passed
        ledger.store.alerts._q("UPDATE outbox SET next_us = 0 WHERE state = 'pending'")
    while wh.deliver_due(ledger.store, ledger.clock, send):
        pass
    after = [h["webhook-id"] for h in send.headers[1:]]
    print(f"secret {how}: {len(held)} held alerts, {len(after)} deliveries after it, "
          f"{len(set(after) - held)} under a new webhook-id")  # fmt: skip
    ledger.close()


def main() -> None:
    """Print both figures."""
    allow_list()
    with tempfile.TemporaryDirectory(prefix="webhook-policy-") as directory:
        rotation(Path(directory))


if __name__ == "__main__":
    main()

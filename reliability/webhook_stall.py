"""One bad webhook receiver next to a healthy one: how long the healthy watch's alerts take to arrive.

A `ledger serve` on a fresh SQLite ledger (the source tests' sample: seven alerts per paper watch), a
watch whose callback is bad made first (its alerts are due first), then a watch on a healthy receiver
on 127.0.0.1, then the Retraction Watch sample ingested. `--bad unicode`: a callback host with a
64-character label (getaddrinfo raises UnicodeError); `--bad trickle`: a receiver that sends its
answer one byte every `--pace` seconds. Prints when the healthy receiver had all seven and what the
bad watch's first attempt recorded.

    .venv/bin/python -m reliability.webhook_stall --bad trickle --pace 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import httpx

from reliability.server import serving
from tests.e2e.test_alerts_process import _Trickler, _watch
from tests.service.alerts.test_alerts import RW
from tests.service.alerts.test_webhooks import _Receiver
from tests.service.sources.test_sources_support import T_INGEST, sample_ledger

TOKEN = "stall-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def main() -> None:
    """Run one case and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bad", choices=["unicode", "trickle"], required=True)
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between two bytes of the trickle")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the healthy alerts")
    parser.add_argument("--timeout", help="LEDGER_WEBHOOK_TIMEOUT for the server (unset: its default)")
    args = parser.parse_args()
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_WEBHOOK_ALLOW": "127.0.0.1"}
    if args.timeout:
        env["LEDGER_WEBHOOK_TIMEOUT"] = args.timeout
    good = _Receiver([])
    slow = _Trickler(args.pace)
    bad_url = f"https://{'a' * 64}.example/hook" if args.bad == "unicode" else slow.url
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "stall.db"
        sample_ledger(db).close()
        try:
            with serving(db, env=env, args=["--no-samples"]) as server:
                bad = _watch(server.base, bad_url, timeout=60, auth=AUTH)
                _watch(server.base, good.url, timeout=60, auth=AUTH)
                start = time.monotonic()
                headers = {**AUTH, "Content-Type": "text/csv"}
                at = {"observed_at": T_INGEST}
                done = httpx.post(
                    f"{server.base}/ingest/retraction-watch", params=at, content=RW, headers=headers
                )
                assert done.status_code == 201, done.text
                while len(good.got) < 7 and time.monotonic() - start < args.wait:
                    time.sleep(0.05)
                healthy_s = time.monotonic() - start
                while True:  # looked at once at least, after the healthy wait ran out too
                    tries = httpx.get(f"{server.base}/watches/{bad['id']}/deliveries", headers=AUTH).json()
                    if tries["deliveries"] or time.monotonic() - start >= args.wait:
                        break
                    time.sleep(0.1)
                bad_s = time.monotonic() - start
                first = tries["deliveries"][0] if tries["deliveries"] else None
        finally:
            slow.close()
            good.close()
    print(f"healthy receiver: {len(good.got)} of 7 alerts, {healthy_s:.2f} s after the ingest was sent")
    if first is None:
        print(f"bad watch: no attempt settled within {args.wait:g} s")
    else:
        print(f"bad watch: first attempt settled {bad_s:.2f} s after the ingest: {first['error']!r}")


if __name__ == "__main__":
    main()

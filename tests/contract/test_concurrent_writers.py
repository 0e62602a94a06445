"""Several writer processes at once: seq stays gapless, in commit order, and the chain unforked."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from ledger.storage.backend import is_pg_url
from service.ledger import Ledger

WORKERS = 4
BATCHES = 40

_WRITER = """
import json, sys, time
from service.ledger import Ledger
from tests.factories import measurement, ts
from tests.waiting import pause
url, n, batches, serialize = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
start = float(sys.argv[5])
ledger = Ledger(url)
if serialize == "0":
    ledger.store.serialize = False  # test-only: drop the append lock
errors = []
pause(start - time.time())  # every writer starts at the same instant
for i in range(batches):
    try:
        ledger.append([measurement("2101.00001", ts(1, n * 1000 + i), i, source=f"w{n}")])
    except Exception as e:
        errors.append(type(e).__name__)
print(json.dumps(errors))
"""


def _run_writers(url: str, serialize: bool) -> list[str]:
    Ledger(url).close()  # create the schema before the race
    start = time.time() + 2.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, str(n), str(BATCHES), "1" if serialize else "0", str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(WORKERS)
    ]
    errors: list[str] = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        errors += json.loads(out)
    return errors


def test_concurrent_writers_gapless_in_commit_order(store_url: str) -> None:
    assert _run_writers(store_url, serialize=True) == []
    ledger = Ledger(store_url)
    log = ledger.store.read_log()
    assert [e.seq for e in log] == list(range(1, WORKERS * BATCHES + 1))
    assert [e.stream_version for e in log] == list(range(1, WORKERS * BATCHES + 1))
    report = ledger.verify()
    assert report.ok and report.events_checked == WORKERS * BATCHES
    if is_pg_url(store_url):
        import psycopg

        with psycopg.connect(store_url) as conn:
            setting = conn.execute("SHOW track_commit_timestamp").fetchone()
            assert setting is not None
            if setting[0] != "on":
                pytest.skip("track_commit_timestamp is off on this server: commit order not observable")
            stamps = [
                r[0] for r in conn.execute("SELECT pg_xact_commit_timestamp(xmin) FROM events ORDER BY seq")
            ]
        assert stamps == sorted(stamps), "seq order differs from commit order"


def test_without_the_append_lock_writers_collide(pg_url: str) -> None:
    """The control: the same race with the lock dropped refuses appends (both writers took one head)."""
    errors = _run_writers(pg_url, serialize=False)
    assert errors, "no collision without the lock: the race did not happen, the test proves nothing"
    assert set(errors) <= {"UniqueViolation"}
    ledger = Ledger(pg_url)
    assert ledger.head().seq == WORKERS * BATCHES - len(errors)  # each refused append is a lost write
    assert ledger.verify().ok  # the primary key kept the chain unforked; the lock keeps writes from failing

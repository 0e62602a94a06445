"""Four writers at once (two through `ledger serve --workers 2`): nothing acknowledged is lost.

RELIABILITY_FULL=1 runs the 10k-events-per-process load of RELIABILITY.md; the default is smaller.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.paths import ROOT

if str(ROOT) not in sys.path:  # the drivers live next to the packages, not in them
    sys.path.insert(0, str(ROOT))

from reliability import concurrency  # noqa: E402
from reliability.check import LedgerRows, check_attempts  # noqa: E402
from reliability.workload import direct_post, run_client  # noqa: E402

if TYPE_CHECKING:
    from tests.conftest import NewDb

FULL = os.environ.get("RELIABILITY_FULL") == "1"


def test_four_concurrent_writers_lose_nothing_and_leak_nothing(new_db: NewDb, tmp_path: Path) -> None:
    figures = concurrency.run(
        tmp_path, 10_000 if FULL else 250, max_batch=50 if FULL else 20, db=new_db("load.db")
    )
    print(figures)
    assert figures["events"] == figures["acknowledged_events"] == 4 * (10_000 if FULL else 250)
    kinds = figures["by_kind"]
    # every kind of attempt happened, and each got its expected answer (check_attempts asserts that)
    for kind in ("normal 201", "mixed 201", "expected_ok 201", "resend 200", "stale 409", "idconflict 409"):
        assert kinds.get(kind), (kind, kinds)
    assert figures["refused_events_absent"] > 0
    assert figures["verify"].startswith("OK: ")


@pytest.fixture
def one_client_log(new_db: NewDb) -> tuple[str, list[dict]]:
    db = new_db("one.db")
    log = run_client(0, 150, direct_post(db), seed=3, max_batch=10)
    return db, log


def test_the_checker_passes_a_true_log(one_client_log) -> None:
    db, log = one_client_log
    rows = LedgerRows(db)
    rows.check_structure()
    assert check_attempts(rows, [log])["acknowledged_events"] == 150


def test_the_checker_catches_a_lost_acknowledged_event(one_client_log) -> None:
    db, log = one_client_log
    forged = copy.deepcopy(log)
    ok = next(a for a in forged if a["status"] == 201)
    ok["answer"]["events"][0]["event_id"] = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(AssertionError, match="acknowledged events missing"):
        check_attempts(LedgerRows(db), [forged])


def test_the_checker_catches_a_refused_batch_that_was_written(one_client_log) -> None:
    db, log = one_client_log
    forged = copy.deepcopy(log)
    sent_twice = {
        e
        for i, a in enumerate(forged)
        for b in forged[i + 1 :]
        for e in set(a["event_ids"]) & set(b["event_ids"])
    }
    ok = next(a for a in forged if a["kind"] == "normal" and not sent_twice & set(a["event_ids"]))
    ok["status"], ok["expect"] = 409, 409  # pretend it was refused: its events must then be absent
    with pytest.raises(AssertionError, match="events of refused batches were stored"):
        check_attempts(LedgerRows(db), [forged])


def test_the_checker_catches_an_unacknowledged_event(one_client_log) -> None:
    db, log = one_client_log
    with pytest.raises(AssertionError, match="stored that nobody was told of"):
        check_attempts(LedgerRows(db), [log[: len(log) // 2]])

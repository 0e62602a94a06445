"""`kill -9` of `ledger serve` during a write load, then a restart: nothing acknowledged is lost.

RELIABILITY_FULL=1 runs the 12 kill points of RELIABILITY.md; the default suite runs 3.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.paths import ROOT

if str(ROOT) not in sys.path:  # the drivers live next to the packages, not in them
    sys.path.insert(0, str(ROOT))

from reliability import crash  # noqa: E402

if TYPE_CHECKING:
    from tests.conftest import NewDb

FULL = os.environ.get("RELIABILITY_FULL") == "1"


def test_kill_9_during_writes_loses_no_acknowledged_event_and_leaves_no_partial_batch(
    new_db: NewDb, tmp_path: Path
) -> None:
    rounds = 12 if FULL else 3
    figures = crash.run(tmp_path, rounds, db=new_db("crash.db"))
    print(figures)
    assert figures["kills"] == rounds == len(figures["rounds"])
    # every acknowledged batch (and every in-flight one, resent after the restart) is in the database
    assert figures["final_events"] == figures["acknowledged_events"]
    assert figures["final_verify"].startswith("OK: ")
    assert all(r["verify"].startswith("OK: ") for r in figures["rounds"])
    # the kills really landed mid-load: batches were acknowledged, and some were cut off
    assert all(r["acknowledged_batches"] > 0 for r in figures["rounds"])
    assert sum(r["in_flight_batches"] for r in figures["rounds"]) > 0

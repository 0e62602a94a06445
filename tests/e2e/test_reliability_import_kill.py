"""`kill -9` of `ledger import` or of `ledger project` beside it, at random points of one import, each
resumed by the same command: every event once, the projections at the head, `ledger verify` OK and
every record byte-identical to an uninterrupted import's.

RELIABILITY_FULL=1 runs RELIABILITY.md's 10 kills of a 400,000-line file; the default suite runs 3 kills
of a 30,000-line file (batches of 250, so the writer is killed between commits).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.paths import ROOT

if str(ROOT) not in sys.path:  # the drivers live next to the packages, not in them
    sys.path.insert(0, str(ROOT))

from reliability import import_kill  # noqa: E402

if TYPE_CHECKING:
    from tests.conftest import NewDb

FULL = os.environ.get("RELIABILITY_FULL") == "1"


@pytest.mark.process
def test_kill_9_of_the_writer_or_the_projector_during_an_import_loses_and_doubles_nothing(
    new_db: NewDb, tmp_path: Path
) -> None:
    lines, kills, batch = (400_000, 10, None) if FULL else (30_000, 3, 250)
    figures = import_kill.run(
        tmp_path, lines, kills=kills, seed=1, batch_size=batch, db_a=new_db("a.db"), db_b=new_db("b.db")
    )
    print(figures)
    assert figures["failures"] == []
    # every kill landed on a running process: the writer's mid-file, one projector's before a position
    landed = [k for k in figures["kills"] if "head" in k or "head_seen" in k]
    assert len(landed) == kills
    assert {k["target"] for k in figures["kills"]} == {"writer", "projector"}
    assert any(k.get("mode") == "before-save" for k in figures["kills"])
    writers = [k for k in figures["kills"] if k["target"] == "writer"]
    assert any(k["resume_record_lines"] < lines for k in writers)  # killed with lines still to append
    assert figures["events"]["B"] == figures["events"]["B_distinct"] == figures["events"]["file_distinct"]
    # the import that ended walked what the killed ones had committed since their last walk
    distinct = figures["events"]["file_distinct"]
    assert figures["verified_point_after_import"] == {"A": distinct, "B": distinct}
    assert figures["verify"]["B"]["ok"] and figures["records_differing"] == 0
    assert figures["records_compared"] > 0

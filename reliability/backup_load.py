"""`ledger backup` of a live ledger while another process appends: the copy verifies, the writer goes on.

`python -m reliability.backup_load --events 20000` prints the figures as JSON (non-zero exit on failure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reliability.server import ROOT
from reliability.workload import direct_post, run_client
from service.ledger import Ledger
from service.ops.backup import backup


def run(workdir: Path, events: int) -> dict[str, Any]:
    """Fill a ledger with `events`, then back it up while a writer process appends more."""
    src, dest = workdir / "live.db", workdir / "copy.db"
    run_client(1, events, direct_post(str(src)), seed=5, max_batch=200)
    cmd = [
        sys.executable,
        "-m",
        "reliability.workload",
        "0",
        str(events),
        str(workdir / "w.json"),
        "--db",
        str(src),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen([*cmd, "--max-batch", "5"], cwd=ROOT, env=env)
    live = Ledger(src)
    while live.head().seq < events + 200 and writer.poll() is None:  # the writer is under way
        time.sleep(0.01)
    before = live.head().seq
    report = backup(src, dest, step_pages=16, pause=0.002)
    after = live.head().seq
    writer.wait(timeout=3600)
    assert writer.returncode == 0
    assert after > before, "the writer made no progress while the backup ran"
    assert report.verify is not None and report.verify.ok, report.verify
    assert report.restarts == 0 and before <= report.head.seq <= after
    n = report.head.seq
    assert Ledger(dest).store.read_log(0, n) == live.store.read_log(0, n)
    return {
        "events_in_copy": n,
        "pages": report.pages,
        "steps": report.steps,
        "restarts": report.restarts,
        "backup_seconds": round(report.seconds, 2),
        "writer_events_during_backup_and_verify": after - before,
        "copy_verify": f"OK: {report.verify.events_checked} events verified",
        "source_events_at_end": live.head().seq,
    }


def main() -> None:
    """Run; print the figures."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=20_000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ledger-backup-") as tmp:
        print(json.dumps(run(Path(tmp), a.events), indent=2))


if __name__ == "__main__":
    main()

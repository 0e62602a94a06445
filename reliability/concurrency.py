"""Four writers at once on one ledger: two through `ledger serve --workers 2`, two in-process.

`python -m reliability.concurrency --events 10000` (from the repository root) prints the figures as
JSON and exits non-zero if any check fails; the default suite runs the same code with fewer events.
`--db postgresql://...` runs it on an empty PostgreSQL database instead of a new SQLite file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from reliability import driver
from reliability.check import LedgerRows, check_attempts, interleaving, verify_cli
from reliability.server import ROOT, is_url, serving

TOKEN = "reliability-load-token"
HTTP_CLIENTS = 2
DIRECT_CLIENTS = 2


def run(
    workdir: Path, events: int, *, max_batch: int = 50, seed: int = 1, db: str | None = None
) -> dict[str, Any]:
    """The load on `db` (an empty ledger's URL; default: a new SQLite file in `workdir`), then every
    check; the figures of the run."""
    db = db or str(workdir / "load.db")
    go = workdir / "go"
    env = {"LEDGER_TOKENS": TOKEN}
    started = time.monotonic()
    with serving(db, env=env, workers=2, workdir=workdir) as server:
        procs = []
        for client in range(HTTP_CLIENTS + DIRECT_CLIENTS):
            out = workdir / f"client{client}.json"
            target = ["--url", server.base, "--token", TOKEN] if client < HTTP_CLIENTS else ["--db", str(db)]
            cmd = [sys.executable, "-m", "reliability.workload", str(client), str(events), str(out)]
            cmd += [*target, "--seed", str(seed), "--max-batch", str(max_batch), "--go", str(go)]
            child_env = {**os.environ, "PYTHONPATH": str(ROOT)}
            if is_url(db):  # the ledger's side files live in its state directory
                child_env["LEDGER_STATE_DIR"] = str(workdir)
            proc = subprocess.Popen(cmd, env=child_env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
            procs.append((out, proc))
        time.sleep(0.3)  # every client connected and waiting: they start together
        go.touch()
        load_started = time.monotonic()
        for _, p in procs:
            _, err = p.communicate(timeout=3600)
            assert p.returncode == 0, f"a client failed:\n{err[-3000:]}\n{server.log()[-3000:]}"
        load_seconds = time.monotonic() - load_started
    results = [json.loads(out.read_text()) for out, _ in procs]
    logs = [r["log"] for r in results]
    rows = LedgerRows(db)
    figures: dict[str, Any] = {
        "clients": f"{HTTP_CLIENTS} over HTTP (ledger serve --workers 2) + {DIRECT_CLIENTS} in-process",
        "target_events_per_client": events,
        **rows.check_structure(),
        **check_attempts(rows, logs),
    }
    writer_of = {
        item["event_id"]: r["client"]
        for r in results
        for a in r["log"]
        if a["status"] == 201
        for item in a["answer"]["events"]
        if not item["duplicate"]
    }
    figures["writer_switches_along_seq"] = interleaving(rows, writer_of)
    # they really overlapped: run one after another, the writer would change only 3 times
    assert figures["writer_switches_along_seq"] >= 4 * (HTTP_CLIENTS + DIRECT_CLIENTS), figures
    figures["verify"] = verify_cli(db, workdir)
    figures["load_seconds"] = round(load_seconds, 1)
    figures["events_per_second"] = round(figures["events"] / load_seconds)
    figures["total_seconds"] = round(time.monotonic() - started, 1)
    return figures


def main() -> None:
    """Run with the given size; print the figures."""
    options = [("events", 10_000, "new events per client"), ("max-batch", 50, None), ("seed", 1, None)]
    driver.main(__doc__, "concurrency", run, options)


if __name__ == "__main__":
    main()

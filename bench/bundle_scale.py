"""Time and peak RSS of `ledger bundle` and `ledger check-bundle` for a paper cited 100,000 times (issue 15).

    python -m bench.bundle_scale [--inbound N] [--db PATH] [--rebuild] [--runs R]

The ledger is the sample record of arXiv:2509.02480 plus N synthetic papers that each cite it once (a
paper.observed, a citation.observed and a resolution.observed verified_exact to 2509.02480 per paper),
appended in batches of 3,000 events; it is built once into bench/.data and reused. Each command then
runs as a subprocess of this (small) process, and its wall time and peak RSS (its own ru_maxrss from
wait4) are printed: `ledger bundle 2509.02480 --as-of AS_OF --out FILE`, `ledger check-bundle FILE`,
and, as the yardstick of the time target (bundle and check-bundle <= 2x), `ledger events` of the same
events: `--type citation.observed` plus `--type resolution.observed` (every citation and resolution
of the ledger: the bundle's events but for the 100 shown citing papers' snapshots and the sample's
own snapshot, checks and measurement), each written to a file as the bundle is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / ".data"
SAMPLE = ROOT / "ledger" / "samples" / "2509.02480.record.json"
PAPER = "2509.02480"
AS_OF = "2026-11-30T00:00:00Z"  # after every synthetic event, so reruns give the same bundle
BATCH_PAPERS = 1000  # 3,000 events per append
START = datetime(2026, 9, 1, tzinfo=UTC)
TARGETS = {"peak_rss_mb": 100, "time_over_events": 2.0}


def citing_id(i: int) -> str:
    """The arXiv id of synthetic citing paper i (2601.00001 onwards, 99,999 per month)."""
    return f"26{i // 99_999 + 1:02d}.{i % 99_999 + 1:05d}"


def paper_events(i: int) -> list[Any]:
    """Paper i's snapshot, its one reference (index 0) to the sample paper, and that reference resolved."""
    import uuid

    from ledger.model import events as ev

    pid = citing_id(i)
    at = START + timedelta(seconds=i)
    ts = [(at + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%fZ") for ms in (0, 1, 2)]
    oid = str(uuid.UUID(int=i + 1, version=4))
    work = ev.CitedWork(
        PAPER, "10.48550/arXiv.2509.02480", "arxiv_listing", PAPER, ts[1],
        "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training", None, None, 2025,
    )  # fmt: skip
    return [
        ev.PaperObserved(
            observed_at=ts[0],
            data=ev.PaperData(
                pid,
                f"Synthetic paper {i} citing MLP-Offload",
                "cs.DC",
                "2026-08-20T00:00:00Z",
                "2026-08-20T00:00:00Z",
                1,
            ),
        ),  # fmt: skip
        ev.CitationObserved(observed_at=ts[1], data=ev.CitationData(oid, pid, 0, "pdf_text", work)),
        ev.ResolutionObserved(
            observed_at=ts[2], data=ev.ResolutionData(oid, "verified_exact", "local_arxiv", work, PAPER)
        ),
    ]


def build(db: Path, inbound: int) -> None:
    """The sample record, then `inbound` citing papers in batches of BATCH_PAPERS papers."""
    from service.ledger import Ledger

    ledger = Ledger(db, synchronous="OFF")
    ledger.import_bytes(SAMPLE.read_bytes())
    start = time.perf_counter()
    for first in range(0, inbound, BATCH_PAPERS):
        batch = [e for i in range(first, min(first + BATCH_PAPERS, inbound)) for e in paper_events(i)]
        ledger.append(batch)
        if (first // BATCH_PAPERS) % 10 == 9:
            done = first + BATCH_PAPERS
            print(
                f"  {done} papers, head seq {ledger.head().seq}, {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    ledger.close()


def ledger_cmd(*args: str) -> list[str]:
    """The `ledger` command of this checkout and interpreter."""
    return [sys.executable, "-c", "from entry.main import main; main()", *args]


def run(
    name: str, cmd: list[str], stdout: Path | None = None, out_file: Path | None = None
) -> dict[str, Any]:
    """Run one command; its wall time, its own peak RSS (wait4's ru_maxrss) and its stderr's last line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for path in (stdout, out_file):
        if path is not None:
            path.unlink(missing_ok=True)  # freeing the last run's file is not this run's cost
    out = stdout.open("wb") if stdout else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if stdout:
        out.close()  # type: ignore[union-attr]
    code = os.waitstatus_to_exitcode(status)
    said = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    figures = {
        "command": name,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "exit": code,
        "said": said[0][:300],
    }
    print(json.dumps(figures), flush=True)
    return figures


def measure(db: Path, runs: int) -> dict[str, Any]:
    """Each command `runs` times (the best time and the highest peak RSS of the runs)."""
    work = db.parent
    bundle, events_out = work / "bundle_scale.bundle.json", work / "bundle_scale.events.ndjson"
    key = work / "bundle_scale.vkey"
    subprocess.run(ledger_cmd("key", "--db", str(db)), cwd=ROOT, check=True, stdout=key.open("wb"),
                   env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    events = [
        ledger_cmd("events", "--type", t, "--db", str(db))
        for t in ("citation.observed", "resolution.observed")
    ]
    commands = {
        "events citation.observed": (events[0], events_out, None),
        "events resolution.observed": (events[1], events_out, None),
        "bundle": (
            ledger_cmd("bundle", PAPER, "--as-of", AS_OF, "--out", str(bundle), "--db", str(db)),
            None,
            bundle,
        ),
        "check-bundle": (ledger_cmd("check-bundle", str(bundle), "--key", str(key)), None, None),
    }
    best: dict[str, dict[str, Any]] = {}
    for _ in range(runs):
        for name, (cmd, out, made) in commands.items():
            f = run(name, cmd, out, made)
            if f["exit"] != 0:
                raise SystemExit(f"{name} failed: {f['said']}")
            cur = best.get(name)
            if cur is None:
                best[name] = f
            else:
                cur["seconds"] = min(cur["seconds"], f["seconds"])
                cur["peak_rss_mb"] = max(cur["peak_rss_mb"], f["peak_rss_mb"])
    events_s = best["events citation.observed"]["seconds"] + best["events resolution.observed"]["seconds"]
    summary: dict[str, Any] = {
        "ledger_events": _head_seq(db),
        "ledger_bytes": db.stat().st_size,
        "bundle_bytes": bundle.stat().st_size,
        "bundle_events": _bundle_events(best["bundle"]["said"]),
        "events_seconds": round(events_s, 2),
        "events_peak_rss_mb": max(best[n]["peak_rss_mb"] for n in best if n.startswith("events")),
    }
    for name in ("bundle", "check-bundle"):
        f = best[name]
        ratio = f["seconds"] / events_s
        summary[name] = {
            "seconds": f["seconds"],
            "over_events": round(ratio, 2),
            "peak_rss_mb": f["peak_rss_mb"],
            "time_ok": ratio <= TARGETS["time_over_events"],
            "memory_ok": f["peak_rss_mb"] < TARGETS["peak_rss_mb"],
        }
    return summary


def _head_seq(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT max(seq) FROM events").fetchone()[0])
    finally:
        conn.close()


def _bundle_events(said: str) -> int | None:
    parts = said.split(" events,")[0].rsplit(" ", 1)
    return int(parts[-1]) if parts[-1].isdigit() else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inbound", type=int, default=100_000, help="citing papers (default 100,000)")
    p.add_argument("--db", type=Path, default=None, help="the ledger file (default bench/.data/...)")
    p.add_argument("--rebuild", action="store_true", help="build the ledger again even if it exists")
    p.add_argument("--runs", type=int, default=1, help="runs of each command (best time, highest RSS)")
    p.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    db = a.db or DATA / f"bundle_scale_{a.inbound}.db"
    if a.build_only:
        build(db, a.inbound)
        return
    if a.rebuild or not db.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", ".key", ".checkpoint"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        print(f"building {db}: the sample record + {a.inbound} citing papers", flush=True)
        # in a child, so this process stays small (a child's ru_maxrss starts at its parent's peak)
        subprocess.run([sys.executable, "-m", "bench.bundle_scale", "--build-only", "--db", str(db),
                        "--inbound", str(a.inbound)], cwd=ROOT, check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    print(json.dumps(measure(db, a.runs), indent=1))


if __name__ == "__main__":
    main()

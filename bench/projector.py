"""The write path with the projector: `ledger import` of 25,000-event files into a ledger growing to
200,000 events, this checkout beside `--before` (a checkout whose appends wrote the spans themselves).

    .venv/bin/python -m bench.projector --before DIR [--files 8] [--lines 25000] [--keep DIR]

Each import is one process under `/usr/bin/time -v` (bench/intake.py's `timed`): its CPU counts every
process it waited for (the import, its walker, and here the projector, which the CLI runs before it
exits), so a figure is the events' whole cost until the projections reach the head. The two ledgers
take the same files in turn (before, after, before, ...), so both see the same noise of the machine.
After each of this checkout's imports the bench checks that the spans' projection is at the head.
Prints one row per file and the events/s of each side over all files, and writes bench/projector.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from bench.intake import ROOT, _ledger, timed

OUT = ROOT / "bench" / "projector.json"


def make_files(work: Path, files: int, lines: int) -> list[Path]:
    """`files` NDJSON files of `lines` envelopes each, the papers of bench/synth.py in order."""
    from bench.synth import Synth
    from ledger.model.codec import event_to_dict

    encode = msgspec.json.encode
    paths = [work / f"part{i}.ndjson" for i in range(files)]
    outs = [p.open("wb") for p in paths]
    n = 0
    try:
        for _, events in Synth().events():
            for e in events:
                outs[n // lines].write(encode(event_to_dict(e)) + b"\n")
                n += 1
                if n == files * lines:
                    return paths
    finally:
        for f in outs:
            f.close()
    raise AssertionError("unreachable")


def _position(db: str) -> tuple[int, int]:
    """(the spans' position, the head) of a SQLite ledger."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        head = conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        row = conn.execute("SELECT seq FROM projections WHERE name = 'inbound_spans'").fetchone()
    return (0 if row is None else int(row[0])), int(head)


def run(before: Path, files: int, lines: int, work: Path) -> dict[str, Any]:
    """Import every file into one ledger per side, in turn; the figures of each import."""
    paths = make_files(work, files, lines)
    dbs = {who: str(work / f"{who}.db") for who in ("before", "after")}
    envs = {
        "before": {**os.environ, "PYTHONPATH": str(before)},
        "after": {**os.environ, "PYTHONPATH": str(ROOT)},
    }
    rows: list[dict[str, Any]] = []
    for i, path in enumerate(paths):
        for who in ("before", "after"):
            r = timed([*_ledger(), "import", str(path), "--db", dbs[who]], envs[who], work)
            assert r["exit"] == 0, r["tail"]
            r.update(who=who, file=i, ledger_before=i * lines, events=lines)
            if who == "after":
                position, head = _position(dbs[who])
                assert position == head, (position, head)
            rows.append(r)
            print(
                f"{who:6} file {i}: {i * lines:>7,} -> {(i + 1) * lines:>7,} events: "
                f"{lines / r['seconds']:>8,.0f} ev/s wall, {lines / r['cpu_seconds']:>8,.0f} ev/CPU-s, "
                f"peak {r['peak_rss_mb']} MB",
                flush=True,
            )
    total: dict[str, Any] = {}
    for who in ("before", "after"):
        mine = [r for r in rows if r["who"] == who]
        wall, cpu = sum(r["seconds"] for r in mine), sum(r["cpu_seconds"] for r in mine)
        last = mine[-1]
        total[who] = {
            "events_per_s": round(files * lines / wall),
            "events_per_cpu_s": round(files * lines / cpu),
            "last_file_events_per_s": round(lines / last["seconds"]),
            "last_file_events_per_cpu_s": round(lines / last["cpu_seconds"]),
        }
        print(f"{who}: {total[who]}")
    return {"files": files, "lines": lines, "rows": rows, "total": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout before the projector")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--lines", type=int, default=25_000)
    ap.add_argument("--keep", type=Path, default=None, help="work here and keep the ledgers")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-projector-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args.before.resolve(), args.files, args.lines, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()

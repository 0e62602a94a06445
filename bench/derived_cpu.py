"""`ledger verify`'s CPU, whole and each step, over the bare chain; and the projector's CPU an event.

    .venv/bin/python -m bench.derived_cpu DB [--runs 3] [--before DIR] [--projector]

Each run, for this checkout and (with `--before`) another one, in turn (interleaved):
- `ledger verify --db DB` as a process under `/usr/bin/time`: its user + system CPU;
- a whole walk in a process of its own (`verify_store`), each step's time taken in this process's CPU
  (the walk's own timer pointed at `time.process_time`), and the walk's CPU in all;
- the bare chain over the same file (bench/baselines.py: blake3 down the stored columns), in CPU;
- with `--projector`, a copy of DB whose projections (spans and counts, works-index keys, standing
  checks' rows, the screen's index) are emptied and their positions reset, then each brought to the
  head by its `advance`, in CPU.
The best run of each figure is printed as JSON, with the ratio of the walk to the bare chain in CPU.
Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_WALK = """
import json, sys, time
from ledger.storage import verify
from ledger.storage.backend import open_store
verify.perf_counter = time.process_time  # each step's time in CPU
store = open_store(sys.argv[1])
cpu = time.process_time()
report = verify.verify_store(store)
cpu = time.process_time() - cpu
assert report.ok, report.reason
print(json.dumps({"walk_cpu": cpu, **{s.name + "_cpu": s.seconds for s in report.steps}}))
"""

_BARE = """
import json, sys
from pathlib import Path
from bench.baselines import bare_chain
print(json.dumps({"bare_chain_cpu": bare_chain(Path(sys.argv[1]))["cpu_seconds"]}))
"""

_PROJECT = """
import json, sys, time
from ledger.storage import projector as pj
from ledger.storage.backend import open_store
store = open_store(sys.argv[1])
head = store.head().seq
out = {}
for p in (pj.SPAN_PROJECTION, pj.WORK_KEYS_PROJECTION, pj.CHECK_WORKS_PROJECTION, pj.SCREEN):
    cpu = time.process_time()
    p.advance(store, head)
    out["project_" + p.name + "_cpu"] = time.process_time() - cpu
print(json.dumps(out))
"""

# the projector's rows, emptied in a copy (the event and observation keys are the append's, kept)
_RESET = [
    "DELETE FROM inbound_spans",
    "DELETE FROM inbound_counts",
    "DELETE FROM screen_refs",
    "DELETE FROM screen_notices",
    *(f"DELETE FROM check_works{lv}" for lv in ("", "_recent", "_middle", "_deep")),
    *(f"DELETE FROM event_keys{lv} WHERE key LIKE 'w:%'" for lv in ("", "_recent", "_middle", "_deep")),
    "DELETE FROM projections WHERE name IN ('inbound_spans', 'work_keys', 'check_works', 'screen')",
]


def _python(checkout: Path) -> str:
    return str(checkout / ".venv" / "bin" / "python")


def _run(checkout: Path, code: str, db: str) -> dict[str, Any]:
    out = subprocess.run(
        [_python(checkout), "-c", code, db], cwd=checkout, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _cli_cpu(checkout: Path, db: str) -> float:
    with tempfile.NamedTemporaryFile("r") as times:
        subprocess.run(
            ["/usr/bin/time", "-o", times.name, "-f", "%U %S", str(checkout / ".venv" / "bin" / "ledger"),
             "verify", "--db", db],
            cwd=checkout, capture_output=True, check=True,
        )  # fmt: skip
        user, system = times.read().split()[-2:]
    return float(user) + float(system)


def _reset_copy(db: str, into: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(str(into) + suffix).unlink(missing_ok=True)
    shutil.copy(db, into)
    conn = sqlite3.connect(into)
    # the projector's rows are derived, and the append-only triggers guard only the events and keys'
    # updates: a copy may empty them
    with conn:
        for sql in _RESET:
            conn.execute(sql)
    conn.close()
    return str(into)


def measure(checkout: Path, db: str, projector: bool, scratch: Path) -> dict[str, float]:
    """One run of every figure for one checkout."""
    figures: dict[str, float] = {"cli_verify_cpu": _cli_cpu(checkout, db)}
    figures.update(_run(checkout, _WALK, db))
    figures.update(_run(ROOT, _BARE, db))
    if projector:
        copy = _reset_copy(db, scratch / f"projector-{checkout.name}.db")
        figures.update(_run(checkout, _PROJECT, copy))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--projector", action="store_true")
    args = parser.parse_args()
    events = sqlite3.connect(args.db).execute("SELECT count(*) FROM events").fetchone()[0]
    checkouts = {"after": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    best: dict[str, dict[str, float]] = {name: {} for name in checkouts}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.runs):
            for name, checkout in checkouts.items():
                for key, value in measure(checkout, args.db, args.projector, Path(scratch)).items():
                    best[name][key] = min(best[name].get(key, value), value)
    out: dict[str, Any] = {"events": events, "runs": args.runs, "load": os.getloadavg()}
    for name, figures in best.items():
        figures = {k: round(v, 3) for k, v in figures.items()}
        figures["walk_over_bare_chain"] = round(figures["bare_chain_cpu"] / figures["walk_cpu"], 3)
        figures["cli_over_bare_chain"] = round(figures["bare_chain_cpu"] / figures["cli_verify_cpu"], 3)
        figures["derived_us_an_event"] = round(figures["derived_cpu"] / events * 1e6, 2)
        if args.projector:
            total = sum(v for k, v in figures.items() if k.startswith("project_"))
            figures["projector_us_an_event"] = round(total / events * 1e6, 2)
        out[name] = figures
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

"""`ledger import`'s CPU a line, step by step, in one process: the check pass (read, decode, rules, the
file's own ids and owners) and the append pass (whatever it reads back, and the appends with their
SQL), walks left out (they run beside, in another process).

    .venv/bin/python -m bench.intake_steps FILE [--runs 3]

Each run imports FILE into a fresh SQLite ledger in a temporary directory; the best run's CPU seconds
(this process: user + system) per non-empty line are printed for each pass. Run it with another
checkout first on PYTHONPATH to measure that checkout's code on the same file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def one(path: Path) -> dict[str, float]:
    """CPU seconds of the check pass and of the rest of one import of `path` into a fresh ledger."""
    from service.intake import load
    from service.ledger import Ledger

    spent = {"check": 0.0}
    run = load.FileCheck.run

    def timed_run(self: Any, numbered: Any) -> None:
        start = time.process_time()
        try:
            run(self, numbered)
        finally:
            spent["check"] += time.process_time() - start

    load.FileCheck.run = timed_run  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory(prefix="intake-steps-") as work:
            ledger = Ledger(str(Path(work) / "l.db"))
            try:
                start = time.process_time()
                got = load.import_file(ledger, path, walk=False)
                total = time.process_time() - start
            finally:
                ledger.close()
    finally:
        load.FileCheck.run = run  # type: ignore[method-assign]
    return {"lines": got.lines, "check": spent["check"], "append": total - spent["check"], "total": total}


def main() -> None:
    """Import FILE `--runs` times; print the best run's CPU microseconds a line, by pass."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [one(args.file) for _ in range(args.runs)]
    best = min(runs, key=lambda r: r["total"])
    lines = best["lines"]
    out = {k: round(best[k] / lines * 1e6, 1) for k in ("check", "append", "total")}
    print(json.dumps({"lines": lines, "us_per_line": out, "runs": [round(r["total"], 2) for r in runs]}))


if __name__ == "__main__":
    main()

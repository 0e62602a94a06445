"""What the key levels' moves (derived/keys.py) cost an append, batch by batch, past a given size.

Builds (or reuses) a SQLite ledger of `--size` events with the bench's builder, then appends
1000-event batches at synchronous=FULL until `--events` more are stored, timing each batch and
noting which batches moved a level. Prints the p50 of the batches that moved nothing, each move's
batch, and the rate over the whole run (every move included, as an append stream meets them).

    .venv/bin/python -m bench.moves --db /tmp/moves.db --size 1000000 --events 40000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench.library import build
from bench.synth import Synth
from ledger.storage import sql_store
from service.ledger import Ledger


def main() -> None:
    """Time every batch; say which ones moved a level."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument(
        "--first-paper", type=int, help="synthetic papers to append from (default: after the build's)"
    )
    args = parser.parse_args()
    first_paper = args.first_paper
    if not args.db.exists():
        built = build(str(args.db), args.size, 0)
        first_paper = first_paper or built["next_paper"]
        print(json.dumps({"build": built}), flush=True)
    if first_paper is None:
        parser.error("--first-paper: needed with an existing --db (papers it does not hold yet)")
    ledger = Ledger(args.db)
    moved: list[tuple[str, str]] = []
    move = sql_store._move

    def noted(source: str, target: str, *rest: Any) -> list[str]:
        moved.append((source, target))
        return move(source, target, *rest)

    sql_store._move = noted  # type: ignore[assignment]
    first, target = ledger.head().seq, ledger.head().seq + args.events
    plain, moves, pending = [], [], []
    start = time.perf_counter()
    for _, events in Synth().events(first_paper):
        pending.extend(events)
        if len(pending) < 1000:
            continue
        batch, pending = pending[:1000], pending[1000:]
        n, t = len(moved), time.perf_counter()
        head = ledger.append(batch).head.seq
        seconds = time.perf_counter() - t
        if len(moved) > n:
            moves.append({"head": head, "seconds": round(seconds, 2), "moved": moved[n:]})
        else:
            plain.append(seconds)
        if head >= target:
            break
    total = time.perf_counter() - start
    added = ledger.head().seq - first
    plain.sort()
    p50 = round(plain[len(plain) // 2] * 1000, 1)
    out = {"events": added, "seconds": round(total, 1), "events_per_s": round(added / total)}
    print(json.dumps(out | {"plain_batch_p50_ms": p50, "moves": moves}))


if __name__ == "__main__":
    main()

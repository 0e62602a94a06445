"""What SQLite itself pays for the keys an append must maintain, with no ledger code at all.

Bare rows of the ledger's size (about 650 bytes), 1000 per transaction, WAL at synchronous=FULL, into four
layouts that differ only in their keys; the rate over the last 50,000 rows as the table passes N rows:

- `log`: a rowid table (the plain-table reference of the bench);
- `peer`: plus a unique (stream, version) key, what eventsourcing's recorder keeps (papers of ~130 events);
- `peer+id`: plus a unique random 16-byte id, what idempotency by `event_id` (ledger-v1.md) needs;
- `ledger`: plus the ledger's other random keys: an observation id on 85% of rows (inbound citations,
  observation ownership) and a work key on 85% (the standing checks' per-work index), the layout
  before ledger/storage/derived/keys.py;
- `keys`: the layout of derived/keys.py: the (stream, version) key, and the event ids, observation ids and
  work keys in a small recent tree moved, sorted, into a middle one every 25,000 rows, and that into
  the big one every 250,000 rows.

    .venv/bin/python -m bench.floor --events 300000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

PAPER = 130  # events per synthetic paper (bench/synth.py averages about this)
LAYOUTS = {
    "log": [],
    "peer": ["CREATE UNIQUE INDEX sv ON e (stream, ver)"],
    "peer+id": ["CREATE UNIQUE INDEX sv ON e (stream, ver)", "CREATE UNIQUE INDEX id ON e (eid)"],
    "ledger": [
        "CREATE UNIQUE INDEX sv ON e (stream, ver)",
        "CREATE UNIQUE INDEX id ON e (eid)",
        "CREATE INDEX oid ON e (oid) WHERE oid IS NOT NULL",
        "CREATE TABLE w (work BLOB, seq INTEGER, PRIMARY KEY (work, seq)) WITHOUT ROWID",
    ],
    "keys": [
        "CREATE UNIQUE INDEX sv ON e (stream, ver)",
        "CREATE TABLE k (key BLOB, seq INTEGER, PRIMARY KEY (key, seq)) WITHOUT ROWID",
        "CREATE INDEX k_seq ON k (seq)",
        "CREATE TABLE m (key BLOB, seq INTEGER, PRIMARY KEY (key, seq)) WITHOUT ROWID",
        "CREATE INDEX m_seq ON m (seq)",
        "CREATE TABLE r (key BLOB, seq INTEGER, PRIMARY KEY (key, seq)) WITHOUT ROWID",
        "CREATE INDEX r_seq ON r (seq)",
    ],
}
MERGE, MIDDLE = 25_000, 250_000  # ledger/storage/derived/keys.py MERGE_EVENTS, MIDDLE_EVENTS


def rate(layout: str, events: int, directory: Path, every: int = 50_000) -> dict[int, int]:
    """Rows per second over each `every` rows, keyed by the row count reached."""
    conn = sqlite3.connect(directory / f"{layout}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE e (seq INTEGER PRIMARY KEY, stream INTEGER, ver INTEGER, eid BLOB, oid BLOB, data BLOB)"
    )
    for statement in LAYOUTS[layout]:
        conn.execute(statement)
    rng = random.Random(2480)
    versions: dict[int, int] = {}
    rates: dict[int, int] = {}
    payload, seq = os.urandom(600), 0
    mark = time.perf_counter()
    while seq < events:
        rows, works = [], []
        first = rng.randrange(1 << 30)
        for i in range(1000):
            seq += 1
            stream = first + i // PAPER
            versions[stream] = version = versions.get(stream, 0) + 1
            oid = uuid.uuid4().bytes if rng.random() < 0.85 else None
            rows.append((seq, stream, version, uuid.uuid4().bytes, oid, payload))
            if rng.random() < 0.85:
                works.append((uuid.uuid4().bytes, seq))
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO e VALUES (?, ?, ?, ?, ?, ?)", rows)
        if layout == "ledger":
            conn.executemany("INSERT INTO w VALUES (?, ?)", works)
        if layout == "keys":
            keys = [(r[3], r[0]) for r in rows] + [(r[4], r[0]) for r in rows if r[4] is not None] + works
            conn.executemany("INSERT INTO r VALUES (?, ?)", keys)
            if seq % MERGE == 0:  # as derived/keys.py: a level moves when the seqs pass its size
                conn.execute("INSERT INTO m SELECT key, seq FROM r ORDER BY key, seq")
                conn.execute("DELETE FROM r")
                if seq % MIDDLE == 0:
                    conn.execute("INSERT INTO k SELECT key, seq FROM m ORDER BY key, seq")
                    conn.execute("DELETE FROM m")
        conn.execute("COMMIT")
        if seq % every == 0:
            now = time.perf_counter()
            rates[seq] = round(every / (now - mark))
            mark = now
    conn.close()
    return rates


def main() -> None:
    """Print each layout's rate as the table grows, and the ratios to the peer's layout."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=300_000, help="rows per layout (a multiple of 50,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as tmp:
        found = {layout: rate(layout, args.events, Path(tmp)) for layout in LAYOUTS}
    last = max(found["peer"])
    for layout, rates in found.items():
        ratio = rates[last] / found["peer"][last]
        print(f"{layout:8s} rows/s at {last:,}: {rates[last]:>7,}  ({ratio:.2f} of peer)  by size: {rates}")
    print(json.dumps({"events": args.events, "rows_per_s": found}))


if __name__ == "__main__":
    main()

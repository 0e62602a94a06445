"""A bare keyed store's intake (bench/intake.py): each line of an NDJSON file stored in SQLite under a
unique random id, 10,000 lines a transaction, WAL at synchronous=FULL, as `ledger import` commits.

    python -m bench.intake_keyed FILE DB

The id is the line's sha256 (random, as the ledger's derived event ids are); `INSERT OR IGNORE` makes a
repeated line a duplicate, which is what the id is for. No chain, no decode, no other index: the cheapest
store that can refuse a duplicate. Set beside `sqlite-utils insert --nl` (no index at all), it measures
what one unique index over random keys costs as the table grows: each insert lands on a random leaf of
the index, so once the index outgrows the page cache every commit writes pages all over it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys

BATCH = 10_000


def main() -> None:
    """Store every line of FILE in the SQLite file DB; print how many were stored."""
    path, db = sys.argv[1], sys.argv[2]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE lines (seq INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, line BLOB)")
    sql = "INSERT OR IGNORE INTO lines (id, line) VALUES (?, ?)"
    with open(path, "rb") as f:
        batch: list[tuple[bytes, bytes]] = []
        for line in f:
            if line.strip():
                batch.append((hashlib.sha256(line).digest(), line))
            if len(batch) == BATCH:
                conn.execute("BEGIN")
                conn.executemany(sql, batch)
                conn.execute("COMMIT")
                batch = []
        if batch:
            conn.execute("BEGIN")
            conn.executemany(sql, batch)
            conn.execute("COMMIT")
    print(conn.execute("SELECT count(*) FROM lines").fetchone()[0], "stored")


if __name__ == "__main__":
    main()

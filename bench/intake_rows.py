"""SQLite's own CPU for the rows an import writes: the physical floor under `ledger import`'s rate.

    .venv/bin/python -m bench.intake_rows FILE

Imports FILE into a scratch ledger (no walk), recording every write statement its appends run (inside
`Ledger.append`: the events, their keys, the levels' moves, the standing checks' works, spans, counts,
each COMMIT), then replays exactly those statements into a fresh ledger with nothing else timed, at the
import's durability (WAL, synchronous=FULL). Prints the CPU seconds of the replay, per event and per
statement kind: what the ledger's rows cost SQLite, to hold beside `sqlite-utils insert --nl`'s whole
time over the same file (bench/intake.py).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import service.ledger as service_ledger
from ledger.storage.sql_store import SqlStore
from ledger.storage.sqlite import store as sqlite_store
from service.intake.load import import_file

_WRITES = ("INSERT", "DELETE", "UPDATE", "ANALYZE", "COMMIT")


def record(path: str, db: Path) -> tuple[list[tuple[str, list[tuple[Any, ...]] | None]], int]:
    """The write statements (and their rows) the appends of an import of `path` run; events appended."""
    recorded: list[tuple[str, list[tuple[Any, ...]] | None]] = []
    inside = [False]
    append, execute, many = (
        service_ledger.Ledger.append,
        sqlite_store.SQLiteStore._execute,
        sqlite_store.SQLiteStore._execute_many,
    )

    def appending(self: Any, *a: Any, **k: Any) -> Any:
        inside[0] = True
        try:
            return append(self, *a, **k)
        finally:
            inside[0] = False

    def one(self: Any, conn: Any, sql: str, params: Any) -> Any:
        if inside[0] and sql.lstrip().upper().startswith(_WRITES):
            recorded.append((sql, [tuple(params)] if params else None))
        return execute(self, conn, sql, params)

    def rows(self: Any, conn: Any, sql: str, params: Any) -> None:
        if inside[0]:
            recorded.append((sql, [tuple(r) for r in params]))
        many(self, conn, sql, params)

    patched: dict[str, Callable[..., Any]] = {"append": appending, "_execute": one, "_execute_many": rows}
    originals: dict[str, Callable[..., Any]] = {"append": append, "_execute": execute, "_execute_many": many}
    for name, f in patched.items():
        setattr(service_ledger.Ledger if name == "append" else sqlite_store.SQLiteStore, name, f)
    try:
        ledger = service_ledger.Ledger(str(db))
        got = import_file(ledger, path, walk=False)
        ledger.close()
    finally:
        for name, f in originals.items():
            setattr(service_ledger.Ledger if name == "append" else sqlite_store.SQLiteStore, name, f)
    return recorded, got.appended


def replay(recorded: list[tuple[str, list[tuple[Any, ...]] | None]], db: Path) -> dict[str, float]:
    """Run the recorded statements into a fresh ledger at `db`: CPU seconds per statement kind."""
    ledger = service_ledger.Ledger(str(db))
    store = ledger.store
    assert isinstance(store, SqlStore)
    conn = store.connection()
    spent: defaultdict[str, float] = defaultdict(float)
    conn.execute("BEGIN IMMEDIATE")
    for sql, rows in recorded:
        began = time.process_time()
        if rows is None:
            conn.execute(sql)
        else:
            conn.executemany(sql, rows)
        spent[sql.split("(")[0].strip()[:40]] += time.process_time() - began
        if sql.strip().upper() == "COMMIT":
            conn.execute("BEGIN IMMEDIATE")
    conn.execute("COMMIT")
    ledger.close()
    return spent


def main() -> None:
    """Record, replay, print."""
    path = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="intake-rows-") as work:
        recorded, events = record(path, Path(work) / "recorded.db")
        spent = replay(recorded, Path(work) / "replayed.db")
    rows = sum(len(r) if r else 1 for _, r in recorded)
    total = sum(spent.values())
    print(f"{events:,} events, {rows:,} rows in {len(recorded)} statements")
    print(f"SQLite's CPU for them: {total:.2f} s, {total / max(events, 1) * 1e6:.1f} us an event")
    for kind, seconds in sorted(spent.items(), key=lambda kv: kv[1], reverse=True)[:12]:
        print(f"  {seconds:6.2f} s  {kind}")


if __name__ == "__main__":
    main()

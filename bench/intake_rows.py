"""SQLite's own CPU for the rows an import writes: the physical floor under `ledger import`'s rate.

    .venv/bin/python -m bench.intake_rows FILE
    .venv/bin/python -m bench.intake_rows --before DIR [--lines 100000] [--runs 2]

The second form compares this checkout with another (DIR: its code, e.g. `git archive` of main),
on one synthetic file of `--lines` lines (bench/synth.py), in one run: the rows each one's appends
write per event and those its projector writes until the head (by table), and the CPU of a whole
`ledger import` of the file (every process, the projector's work before the command exits included),
the two checkouts' imports interleaved `--runs` times. Results go to bench/intake_rows.json.

Imports FILE into a scratch ledger (no walk), recording every write statement its appends run (inside
`Ledger.append`: the events, their keys, the levels' moves, the standing checks' works, spans, counts,
each COMMIT), then replays exactly those statements into a fresh ledger with nothing else timed, at the
import's durability (WAL, synchronous=FULL). Prints the CPU seconds of the replay, per event and per
statement kind: what the ledger's rows cost SQLite, to hold beside `sqlite-utils insert --nl`'s whole
time over the same file (bench/intake.py).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import service.ledger as service_ledger
from ledger.storage.sqlite import store as sqlite_store
from ledger.storage.sqlite.store import SQLiteStore
from service.intake.load import import_file

_WRITES = ("INSERT", "DELETE", "UPDATE", "ANALYZE", "COMMIT")


def record(
    path: str, db: Path, projected: list[tuple[str, list[tuple[Any, ...]] | None]] | None = None
) -> tuple[list[tuple[str, list[tuple[Any, ...]] | None]], int]:
    """The write statements (and their rows) the appends of an import of `path` run; events appended.
    With `projected`, the projector is then run to the head and its write statements go there."""
    return capture(db, lambda ledger: import_file(ledger, path, walk=False).appended, projected)


def capture(
    db: Path,
    go: Callable[[service_ledger.Ledger], int],
    projected: list[tuple[str, list[tuple[Any, ...]] | None]] | None = None,
) -> tuple[list[tuple[str, list[tuple[Any, ...]] | None]], int]:
    """The write statements (and their rows) the appends `go(ledger)` makes run, and what it returns.
    With `projected`, the projector is then run to the head and its write statements go there."""
    recorded: list[tuple[str, list[tuple[Any, ...]] | None]] = []
    inside = [False]
    into = [recorded]
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
            into[0].append((sql, [tuple(params)] if params else None))
        return execute(self, conn, sql, params)

    def rows(self: Any, conn: Any, sql: str, params: Any) -> None:
        if inside[0]:
            into[0].append((sql, [tuple(r) for r in params]))
        many(self, conn, sql, params)

    patched: dict[str, Callable[..., Any]] = {"append": appending, "_execute": one, "_execute_many": rows}
    originals: dict[str, Callable[..., Any]] = {"append": append, "_execute": execute, "_execute_many": many}
    for name, f in patched.items():
        setattr(service_ledger.Ledger if name == "append" else sqlite_store.SQLiteStore, name, f)
    if projected is not None:
        # a projection's batches (an appender's back-pressure included) go to the projector's count
        from ledger.storage.projector import Logged

        advance = Logged.advance

        def advancing(self: Any, *a: Any, **k: Any) -> Any:
            was = into[0]
            into[0] = projected
            try:
                return advance(self, *a, **k)
            finally:
                into[0] = was

        Logged.advance = advancing  # type: ignore[method-assign]
    try:
        ledger = service_ledger.Ledger(str(db))
        got = go(ledger)
        if projected is not None:
            from ledger.storage.projector import READ_BY_RECORDS

            into[0], inside[0] = projected, True
            ledger.ops.project(READ_BY_RECORDS)
            inside[0] = False
        ledger.close()
    finally:
        for name, f in originals.items():
            setattr(service_ledger.Ledger if name == "append" else sqlite_store.SQLiteStore, name, f)
        if projected is not None:
            Logged.advance = advance  # type: ignore[method-assign]
    return recorded, got


def replay(recorded: list[tuple[str, list[tuple[Any, ...]] | None]], db: Path) -> dict[str, float]:
    """Run the recorded statements into a fresh ledger at `db`: CPU seconds per statement kind."""
    ledger = service_ledger.Ledger(str(db))
    store = ledger.store
    assert isinstance(store, SQLiteStore)
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


def _table(sql: str) -> str:
    """The table a write statement writes (or the statement's first word)."""
    words = sql.split()
    if words[0].upper() == "INSERT":
        return words[2]
    if words[0].upper() == "UPDATE":
        return words[1]
    if words[0].upper() == "DELETE":
        return words[2]
    return words[0].upper()


def row_counts(path: str) -> dict[str, Any]:
    """Rows the appends of an import of `path` write per event, and the projector's until the head,
    each by table (a COMMIT not counted): this process's code."""
    with tempfile.TemporaryDirectory(prefix="intake-rows-") as work:
        projected: list[tuple[str, list[tuple[Any, ...]] | None]] = []
        recorded, events = record(path, Path(work) / "counted.db", projected)

    def by_table(statements: list[tuple[str, list[tuple[Any, ...]] | None]]) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for sql, rows in statements:
            # a move's INSERT ... SELECT counts as one row (the rows it moves are rewrites); a DELETE none
            if sql.split()[0].upper() in ("INSERT", "UPDATE"):
                out[_table(sql)] += len(rows) if rows else 1
        return dict(sorted(out.items()))

    appended, projector = by_table(recorded), by_table(projected)
    return {
        "events": events,
        "append_rows_per_event": round(sum(appended.values()) / max(events, 1), 3),
        "projector_rows_per_event": round(sum(projector.values()) / max(events, 1), 3),
        "append_rows": appended,
        "projector_rows": projector,
    }


def compare(before: Path, lines: int, runs: int, also: Path | None = None) -> dict[str, Any]:
    """Rows per event and `ledger import` CPU of this checkout and `before` (and `also`, another
    variant), on one file, in one run."""
    import json
    import os
    import subprocess

    from bench.intake import timed
    from bench.ratios import ROOT, _env, _ledger, _remove, make_files

    work = Path(tempfile.mkdtemp(prefix="intake-rows-"))
    files = make_files(work, lines, 1, lines)
    codes = {"before": before.resolve(), "after": ROOT} | ({"also": also.resolve()} if also else {})
    out: dict[str, Any] = {"lines": lines, "codes": {k: str(v) for k, v in codes.items()}, "load": []}
    for who, code in codes.items():
        # this file run with the other checkout first on the path: its appends and projector counted
        proc = subprocess.run(
            [sys.executable, "-P", str(Path(__file__).resolve()), "--count", files["big"]],
            capture_output=True, text=True, env=_env(code), cwd=work, check=True,
        )  # fmt: skip
        out[who] = {"rows": json.loads(proc.stdout.strip().splitlines()[-1]), "imports": []}
        print(f"  {who:<6} rows an event: append {out[who]['rows']['append_rows_per_event']}, "
              f"projector {out[who]['rows']['projector_rows_per_event']}", flush=True)  # fmt: skip
    for _ in range(runs):
        for who, code in codes.items():
            db = work / f"{who}.db"
            _remove(db)
            out["load"].append(os.getloadavg()[0])
            r = timed([*_ledger(), "import", files["big"], "--db", str(db)], _env(code), work)
            if r["exit"] != 0:
                raise RuntimeError(f"ledger import failed: {r['tail']}")
            out[who]["imports"].append(r)
            print(f"  {who:<6} import {lines:,}: {r['seconds']} s, cpu {r['cpu_seconds']} s", flush=True)
            _remove(db)
    for who in codes:
        cpu = sorted(r["cpu_seconds"] for r in out[who]["imports"])
        out[who]["cpu_us_per_line_best"] = round(cpu[0] / lines * 1e6, 1)
    for who in codes:
        out[f"cpu_{who}_over_before"] = round(
            out[who]["cpu_us_per_line_best"] / out["before"]["cpu_us_per_line_best"], 3
        )
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    """Record, replay, print (or count, or compare two checkouts)."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?")
    ap.add_argument("--count", action="store_true", help="print the rows per event of FILE as JSON")
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--also", type=Path, default=None, help="a third checkout (a variant), measured beside")
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    if args.before is not None:
        result = compare(args.before, args.lines, args.runs, args.also)
        (Path(__file__).parent / "intake_rows.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k.startswith("cpu_")}))
        return
    if args.count:
        print(json.dumps(row_counts(args.file)))
        return
    path = args.file
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

"""The floor under each ratio target of the write path: the best ratio any implementation of this schema
and these rules could reach on this machine, beside ours and the reference, all in one run.

    .venv/bin/python -m bench.floor_ratios [--base 200000] [--next 25000] [--big 400000] [--keep DIR]

A floor is what must be computed whatever the code around it: SQLite's CPU for exactly the rows and
index entries our import writes (the events with their indexes, the event-id and observation keys into
their levels and the moves between them, and everything the projector writes until the head: spans,
counts, check works, screen rows, `w:` keys), recorded from a real import (bench/intake_rows.py
`capture`) and replayed by `executemany` into a fresh ledger in the same transactions at the same
durability (WAL, synchronous=FULL), no Python a row beyond the driver; plus the compiled calls
ledger-v1 requires an event (`required_calls`: msgspec's decode and canonical encode, the body's
formatting, the blake3 link, uuid5's SHA-1, the SHA-256 Merkle leaf), each kind in one comprehension.
The floor ratio is the reference's CPU over that floor's: ours can come no closer to the reference.

- `import 400k`: `ledger import` of the big file into an empty ledger (every process under
  `/usr/bin/time -v`: the walker and the projection before it exits counted) and `sqlite-utils insert
  --nl` of the same file; the floor over the same file;
- `import 25k into 200k`: `ledger import` of the next 25,000 lines into a copy of a 200,000-line
  ledger and eventsourcing's SQLite recorder storing the same lines, filled with the same base lines,
  in transactions of 5,000 (bench/intake_peer.py); the floor recorded and replayed into copies of the
  same base ledger;
- `library append`: `Ledger.append` of 25 batches of 1,000 events into a copy of that ledger (as
  bench/ratios.py), the very rows it stored into a bare table 1,000 a transaction; the floor: its
  append statements and the projector's until the head, replayed, plus the required calls;
- `verify`: `ledger verify` of that ledger against the bare chain (bench/baselines.py); the floor
  (`verify_floor`): reading the same columns and the hash, the canonical body formatted and chained
  with blake3, each SHA-256 leaf and one tree node, each event's data decoded, and every stored
  derived row read back: what a verify of the chain and of the derived rows must at least compute.

Results go to bench/floor_ratios.json and a table on stdout. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from blake3 import blake3

from bench.intake import VENV, timed
from bench.intake_rows import _table, capture
from bench.ratios import ROOT, _copy, _env, _head, _import, _remove, _worker, make_files

OUT = ROOT / "bench" / "floor_ratios.json"
IMPORT_BATCH = 5_000
Statements = list[tuple[str, list[tuple[Any, ...]] | None]]
_BODY = (
    b'{"data":%b,"event_id":%b,"observed_at":%b,"recorded_at":%b,"seq":%d,"stream":%b,'
    b'"stream_version":%d,"type":%b}'
)
_URL = bytes.fromhex("6ba7b8119dad11d180b400c04fd430c8")  # uuid.NAMESPACE_URL
# the tables whose rows verify's derived step holds to the events (their views read the same rows)
_DERIVED = ("event_keys_", "check_works_", "inbound_", "screen_")


def required_calls(lines: list[bytes], batch: int = IMPORT_BATCH) -> float:
    """CPU seconds of only the compiled calls ledger-v1 requires for each line, a batch of the import's
    size at a time, each kind in one comprehension (the collector off, as no row outlives its batch):
    the typed decode, canonical encode of the data and of the uuid5 name, SHA-1 of uuid5, the body
    formatted, the blake3 link (hex, as stored), the SHA-256 leaf."""
    from ledger.model.codec import plain_event
    from ledger.model.events import EVENT_TYPES

    canon = msgspec.json.Encoder(order="sorted").encode
    string = msgspec.json.Encoder().encode
    sha1, sha256 = hashlib.sha1, hashlib.sha256
    stamp = string("2026-12-06T08:00:00.000000Z")
    tag: dict[type, str] = {kind: name for name, kind in EVENT_TYPES.items()}
    prev = bytes(32)
    gc.disable()
    start = time.process_time()
    for at in range(0, len(lines), batch):
        events = [plain_event(raw) for raw in lines[at : at + batch]]
        datas = [canon(e.data) for e in events]
        types = [tag[type(e)] for e in events]
        names = [
            canon({"data": e.data, "observed_at": e.observed_at, "type": t})
            for e, t in zip(events, types, strict=True)
        ]
        [sha1(_URL + n).digest() for n in names]
        bodies = [
            _BODY % (d, string(e.event_id), string(e.observed_at), stamp, at + i, b'"paper:2509.02480"', i,
                     string(t))
            for i, (e, d, t) in enumerate(zip(events, datas, types, strict=True))
        ]  # fmt: skip
        hashes = []
        for b in bodies:  # the chain is sequential: each link hashes the one before
            prev = blake3(prev + b).digest()
            hashes.append(prev)
        [h.hex() for h in hashes]
        [sha256(b"\x00" + h).digest() for h in hashes]
    spent = time.process_time() - start
    gc.enable()
    return spent


def read_lines(path: str) -> list[bytes]:
    """The non-blank lines of an NDJSON file."""
    with open(path, "rb") as f:
        return [line for line in f if line.strip()]


def replay(statements: Statements, db: Path, split: int | None = None) -> dict[str, Any]:
    """Run recorded write statements into the ledger at `db` (made fresh, or a copy), a transaction per
    recorded COMMIT, at the ledger's durability: CPU and wall seconds of the statements alone (and, with
    `split`, the CPU of the statements before that index apart: the appends' before the projector's)."""
    from ledger.storage.sqlite.store import SQLiteStore
    from service.ledger import Ledger

    ledger = Ledger(str(db))
    store = ledger.store
    assert isinstance(store, SQLiteStore)
    conn = store.connection()
    cpu = wall = 0.0
    commits = 0
    by_table: dict[str, float] = {}
    gc.disable()  # the recorded rows are many and long-lived: the collector would walk them again and again
    conn.execute("BEGIN IMMEDIATE")
    first = 0.0
    for n, (sql, rows) in enumerate(statements):
        if n == split:
            first = cpu
        c, w = time.process_time(), time.perf_counter()
        if rows is None:
            conn.execute(sql)
        else:
            conn.executemany(sql, rows)
        spent = time.process_time() - c
        cpu, wall = cpu + spent, wall + time.perf_counter() - w
        table = _table(sql)
        by_table[table] = by_table.get(table, 0.0) + spent
        if sql.strip().upper() == "COMMIT":
            commits += 1
            conn.execute("BEGIN IMMEDIATE")
    c, w = time.process_time(), time.perf_counter()
    conn.execute("COMMIT")
    cpu, wall = cpu + time.process_time() - c, wall + time.perf_counter() - w
    gc.enable()
    ledger.close()
    tables = {t: round(v, 3) for t, v in sorted(by_table.items(), key=lambda kv: -kv[1])}
    appends = first if split is not None else cpu
    return {"cpu_seconds": round(cpu, 3), "seconds": round(wall, 3), "commits": commits,
            "append_cpu_seconds": round(appends, 3), "by_table": tables}  # fmt: skip


def _rows(statements: Statements) -> int:
    return sum(len(r) if r else 1 for sql, r in statements if sql.split()[0].upper() in ("INSERT", "UPDATE"))


def sqlite_floor(db: Path, scratch: Path, go: Any, lines: list[bytes], base: Path | None) -> dict[str, Any]:
    """Record what `go(ledger)` writes into `db` (and what the projector then writes to the head),
    replay it into `scratch` (a copy of `base`, or a fresh ledger), and time the required calls over
    `lines`: the floor's CPU and wall seconds."""
    projected: Statements = []
    recorded, events = capture(db, go, projected)
    _remove(scratch)
    if base is not None:
        _copy(base, scratch)
    r = replay(recorded + projected, scratch, len(recorded))
    _remove(scratch)
    calls = required_calls(lines)
    return {
        "events": events, "append_rows": _rows(recorded), "projector_rows": _rows(projected),
        "statements": len(recorded) + len(projected), "replay": r, "calls_cpu_seconds": round(calls, 3),
        "cpu_seconds": round(r["cpu_seconds"] + calls, 3), "seconds": round(r["seconds"] + calls, 3),
    }  # fmt: skip


_PROJECT = """
import json, sys, time
from ledger.storage.projector import READ_BY_RECORDS
from service.ledger import Ledger
ledger = Ledger(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
ledger.ops.project(READ_BY_RECORDS)
print(json.dumps({"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}))
"""


def project_rest(db: Path) -> dict[str, Any]:
    """The CPU and wall seconds of bringing the projections of `db` to its head, in a process of its
    own: what an appender that projects only past the allowed lag leaves for its exit."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROJECT, str(db)], capture_output=True, text=True, env=_env(ROOT), cwd=ROOT,
        check=True,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def verify_floor(db: Path, page: int = 5000) -> dict[str, Any]:
    """What a verify must at least compute over the ledger at `db`: its rows read with their hashes,
    each canonical body formatted and chained, each SHA-256 leaf and one tree node, each event's data
    decoded (the derived rows come from it), and every stored derived row read back to compare."""
    conn = sqlite3.connect(db)
    string = msgspec.json.Encoder().encode
    decode = msgspec.json.decode
    sha256 = hashlib.sha256
    select = (
        "SELECT seq, data, event_id, observed_at, recorded_at, stream, stream_version, type, hash "
        "FROM events WHERE seq > ? ORDER BY seq LIMIT ?"
    )
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        if name.startswith(_DERIVED)
    ]
    start, cpu = time.perf_counter(), time.process_time()
    prev, after, count, bad = bytes(32), 0, 0, 0
    while rows := conn.execute(select, (after, page)).fetchall():
        bodies = [
            _BODY % (d.encode(), string(i), string(o), string(r), s, string(st), v, string(t))
            for s, d, i, o, r, st, v, t, _ in rows
        ]
        hashes = []
        for b in bodies:
            prev = blake3(prev + b).digest()
            hashes.append(prev)
        bad += sum(h.hex() != row[8] for h, row in zip(hashes, rows, strict=True))
        leaves = [sha256(b"\x00" + h).digest() for h in hashes]
        [sha256(b"\x01" + a + b).digest() for a, b in zip(leaves, leaves[1:], strict=False)]
        [decode(row[1]) for row in rows]
        count += len(rows)
        after = rows[-1][0]
    derived = sum(len(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)  # noqa: S608
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    conn.close()
    return {"events": count, "derived_rows": derived, "tables": tables, "mismatched": bad,
            "seconds": round(seconds, 4), "cpu_seconds": round(cpu, 4)}  # fmt: skip


def measure(work: Path, base: int, nxt: int, big: int) -> dict[str, Any]:
    """Ours, the floor and the reference for each target, in one run."""
    from bench import pools
    from bench.baselines import bare_batches, stored_rows
    from ledger.model.codec import event_to_dict
    from service.intake.load import import_file

    files = make_files(work, base, nxt, big)
    out: dict[str, Any] = {"files": files, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "load": [os.getloadavg()[0]]}  # fmt: skip

    def say(what: str, r: dict[str, Any]) -> None:
        out["load"].append(os.getloadavg()[0])
        print(f"  {what:<34} cpu {r['cpu_seconds']:>8.2f} s   wall {r['seconds']:>8.2f} s", flush=True)

    # import 400k against sqlite-utils
    big_db = work / "ours-big.db"
    _remove(big_db)
    out["import_big"] = _import(ROOT, files["big"], big_db, work)
    say(f"ledger import {big:,}", out["import_big"])
    out["import_big"]["events"] = _head(big_db)
    _remove(big_db)
    su = work / "sqlite-utils.db"
    _remove(su)
    out["sqlite_utils_big"] = timed(
        [str(VENV / "sqlite-utils"), "insert", str(su), "events", files["big"], "--nl"], _env(ROOT), work
    )
    say(f"sqlite-utils insert {big:,}", out["sqlite_utils_big"])
    _remove(su)
    lines = read_lines(files["big"])
    out["floor_big"] = sqlite_floor(
        work / "rec-big.db", work / "rep-big.db",
        lambda ledger: import_file(ledger, files["big"], walk=False).appended, lines, None,
    )  # fmt: skip
    say(f"floor {big:,}", out["floor_big"])
    _remove(work / "rec-big.db")
    del lines

    # import 25k into 200k against eventsourcing's recorder
    base_db = work / "base.db"
    if not base_db.exists():
        _import(ROOT, files["base"], base_db, work)
    head = _head(base_db)
    ours_next = work / "ours-next.db"
    _copy(base_db, ours_next)
    out["import_next"] = _import(ROOT, files["next"], ours_next, work)
    say(f"ledger import {nxt:,} into {head:,}", out["import_next"])
    peer = work / "peer.db"
    _remove(peer)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.intake_peer", files["next"], str(peer), "--batch", str(IMPORT_BATCH),
         "--fill", files["base"]], capture_output=True, text=True, env=_env(ROOT), cwd=ROOT, check=True,
    )  # fmt: skip
    out["peer_next"] = json.loads(proc.stdout.strip().splitlines()[-1])
    say("eventsourcing recorder", out["peer_next"])
    _remove(peer)
    rec = work / "rec-next.db"
    _copy(base_db, rec)
    out["floor_next"] = sqlite_floor(
        rec, work / "rep-next.db", lambda ledger: import_file(ledger, files["next"], walk=False).appended,
        read_lines(files["next"]), base_db,
    )  # fmt: skip
    say("floor 25k into 200k", out["floor_next"])
    _remove(rec)

    # library append against the bare table
    app = work / "ours-append.db"
    _copy(ours_next, app)
    appended = _worker(ROOT, "append", str(app), str(files["next_paper"]), "25")
    say("library append 25 x 1,000", appended)
    rest = project_rest(app)
    say("  its projection to the head", rest)
    out["append_only"], out["append_projection"] = appended, rest
    out["append"] = {
        "events": appended["events"],
        "cpu_seconds": appended["cpu_seconds"] + rest["cpu_seconds"],
        "seconds": appended["seconds"] + rest["seconds"],
    }
    rows = stored_rows(app, appended["after"])
    out["bare_table"] = bare_batches(work / "bare.db", rows, 1000)
    say("bare table", out["bare_table"])
    _remove(app)
    batches = pools.batches(files["next_paper"], 25)
    batch_lines = [msgspec.json.encode(event_to_dict(e)) for b in batches for e in b]
    rec = work / "rec-append.db"
    _copy(ours_next, rec)

    def appends(ledger: Any) -> int:
        first = int(ledger.head().seq)
        for b in batches:
            ledger.append(b)
        return int(ledger.head().seq) - first

    out["floor_append"] = sqlite_floor(rec, work / "rep-append.db", appends, batch_lines, ours_next)
    say("floor library append", out["floor_append"])
    _remove(rec)

    # verify against the bare chain
    out["verify"] = _worker(ROOT, "verify", str(ours_next))
    say(f"ledger verify {out['verify']['events']:,}", out["verify"])
    out["chain"] = _worker(ROOT, "chain", str(ours_next))
    say("bare chain", out["chain"])
    out["floor_verify"] = verify_floor(ours_next)
    say("floor verify", out["floor_verify"])
    out["ratios"] = ratios(out)
    return out


def _ratio(ref: dict[str, Any], other: dict[str, Any], key: str, per_event: bool = False) -> float:
    """ref's figure over other's (CPU or wall; per event where the two stored different counts)."""
    a, b = ref[key], other[key]
    if per_event:
        a, b = a / ref["events"], b / other["events"]
    return round(a / b, 3)


def ratios(out: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each target's ratio for ours and for the floor, in CPU and wall (above 1: faster than the ref)."""
    pairs = {
        "import_big_vs_sqlite_utils": ("sqlite_utils_big", "import_big", "floor_big", False),
        "import_next_vs_peer": ("peer_next", "import_next", "floor_next", False),
        "library_append_vs_bare_table": ("bare_table", "append", "floor_append", True),
        "verify_vs_bare_chain": ("chain", "verify", "floor_verify", True),
    }
    got: dict[str, dict[str, float]] = {}
    for key, tag in (("cpu_seconds", "cpu"), ("seconds", "wall")):
        for name, (ref, ours, floor, per_event) in pairs.items():
            got[f"{name}_{tag}"] = {
                "ours": _ratio(out[ref], out[ours], key, per_event),
                "floor": _ratio(out[ref], out[floor], key, per_event),
            }
    return got


def main() -> None:
    """Parse the arguments, measure, print the ratios, write bench/floor_ratios.json."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=200_000)
    ap.add_argument("--next", type=int, default=25_000)
    ap.add_argument("--big", type=int, default=400_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the files and ledgers here and keep them")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="floor-ratios-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = measure(work, args.base, args.next, args.big)
    finally:
        if args.keep is None:
            shutil.rmtree(work)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"\nload average {min(out['load']):.2f}-{max(out['load']):.2f}")
    for name, r in out["ratios"].items():
        print(f"  {name:<40} ours {r['ours']:>7}   floor {r['floor']:>7}")


if __name__ == "__main__":
    main()

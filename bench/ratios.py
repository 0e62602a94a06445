"""The write path's ratios in one run: each figure of ours over what a user would pick instead, measured
on the same machine, the same events and the same transactions, for this checkout and (`--before DIR`)
another one, interleaved so the machine's load falls on both alike.

    .venv/bin/python -m bench.ratios [--before DIR] [--base 200000] [--next 25000] [--big 400000]
                                     [--keep DIR]

- `import 25k into 200k`: `ledger import` of a file of the next 25,000 lines into a copy of a ledger
  of the first 200,000 (built once by `ledger import`, this checkout's code), under `/usr/bin/time -v`
  (the whole command: the CPU of every process, the importing one and its walker); over eventsourcing's
  SQLite application recorder (bench/intake_peer.py) filled with the same 200,000 lines, then storing
  the same 25,000 (each line decoded and stored as a StoredEvent of its stream) in transactions of
  5,000 lines, as the import commits them, at the same durability (WAL, synchronous=FULL), timed in
  its process (wall and CPU);
- `import 400k`: `ledger import` of a 400,000-line file into an empty ledger, over `sqlite-utils
  insert --nl` of the same file into an empty database, in CPU (every process) and in wall time;
- `library append`: `Ledger.append` of 25 batches of 1,000 events into a copy of the 225,000-event
  ledger, over `executemany` of the very rows it stored, 1,000 a transaction, into a bare table;
- `verify`: `ledger verify` (Ledger.verify in a fresh process) of the 225,000-event ledger, over the
  bare chain (bench/baselines.py: blake3 down the stored columns, no re-encoding or checks).

Results go to bench/ratios.json and a table on stdout. Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from bench.intake import VENV, timed

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "ratios.json"
# the import's batch (service/intake/load.py BATCH): the peer commits the same number of rows a transaction
IMPORT_BATCH = 5_000


def make_files(work: Path, base: int, nxt: int, big: int) -> dict[str, Any]:
    """The base file (first `base` events), the next file (the `nxt` after them), the big file (the first
    `big`); and the first synthetic paper none of them holds (for the library appends)."""
    from bench.synth import Synth
    from ledger.model.codec import event_to_dict

    encode = msgspec.json.encode
    files = {"base": work / f"base-{base}.ndjson", "next": work / f"next-{nxt}.ndjson",
             "big": work / f"big-{big}.ndjson"}  # fmt: skip
    meta = work / "files.json"
    if meta.exists() and all(p.exists() for p in files.values()):
        return {**json.loads(meta.read_text()), **{k: str(v) for k, v in files.items()}}
    outs = {k: p.open("wb") for k, p in files.items()}
    n, last = 0, 0
    try:
        for paper, events in Synth().events():
            for e in events:
                line = encode(event_to_dict(e)) + b"\n"
                if n < big:
                    outs["big"].write(line)
                if n < base:
                    outs["base"].write(line)
                elif n < base + nxt:
                    outs["next"].write(line)
                n += 1
            last = paper
            if n >= max(big, base + nxt):
                break
    finally:
        for f in outs.values():
            f.close()
    out = {"next_paper": last + 1}
    meta.write_text(json.dumps(out))
    return {**out, **{k: str(v) for k, v in files.items()}}


def _env(code: Path) -> dict[str, str]:
    # the code measured first on the path, ahead of this checkout's editable install
    return {**os.environ, "PYTHONPATH": str(code)}


def _ledger() -> list[str]:
    return [sys.executable, "-c", "import sys; from entry.main import main; sys.argv[0] = 'ledger'; main()"]


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".checkpoint", ".key"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _copy(src: Path, dst: Path) -> None:
    """A consistent copy of a ledger file and its side files (the WAL checkpointed first)."""
    import sqlite3

    _remove(dst)
    conn = sqlite3.connect(src)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("", ".key", ".checkpoint"):
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")


def _head(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])
    finally:
        conn.close()


def _worker(code: Path, *args: str) -> dict[str, Any]:
    """`python -m bench.worker ARGS` with `code` first on the path; its JSON answer."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.worker", *args], capture_output=True, text=True, env=_env(code),
        cwd=code, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed: {proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _import(code: Path, path: str, db: Path, work: Path) -> dict[str, Any]:
    r = timed([*_ledger(), "import", path, "--db", str(db)], _env(code), work)
    if r["exit"] != 0:
        raise RuntimeError(f"ledger import failed: {r['tail']}")
    return r


def measure(codes: dict[str, Path], work: Path, base: int, nxt: int, big: int) -> dict[str, Any]:
    """Every figure for each checkout in `codes`, and each reference once."""
    from bench.baselines import bare_batches, stored_rows

    files = make_files(work, base, nxt, big)
    base_db = work / "base.db"
    if not base_db.exists():
        print(f"building the {base:,}-event ledger", flush=True)
        _import(ROOT, files["base"], base_db, work)
    after_base = _head(base_db)
    out: dict[str, Any] = {
        "files": files, "base_head": after_base, "codes": {k: str(v) for k, v in codes.items()},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_before": os.getloadavg()[0],
        "ours": {}, "refs": {},
    }  # fmt: skip
    ours: dict[str, dict[str, Any]] = out["ours"]
    for who, code in codes.items():
        db = work / f"{who}-next.db"
        _copy(base_db, db)
        r = _import(code, files["next"], db, work)
        r["events"] = _head(db) - after_base
        ours.setdefault(who, {})["import_next"] = r
        print(
            f"  {who:<7} import {nxt:,} into {after_base:,}: {r['seconds']} s, cpu {r['cpu_seconds']} s",
            flush=True,
        )
    # the peer: the same lines, filled with the same base lines, in transactions of the import's batch
    store = work / "peer.db"
    _remove(store)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.intake_peer", files["next"], str(store), "--batch", str(IMPORT_BATCH),
         "--fill", files["base"]], capture_output=True, text=True, env=_env(ROOT), cwd=ROOT, check=True,
    )  # fmt: skip
    out["refs"]["peer_next"] = json.loads(proc.stdout.strip().splitlines()[-1]) | {"lines": nxt}
    _remove(store)
    first = work / f"{next(iter(codes))}-next.db"
    p = out["refs"]["peer_next"]
    print(f"  peer    {p['events']:,} lines: {p['seconds']} s, cpu {p['cpu_seconds']} s", flush=True)
    for who, code in codes.items():
        db = work / f"{who}-next.db"
        v = _worker(code, "verify", str(db))
        ours[who]["verify"] = v
        print(f"  {who:<7} verify {v['events']:,}: {v['seconds']} s ({v.get('steps', '')})", flush=True)
    c = _worker(ROOT, "chain", str(first))
    out["refs"]["chain"] = c
    print(f"  chain   {c['events']:,}: {c['seconds']} s", flush=True)
    for who, code in codes.items():
        db = work / f"{who}-append.db"
        _copy(work / f"{who}-next.db", db)
        a = _worker(code, "append", str(db), str(files["next_paper"]), "25")
        ours[who]["append"] = a
        print(f"  {who:<7} append {a['events']:,}: {a['seconds']} s", flush=True)
        if who == next(iter(codes)):
            rows = stored_rows(db, a["after"])
            out["refs"]["bare_table"] = bare_batches(work / "bare.db", rows, 1000)
            print(f"  bare    {len(rows):,} rows: {out['refs']['bare_table']['seconds']} s", flush=True)
        _remove(db)
    for who, code in codes.items():
        db = work / f"{who}-big.db"
        _remove(db)
        r = _import(code, files["big"], db, work)
        ours[who]["import_big"] = r
        print(f"  {who:<7} import {big:,}: {r['seconds']} s, cpu {r['cpu_seconds']} s, "
              f"peak {r['tree_peak_pss_mb']} MB PSS", flush=True)  # fmt: skip
        _remove(db)
    su = work / "sqlite-utils.db"
    _remove(su)
    r = timed(
        [str(VENV / "sqlite-utils"), "insert", str(su), "events", files["big"], "--nl"], _env(ROOT), work
    )
    out["refs"]["sqlite_utils_big"] = r
    print(f"  sqlite-utils {big:,}: {r['seconds']} s, cpu {r['cpu_seconds']} s", flush=True)
    _remove(su)
    out["load_after"] = os.getloadavg()[0]
    out["ratios"] = {who: ratios(ours[who], out["refs"], big) for who in codes}
    return out


def ratios(ours: dict[str, Any], refs: dict[str, Any], big: int) -> dict[str, float]:
    """Each figure of ours over its reference (above 1: ours is faster)."""
    imp, peer_next = ours["import_next"], refs["peer_next"]
    su, bigr = refs["sqlite_utils_big"], ours["import_big"]
    return {
        # events a wall second, ours over the peer's, on the same rows
        # the same lines: ours (the whole command, every process) over the peer's recorder
        "import_25k_into_200k_vs_peer_wall": round(peer_next["seconds"] / imp["seconds"], 3),
        "import_25k_into_200k_vs_peer_cpu": round(peer_next["cpu_seconds"] / imp["cpu_seconds"], 3),
        "import_400k_vs_sqlite_utils_cpu": round(su["cpu_seconds"] / bigr["cpu_seconds"], 3),
        "import_400k_vs_sqlite_utils_wall": round(su["seconds"] / bigr["seconds"], 3),
        "import_400k_cpu_us_per_line": round(bigr["cpu_seconds"] / big * 1e6, 1),
        "library_append_vs_bare_table": round(
            ours["append"]["events_per_s"] / refs["bare_table"]["events_per_s"], 3
        ),
        "library_append_vs_bare_table_cpu": _cpu_ratio(ours["append"], refs["bare_table"]),
        "verify_vs_bare_chain": round(ours["verify"]["events_per_s"] / refs["chain"]["events_per_s"], 3),
        "verify_vs_bare_chain_cpu": _cpu_ratio(ours["verify"], refs["chain"]),
    } | _chain_step(ours["verify"], refs["chain"])


def _cpu_ratio(ours: dict[str, Any], ref: dict[str, Any]) -> float | None:
    """The reference's CPU an event over ours (the same events: above 1, ours is cheaper)."""
    if not ours.get("cpu_seconds") or not ref.get("cpu_seconds"):
        return None
    return round((ref["cpu_seconds"] / ref["events"]) / (ours["cpu_seconds"] / ours["events"]), 3)


def _chain_step(verify: dict[str, Any], chain: dict[str, Any]) -> dict[str, float]:
    """verify's chain step alone over the bare chain, where verify reports its steps."""
    seconds = verify.get("steps", {}).get("chain")
    if not seconds:
        return {}
    return {"verify_chain_step_vs_bare_chain": round(verify["events"] / seconds / chain["events_per_s"], 3)}


def main() -> None:
    """Parse the arguments, measure, print the ratios, write bench/ratios.json."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, default=None, help="another checkout, measured beside this one")
    ap.add_argument("--base", type=int, default=200_000)
    ap.add_argument("--next", type=int, default=25_000)
    ap.add_argument("--big", type=int, default=400_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the files and ledgers here and keep them")
    args = ap.parse_args()
    codes = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    work = args.keep or Path(tempfile.mkdtemp(prefix="ratios-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = measure(codes, work, args.base, args.next, args.big)
    finally:
        if args.keep is None:
            shutil.rmtree(work)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"\nload {out['load_before']:.2f} -> {out['load_after']:.2f}")
    for who, r in out["ratios"].items():
        print(f"{who}:")
        for k, v in r.items():
            print(f"  {k:<36} {v}")


if __name__ == "__main__":
    main()

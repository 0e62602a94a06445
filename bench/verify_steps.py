"""`ledger verify`'s chain step in CPU an event, over the bare chain, and (for this checkout) its parts.

    .venv/bin/python -m bench.verify_steps DB [--runs 5] [--before DIR]

The ledger's pages are read into memory first, as the walk reads them (5,000 rows a page); then, in
CPU (this process's user + system), each run times the chain step over them (`_Walk._chain_page`, with
the Merkle nodes it completes read and compared, as a whole walk does) and the bare chain over the same
rows in memory (blake3 down the columns that make up each body, as bench/baselines.py does), and the
bare chain with its own reads (bench/baselines.py, which bench/ratios.py's verify figure is over).
Then each part of the chain step alone, on the same pages: the columns unzipped, the order checks,
the stream versions, the instants, the string check, the bodies, blake3, the leaves and the tree.
`--before DIR` runs the same in turn for another checkout (its code first on the path), runs
interleaved; the parts are printed where that checkout's module has the functions they call.
The best run of each figure is printed as JSON. Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blake3 import blake3

from ledger.storage.sql import ChainRow

ROOT = Path(__file__).resolve().parents[1]


def _pages(db: str) -> list[list[ChainRow]]:
    from ledger.storage import verify
    from ledger.storage.backend import open_store

    store = open_store(db)
    try:
        return list(store.iter_pages(after=0, batch=verify._PAGE))
    finally:
        store.close()


def _cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def chain_step(db: str, pages: list[list[ChainRow]]) -> float:
    """CPU seconds of the chain step over `pages`, as a whole walk takes it."""
    from ledger.storage import verify
    from ledger.storage.backend import open_store
    from ledger.tlog.chain import GENESIS

    store = open_store(db)
    try:
        walk = verify._Walk(store, verify._Start(0, GENESIS, -1, []), None, 10_000, exact=False)
        walk.begin(iter(()))

        def run() -> None:
            for rows in pages:
                if not walk._chain_page(rows):
                    raise AssertionError("the chain step doubts a good ledger")
            if walk._flush() is not None:
                raise AssertionError("a stored node differs")

        return _cpu(run)
    finally:
        store.close()


def bare(pages: list[list[ChainRow]]) -> float:
    """CPU seconds of the bare chain over the same rows in memory (bench/baselines.py's loop)."""

    def run() -> None:
        prev = b"\0" * 32
        for rows in pages:
            for seq, event_id, stream, version, type_, observed_at, recorded_at, data, *_ in rows:
                body = f"{data}{event_id}{observed_at}{recorded_at}{seq}{stream}{version}{type_}".encode()
                prev = blake3(prev + body).digest()

    return _cpu(run)


def parts(pages: list[list[ChainRow]]) -> dict[str, float] | None:
    """CPU seconds of each part of this checkout's chain step alone, over `pages`; None where the
    module has not the functions they call."""
    from ledger.model import instants
    from ledger.storage import verify
    from ledger.tlog.merkle import CompactRange

    if not all(
        hasattr(m, f) for m, f in ((verify, "_chained"), (verify, "_verbatim"), (instants, "parse_instants"))
    ):
        return None
    cols = [tuple(zip(*rows, strict=True)) for rows in pages]
    bodies: list[list[bytes]] = []
    leaves: list[list[bytes]] = []
    out: dict[str, float] = {}

    def part(name: str, each: Callable[[tuple[Any, ...]], object]) -> None:
        out[name] = _cpu(lambda: [each(c) for c in cols])

    out["zip"] = _cpu(lambda: [tuple(zip(*rows, strict=True)) for rows in pages])
    part("order", lambda c: c[0] == tuple(range(c[0][0], c[0][0] + len(c[0]))) and c[8][1:] == c[9][:-1])
    known: dict[str, int] = {}

    def versions(c: tuple[Any, ...]) -> None:
        get = known.get
        for stream, version in zip(c[2], c[3], strict=True):
            assert version == get(stream, 0) + 1
            known[stream] = version

    part("versions", versions)

    def instants_(c: tuple[Any, ...]) -> bool:
        texts = list({*c[5], *c[6]})
        parsed = dict(zip(texts, instants.parse_instants(texts), strict=True)).__getitem__
        return (
            list(c[11]) == sorted(c[11])
            and tuple(map(parsed, c[6])) == c[11]
            and tuple(map(parsed, c[5])) == c[10]
        )

    part("instants", instants_)

    def strings(c: tuple[Any, ...]) -> bool:
        text = "".join(c[1]) + "".join(c[5]) + "".join(c[6]) + "".join(c[2]) + "".join(c[4])
        return verify._verbatim(text) and set(map(type, c[3])) == {int}

    part("strings", strings)
    body = verify._BODY
    part(
        "bodies",
        lambda c: bodies.append(
            [(body % r).encode() for r in zip(c[7], c[1], c[5], c[6], c[0], c[2], c[3], c[4], strict=True)]
        ),
    )
    page = iter(bodies)
    part("blake3", lambda c: verify._chained(c[8][0], next(page), c[9]))
    sha256 = hashlib.sha256
    page = iter(bodies)
    part("leaves", lambda c: leaves.append([sha256(b"\x00" + b).digest() for b in next(page)]))
    tree = CompactRange()
    page = iter(leaves)
    part("tree", lambda c: tree.extend(next(page), 4))
    return out


def one(db: str, runs: int) -> dict[str, Any]:
    """This process's code: the best of `runs` of each figure, in CPU seconds, and the events."""
    from bench.baselines import bare_chain

    pages = _pages(db)
    events = sum(map(len, pages))
    best: dict[str, float] = {}
    for _ in range(runs):
        got = {"chain_step": chain_step(db, pages), "bare_in_memory": bare(pages),
               "bare_with_reads": float(bare_chain(Path(db))["cpu_seconds"])}  # fmt: skip
        got |= {f"part.{k}": v for k, v in (parts(pages) or {}).items()}
        best = {k: min(v, best.get(k, v)) for k, v in got.items()}
    return {"events": events, "cpu_seconds": {k: round(v, 4) for k, v in best.items()}}


def _us(out: dict[str, Any]) -> dict[str, Any]:
    n = out["events"]
    s = out["cpu_seconds"]
    return {
        "events": n,
        "us_per_event": {k: round(v / n * 1e6, 3) for k, v in s.items()},
        "chain_step_over_bare_with_reads": round(s["bare_with_reads"] / s["chain_step"], 3),
        "chain_step_over_bare_in_memory": round(s["bare_in_memory"] / s["chain_step"], 3),
    }


def main() -> None:
    """Measure DB with this checkout (and `--before DIR`, interleaved); print JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.db, args.runs)))
        return
    codes = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    results: dict[str, list[dict[str, Any]]] = {who: [] for who in codes}
    for _ in range(args.runs):
        for who, code in codes.items():
            proc = subprocess.run(
                # this file, run by its path: the other checkout need not have it
                [sys.executable, str(Path(__file__).resolve()), args.db, "--runs", "1", "--one"],
                capture_output=True, text=True, check=True, cwd=code,
                env={**os.environ, "PYTHONPATH": str(code)},
            )  # fmt: skip
            results[who].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = {}
    for who, runs in results.items():
        keys = runs[0]["cpu_seconds"]
        best = {k: min(r["cpu_seconds"][k] for r in runs) for k in keys}
        out[who] = _us({"events": runs[0]["events"], "cpu_seconds": best})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

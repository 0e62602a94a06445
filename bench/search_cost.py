"""What the title search costs: nothing in an append (no statement of it runs there), and, in the first
search after appends, indexing the events they added; measured beside the appends themselves.

On a synthetic ledger of `--events` (bench/synth.py, the shapes of the real record), the same 1000-event
batches are appended to two copies, alternating; in one copy each batch is followed by indexing its
events (what an append would pay if it kept the index itself). Reported: the append's median time a
batch, the indexing's median a batch and its share of the append, the statements an append runs that
touch the search tables (0), the first search of the whole ledger (indexing every title), and a search
of an indexed ledger (p50).

    .venv/bin/python -m bench.search_cost [--events 100000] [--batches 20] [--db-dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench import library, pools
from ledger.storage.sql_store import SqlStore
from service.ledger import Ledger
from service.search import search


def _fresh_copy(base: Path, name: str) -> Path:
    target = base.with_name(name)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copy(base, target)
    return target


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--db-dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.db_dir or Path(tempfile.mkdtemp(prefix="ledger-search-cost-"))
    base = folder / "base.db"
    built = library.build(base, args.events, 0)
    print(f"built {built['head']} events in {built['seconds']} s")

    plain = Ledger(_fresh_copy(base, "plain.db"))
    indexed = Ledger(_fresh_copy(base, "indexed.db"))
    start = time.perf_counter()
    indexed.store.search.index_titles(indexed.head().seq)
    first_index = time.perf_counter() - start

    work = pools.batches(built["next_paper"], args.batches)
    appends: list[float] = []
    indexing: list[float] = []
    touched = 0
    trace: list[str] = []
    traced = plain.store
    assert isinstance(traced, SqlStore)
    traced.trace = trace
    for batch in work:
        t = time.perf_counter()
        plain.append(batch)
        appends.append(time.perf_counter() - t)
        touched += sum("search_" in sql for sql in trace)
        trace.clear()
        head = indexed.append(batch).head.seq
        t = time.perf_counter()
        indexed.store.search.index_titles(head)
        indexing.append(time.perf_counter() - t)
    traced.trace = None

    samples = []
    for _ in range(50):
        t = time.perf_counter()
        search(indexed, "memory training")
        samples.append(time.perf_counter() - t)
    titles = indexed.store.stats()["search_titles"]
    append_ms = statistics.median(appends) * 1000
    index_ms = statistics.median(indexing) * 1000
    print(f"ledger: {indexed.head().seq} events, {titles} distinct titles indexed")
    print(f"append, 1000-event batch, median of {len(appends)}: {append_ms:.1f} ms; statements on the "
          f"search tables in those appends: {touched}")  # fmt: skip
    print(f"indexing those 1000 events at the next search, median: {index_ms:.2f} ms "
          f"({index_ms / append_ms:.1%} of the append)")  # fmt: skip
    print(f"first search of the whole ledger (indexing {args.events} events): {first_index:.2f} s")
    print(f"search of an indexed ledger, p50 of 50: {statistics.median(samples) * 1000:.2f} ms")


if __name__ == "__main__":
    main()

"""What a screen costs (service/screen.py): it must follow the references it can show, not the size of
the ledger. Measured on both backends, never asserted in tests.

One ledger is built and grown: a core of 2,000 papers (5 references each, one in ten resolved to one of
50 works a Retraction Watch check lists a retraction for; the rest to clean works a Crossref check
covers with no notice) and a paper with 100 references; then filler papers (20 references each,
resolved to works of their own, checked by Crossref with no notice) up to `--small` events, then up to
`--large`. The flagged references are the same at both sizes. At each size:

- the screen of the whole ledger (every page, at the default page size): p50 of `--repeats`;
- the first page of the screen of the 2,000 core papers (a collection's screen) beside one record of the
  100-reference paper (`Ledger.record_bytes`): p50 each, and their ratio;
- the peak of Python's allocations (tracemalloc) during one whole-ledger screen.

    .venv/bin/python -m bench.screen_cost [--small 100000] [--large 1000000] [--backend both]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ledger.model import events as ev
from ledger.model.codec import canonical
from ledger.model.instants import SYSTEM_CLOCK
from service.ledger import Ledger
from service.screen import Query, page_json, screen

CORE = 2_000
CORE_REFS = 5
RETRACTED = 50
FILLER_REFS = 20
BATCH = 1_000  # events appended per batch while building
PAGE = 100  # lines of a page: the default of GET /screen
AT = "2025-06-01T00:00:00Z"


def _work(n: str) -> ev.CitedWork:
    return ev.CitedWork(None, f"10.9999/{n}", "crossref", None, "2025-01-01T00:00:00Z", f"Work {n}",
                        "J. Bench", f"doi:10.9999/{n}", 2024)  # fmt: skip


def _oid(kind: int, paper: int, ref: int) -> str:
    return f"{kind:08x}-{paper >> 16 & 0xFFFF:04x}-4{paper & 0xFFF:03x}-8{ref:03x}-{paper:012x}"


def _paper(pid: str, refs: list[tuple[str, ev.CitedWork]], kind: int, n: int) -> list[ev.Event]:
    out: list[ev.Event] = [
        ev.PaperObserved(observed_at=AT, data=ev.PaperData(pid, f"Paper {pid}", "cs.LG", AT, AT, 1))
    ]
    for i, (status, work) in enumerate(refs):
        oid = _oid(kind, n, i)
        out.append(ev.CitationObserved(observed_at=AT, data=ev.CitationData(oid, pid, i, "pdf_text", None)))
        out.append(
            ev.ResolutionObserved(
                observed_at="2025-06-02T00:00:00Z",
                data=ev.ResolutionData(oid, status, "crossref_match", work, None),  # type: ignore[arg-type]
            )
        )
    return out


def _check(source: str, works: list[str] | None, notices: list[ev.Notice]) -> ev.StandingChecked:
    return ev.StandingChecked(
        observed_at="2025-06-03T00:00:00Z", data=ev.StandingData(source, works, notices)
    )


def core() -> Iterator[list[ev.Event]]:
    """The core papers, the 100-reference paper and the checks over their works, in batches."""
    retracted = [_work(f"retracted.{i}") for i in range(RETRACTED)]
    clean: list[str] = []
    batch: list[ev.Event] = []
    for n in range(CORE):
        refs = []
        for r in range(CORE_REFS):
            if r == 0 and n % 10 == 0:
                refs.append(("verified_exact", retracted[n // 10 % RETRACTED]))
            else:
                w = _work(f"core.{n}.{r}")
                clean.append(str(w.work_id))
                refs.append(("verified_fuzzy" if r % 2 else "verified_exact", w))
        batch += _paper(f"2501.{n + 1:05d}", refs, 1, n)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    hundred = [_work(f"hundred.{r}") for r in range(100)]
    clean += [str(w.work_id) for w in hundred]
    batch += _paper("2503.00001", [("verified_exact", w) for w in hundred], 3, 0)
    notices = [
        ev.Notice(
            str(w.work_id), "retraction", f"10.9999/notice.{i}", None, "Retraction", [], "2025-05-01", None
        )
        for i, w in enumerate(retracted)
    ]
    batch += [_check("retraction_watch", None, notices), _check("crossref", sorted(clean), [])]
    yield batch


def filler(start: int) -> Iterator[list[ev.Event]]:
    """Papers of 20 references resolved to clean works, each 50 with a Crossref check of their works."""
    n = start
    while True:
        batch: list[ev.Event] = []
        works: list[str] = []
        while len(batch) < BATCH:
            refs = [("verified_exact", _work(f"filler.{n}.{r}")) for r in range(FILLER_REFS)]
            works += [str(w.work_id) for _, w in refs]
            batch += _paper(f"{2600 + n // 99_999}.{n % 99_999 + 1:05d}", refs, 2, n)
            n += 1
        batch.append(_check("crossref", sorted(works), []))
        yield batch


def grow(ledger: Ledger, to: int, batches: Iterator[list[ev.Event]]) -> float:
    """Append batches until the ledger holds `to` events; seconds taken."""
    start = time.perf_counter()
    while ledger.head().seq < to:
        ledger.append(next(batches), resolver_events=True)
    return time.perf_counter() - start


def p50(fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of `repeats` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def whole_screen(ledger: Ledger, t: int) -> int:
    """Every page of the whole ledger's screen, encoded as GET /screen sends it; lines read."""
    token, lines = None, 0
    while True:
        page = screen(ledger.store, Query(None, t), token, PAGE)
        canonical(page_json(page))
        lines += len(page.items)
        token = page.next_page
        if token is None:
            return lines


def figures(ledger: Ledger, t: int) -> dict[str, Callable[[], Any]]:
    """What is timed at one size, each a call."""
    members = frozenset(f"2501.{n + 1:05d}" for n in range(CORE))
    return {
        "whole_screen_ms": lambda: whole_screen(ledger, t),
        "collection_first_page_ms": lambda: canonical(
            page_json(screen(ledger.store, Query(members, t), None, PAGE))
        ),
        "record_ms": lambda: ledger.record_bytes("2503.00001", t),
    }


def measure(ledgers: list[Ledger], repeats: int) -> list[dict[str, Any]]:
    """The figures at each size, the sizes taken in turn within each repeat (so a change in the
    machine's load falls on both alike): medians, and the peak of Python's allocations in one screen."""
    t = SYSTEM_CLOCK.now_us()
    calls = [figures(ledger, t) for ledger in ledgers]
    samples: list[dict[str, list[float]]] = [{name: [] for name in c} for c in calls]
    for c in calls:
        for fn in c.values():
            fn()  # warm
    for _ in range(repeats):
        for c, got in zip(calls, samples, strict=True):
            for name, fn in c.items():
                start = time.perf_counter()
                fn()
                got[name].append(time.perf_counter() - start)
    out = []
    for ledger, got in zip(ledgers, samples, strict=True):
        row: dict[str, Any] = {"events": ledger.head().seq, "flagged_lines": whole_screen(ledger, t)}
        row.update({name: round(statistics.median(v) * 1000, 2) for name, v in got.items()})
        row["first_page_over_record"] = round(row["collection_first_page_ms"] / row["record_ms"], 2)
        tracemalloc.start()
        whole_screen(ledger, t)
        row["screen_peak_kb"] = tracemalloc.get_traced_memory()[1] // 1024
        tracemalloc.stop()
        out.append(row)
    return out


def run(
    small_db: str, copy: _Copy, small: int, large: int, repeats: int, settle: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Build `small`, copy it, grow the copy to `large`, measure both in turn."""
    ledger = Ledger(small_db, synchronous="OFF")
    for batch in core():
        ledger.append(batch, resolver_events=True)
    more = filler(0)
    took = grow(ledger, small, more)
    print(f"  built {ledger.head().seq} events in {took:.0f} s", flush=True)
    ledger.close()
    big = Ledger(copy(), synchronous="OFF")
    took = grow(big, large, more)
    print(f"  grew a copy to {big.head().seq} events in {took:.0f} s", flush=True)
    big.close()
    for db in (small_db, copy.made):
        settle(db)
    ledgers = [Ledger(small_db), Ledger(copy.made)]
    try:
        out = measure(ledgers, repeats)
    finally:
        for ledger in ledgers:
            ledger.close()
    for row in out:
        print(f"  {row}", flush=True)
    a, b = out
    print(
        f"  at {b['events']} over at {a['events']}: whole screen "
        f"{b['whole_screen_ms'] / a['whole_screen_ms']:.2f}x, collection's first page "
        f"{b['collection_first_page_ms'] / a['collection_first_page_ms']:.2f}x, record "
        f"{b['record_ms'] / a['record_ms']:.2f}x; peak memory "
        f"{b['screen_peak_kb']} KB vs {a['screen_peak_kb']} KB",
        flush=True,
    )
    return out


class _Copy:
    """A copy of the small ledger, made once: a file copy (SQLite) or a database from it as template."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make
        self.made = ""

    def __call__(self) -> str:
        self.made = self._make()
        return self.made


def main() -> None:
    """Measure on each backend asked for and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    if args.backend in ("sqlite", "both"):
        print("SQLite", flush=True)
        folder = Path(tempfile.mkdtemp(prefix="ledger-screen-cost-"))
        small = folder / "small.db"

        def file_copy() -> str:
            shutil.copy(small, folder / "large.db")
            return str(folder / "large.db")

        run(str(small), _Copy(file_copy), args.small, args.large, args.repeats, lambda db: None)
        shutil.rmtree(folder)
    if args.backend in ("postgresql", "both"):
        import psycopg

        from tests.pg_harness import PgCluster

        print("PostgreSQL", flush=True)
        cluster = PgCluster.start()
        try:
            url = cluster.create_db()
            name = url.rsplit("/", 1)[1]

            def template_copy() -> str:
                with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}_large" TEMPLATE "{name}"')
                return url.rsplit("/", 1)[0] + f"/{name}_large"

            def settle(db: str) -> None:
                # the statistics and visibility autovacuum would reach on a ledger at rest (as bench/pg.py
                # leaves its sizes): the planner plans by them
                with psycopg.connect(db, autocommit=True) as conn:
                    conn.execute("VACUUM (ANALYZE)")
                    conn.execute("CHECKPOINT")

            run(url, _Copy(template_copy), args.small, args.large, args.repeats, settle)
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()

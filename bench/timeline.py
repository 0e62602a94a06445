"""The timeline of a paper with 5,000 events over three years: page and timeline render time.

The ledger: tests/timeline_history.py (four snapshots, 60 references re-resolved thousands of times,
two sources checking weekly with notices, 15 citing papers, openalex and semantic_scholar counts).
Measured over HTTP in process (TestClient, one request at a time), p50 of --runs requests:

- the record page (`/paper/{id}/citation-record?as_of=...`, its timeline at the top) and the paper
  page (`/paper/{id}?as_of=...`), each with the timeline cache emptied before every request (cold: the
  timeline is read and folded each time, as after every append), and with it kept (warm: the slider's
  loads and repeated views at one head);
- the parts: the timeline read and fold alone (`Ledger.timeline`), the charts alone
  (`render_timeline`), the record alone (`Ledger.record`);
- the bytes: the three SVG charts together (target < 200 kB) and the whole page.

Target (issue 18): page and timeline under 150 ms at p50 for this paper.

    .venv/bin/python -m bench.timeline [--runs 25] [--db PATH] [--out bench/timeline.txt]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.app import create_app, install_state, settle_heap
from api.records.timeline import render_timeline
from api.records.timeline_cache import TimelineCache
from api.settings import Settings
from api.state import state_of
from ledger.model.instants import parse_ts
from service.ledger import Ledger
from tests.timeline_history import PAPER, TOTAL, history

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

AS_OF = "2025-06-01T00:00:00Z"  # mid-way: the cursor, the record and the slider somewhere inside
TARGET_MS = 150.0
MAX_SVG = 200_000


def build(db: str) -> None:
    """The synthetic paper's 5,000 events, 1,000 per append."""
    ledger = Ledger(db)
    if ledger.head().seq == 0:
        events = history().events
        for i in range(0, len(events), 1000):
            ledger.append(events[i : i + 1000])
    assert ledger.head().seq == TOTAL, f"{db} holds {ledger.head().seq} events, not the {TOTAL} of the paper"
    ledger.close()


def p50(fn: Callable[[], Any], runs: int) -> tuple[float, float]:
    """(p50, min) of `runs` calls, in ms, after one call to warm the process."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def _ms(figures: tuple[float, float]) -> str:
    return f"{figures[0]:.1f} ms ({figures[1]:.1f})"


def measure(db: str, runs: int) -> list[tuple[str, str]]:
    """The figures, as (what, value) rows."""
    app = create_app(Settings(db=db))
    client = TestClient(app)
    settle_heap()  # as `ledger serve` does at start-up, before its first request
    ledger: Ledger = state_of(app).ledger
    record_url = f"/paper/{PAPER}/citation-record?as_of={AS_OF}"
    paper_url = f"/paper/{PAPER}?as_of={AS_OF}"

    def cold(url: str) -> Callable[[], Any]:
        def get() -> Any:
            install_state(app, dataclasses.replace(state_of(app), timeline_cache=TimelineCache()))
            r = client.get(url)
            assert r.status_code == 200, r.text[:200]
            return r

        return get

    def warm(url: str) -> Callable[[], Any]:
        return lambda: client.get(url)

    rows: list[tuple[str, str]] = []
    for name, url in (("record page", record_url), ("paper page", paper_url)):
        for kind, fn in (("cold", cold(url)), ("warm", warm(url))):
            mid, low = p50(fn, runs)
            verdict = "ok" if mid < TARGET_MS else "MISS"
            rows.append((f"{name} + timeline, {kind}, p50 (min)", f"{mid:.1f} ms ({low:.1f}) {verdict}"))
    timeline, _ = ledger.records.timeline(PAPER)
    rows.append(
        (
            "timeline read and fold alone, p50 (min)",
            _ms(p50(lambda: ledger.records.timeline(PAPER), runs)),
        )
    )
    t = parse_ts(AS_OF)
    rows.append(("charts alone, p50 (min)", _ms(p50(lambda: render_timeline(timeline, t), runs))))
    rows.append(("record alone, p50 (min)", _ms(p50(lambda: ledger.record(PAPER, t), runs))))
    rendered = render_timeline(timeline, t)
    page = client.get(record_url).content
    verdict = "ok" if rendered.size < MAX_SVG else "MISS"
    rows.append(("instants, marks drawn", f"{len(timeline.instants)}, {len(rendered.event_rows)}"))
    rows.append(("SVG charts together", f"{rendered.size / 1000:.1f} kB {verdict}"))
    rows.append(("record page", f"{len(page) / 1000:.1f} kB"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--db", default=None, help="a ledger to build into (default: a temporary file)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "timeline.db")
        start = time.perf_counter()
        build(db)
        built = time.perf_counter() - start
        rows = measure(db, args.runs)
    width = max(len(what) for what, _ in rows)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"arXiv:{PAPER}: {TOTAL} events over three years (built in {built:.1f} s); {args.runs} runs each",
        f"load average after (1 / 5 / 15 min, {os.cpu_count()} cores): {load}",
    ]
    lines += [f"{what:<{width}}  {value}" for what, value in rows]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

"""A paper cited 100,000 times against the same paper cited 30 times, in one ledger and one run.

The ledger: the real record of arXiv:2509.02480 (tests/data), then 100,000 synthetic papers that each
cite it once (paper.observed, citation.observed, resolution.observed verified_exact): the first 30 at
T30, the rest after. So "as of T30" and "as of T100k" are the same paper, the same outbound references
and the same ledger, with 30 (+ the record's own) or 100,000 inbound observations.

Measured (issue 15 targets): record JSON and page p50 over HTTP (in-process TestClient), peak RSS of
`ledger record` in a subprocess, the integrity report's first page (time, bytes), `ledger diff` against
the record's time, and what keeping the inbound spans costs an append (the same 1000-event batches
into two fresh ledgers, with and without the spans' statements, alternating).

    .venv/bin/python -m bench.fanin [--citing 100000] [--out bench/fanin.txt]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from bench.synth import FIXTURE
from ledger.model import events as ev
from ledger.model.instants import format_as_of, parse_ts
from service.ledger import Ledger

PID = "2509.02480"
T30 = "2026-08-20T00:00:00Z"  # the first 30 citations are observed before this
T_ALL = "2026-09-30T00:00:00Z"  # every citation is observed before this
BATCH = 3000  # events per append while building


def _citing(n: int) -> str:
    return f"{2601 + n // 99_999}.{n % 99_999 + 1:05d}"


def _oid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def citing_events(n: int) -> list[ev.Event]:
    """Paper n and its one citation of PID, resolved to it."""
    day = "2026-08-1" if n < 30 else "2026-09-1"
    at = f"{day}{n % 10}T{n % 24:02d}:00:00Z"
    pid = _citing(n)
    return [
        ev.PaperObserved(
            data=ev.PaperData(
                arxiv_id=pid,
                title=f"Citing paper {n}",
                primary_category="cs.LG",
                submitted_at="2026-01-01T00:00:00Z",
                last_updated="2026-01-01T00:00:00Z",
                version=1,
            ),
            observed_at=at,
        ),
        ev.CitationObserved(
            data=ev.CitationData(
                observation_id=_oid(n),
                citing_arxiv_id=pid,
                reference_index=n % 40,
                source="pdf_text",
                cited_work=None,
            ),
            observed_at=at,
        ),
        ev.ResolutionObserved(
            data=ev.ResolutionData(
                observation_id=_oid(n),
                status="verified_exact",
                resolver_source="local_arxiv",
                cited_work=None,
                cited_arxiv_id=PID,
            ),
            observed_at=at,
        ),
    ]


def _batches(citing: int) -> Iterator[list[ev.Event]]:
    batch: list[ev.Event] = []
    for n in range(citing):
        batch += citing_events(n)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def build(db: Path, citing: int) -> float:
    """The ledger of this benchmark; returns events per second of the build."""
    ledger = Ledger(db, synchronous="NORMAL")
    ledger.import_bytes(FIXTURE.read_bytes())
    start, events = time.perf_counter(), 0
    for batch in _batches(citing):
        ledger.append(batch)
        events += len(batch)
    rate = events / (time.perf_counter() - start)
    ledger.close()
    return rate


def p50(fn: Callable[[int], Any], n: int = 15) -> float:
    """Median seconds of `n` calls fn(i) (after one warm-up call)."""
    fn(n)
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _miss(at: str, i: int) -> str:
    """`at` moved by i microseconds: the same record, never a record-cache hit."""
    return format_as_of(parse_ts(at) - i)


def peak_rss_mb(args: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one `ledger ...` subprocess."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        f"subprocess.run({args!r}, check=True, stdout=subprocess.DEVNULL); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    seconds, mb = out.split()
    return float(seconds), float(mb)


def measure(db: Path, at: str, say: Callable[[str], None]) -> dict[str, float]:
    """Record, page, integrity and diff figures of PID as of `at` in ledger `db`."""
    ledger = Ledger(db)
    client = TestClient(create_app(Settings(db=str(db))))
    t = parse_ts(at)
    rec, _, _ = ledger.record(PID, t)
    inbound = next(c for c in rec.coverage if c.lane == "inbound_itemization").denominator
    json_url, page_url = f"/paper/{PID}/citation-record.json", f"/paper/{PID}/citation-record"
    r: dict[str, float] = {"inbound": inbound}
    r["record_lib"] = p50(lambda i: ledger.record_bytes(PID, t))
    r["json"] = p50(lambda i: client.get(json_url, params={"as_of": _miss(at, i)}))
    r["page"] = p50(lambda i: client.get(page_url, params={"as_of": _miss(at, i)}))
    integrity = client.get(f"/paper/{PID}/integrity", params={"as_of": at})
    r["integrity"] = p50(lambda i: client.get(f"/paper/{PID}/integrity", params={"as_of": at}), 5)
    r["integrity_mb"] = len(integrity.content) / 1e6
    r["integrity_pages"] = integrity.json()["page"]["pages"]
    r["diff"] = p50(lambda i: ledger.records.changes(PID, parse_ts("2026-08-01T00:00:00Z"), t), 5)
    cli = str(Path(sys.executable).parent / "ledger")
    r["cli_diff_s"], r["cli_diff_mb"] = peak_rss_mb([cli, "diff", PID, "2026-08-01", at, "--db", str(db)])
    r["cli_record_s"], r["cli_record_mb"] = peak_rss_mb([cli, "record", PID, "--as-of", at, "--db", str(db)])
    say(
        f"{db.name} as of {at}: {inbound:,} inbound; record {r['record_lib'] * 1e3:.1f} ms, JSON p50 "
        f"{r['json'] * 1e3:.1f} ms, page p50 {r['page'] * 1e3:.1f} ms (record-cache misses), integrity p1 "
        f"{r['integrity'] * 1e3:.0f} ms ({r['integrity_mb']:.2f} MB, {r['integrity_pages']:.0f} pages), "
        f"diff from 2026-08-01 {r['diff'] * 1e3:.1f} ms; `ledger record` {r['cli_record_s']:.2f} s "
        f"{r['cli_record_mb']:.0f} MB, `ledger diff` {r['cli_diff_s']:.2f} s {r['cli_diff_mb']:.0f} MB"
    )
    ledger.close()
    return r


def spans_cost(workdir: Path, events: int = 60_000) -> dict[str, float]:
    """Append rate of the same batches with the spans projected after each and without (alternating
    ledgers): what the spans' projection costs an appender that keeps it at the head."""
    from ledger.storage.projector import READ_BY_RECORDS, catch_up

    with_spans = Ledger(workdir / "with.db")
    without = Ledger(workdir / "without.db")
    times = {"with": 0.0, "without": 0.0}
    batches = list(_batches(events // 3))
    for batch in batches:
        for name, ledger in (("with", with_spans), ("without", without)):
            t = time.perf_counter()
            ledger.append(batch)
            if name == "with":
                catch_up(ledger.store, READ_BY_RECORDS)
            times[name] += time.perf_counter() - t
    total = sum(len(b) for b in batches)
    return {k: total / v for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citing", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    with tempfile.TemporaryDirectory() as tmp:
        small, db = Path(tmp) / "small.db", Path(tmp) / "fanin.db"
        build(small, 30)
        rate = build(db, args.citing)
        say(
            f"built: the record's events + {args.citing:,} citing papers ({3 * args.citing:,} events), "
            f"{rate:,.0f} ev/s; and a ledger of the record's events + 30 citing papers"
        )
        client = TestClient(create_app(Settings(db=str(db))))
        results = {
            "30": measure(small, T_ALL, say),
            "30 early": measure(db, T30, say),
            "all": measure(db, T_ALL, say),
        }
        a, b = results["30"], results["all"]
        say(
            f"ratios all/30 (own ledger): record {b['record_lib'] / a['record_lib']:.2f}x, JSON "
            f"{b['json'] / a['json']:.2f}x (target <= 1.5), page {b['page'] / a['page']:.2f}x (<= 1.5), "
            f"`ledger record` peak RSS {b['cli_record_mb'] - a['cli_record_mb']:+.0f} MB (< 20); "
            f"integrity first page {b['integrity']:.2f} s (<= 1), {b['integrity_mb']:.2f} MB (< 10); "
            f"diff / record {b['diff'] / b['record_lib']:.2f}x in process, `ledger diff` / `ledger record` "
            f"{b['cli_diff_s'] / b['cli_record_s']:.2f}x ({b['cli_diff_mb']:.0f} MB) (<= 1.5)"
        )
        last = client.get(
            f"/paper/{PID}/integrity", params={"as_of": T_ALL, "page": int(b["integrity_pages"])}
        )
        say(f"integrity last page: {len(last.content) / 1e6:.2f} MB, ok={last.json()['ok']}")
        cost = spans_cost(Path(tmp))
        say(
            f"append of 1000-event-ish batches (60,000 events, fresh ledgers, alternating): with spans "
            f"{cost['with']:,.0f} ev/s, without {cost['without']:,.0f} ev/s "
            f"({cost['with'] / cost['without']:.2f})"
        )
        say(f"measured {format_as_of(parse_ts(time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())))}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""`ledger resolve --all` throughput (issue 30: >= 500 references/s on SQLite): a ledger holding the
evaluation catalogue and the test split's references as citation.observed events (a citing paper per 50
references), resolved by the CLI; prints references per second.

    python -m bench.resolver.resolve_throughput --db /tmp/bench.db [--build]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
from click.testing import CliRunner

from entry.main import main as cli
from ledger.model import events as ev
from ledger.model.works import Reference
from service.ledger import Ledger
from service.resolver import pool

DATA = Path(__file__).parent / "data"
PER_PAPER = 50
AT = "2026-01-01T00:00:00Z"


def citations(rows: list[dict[str, Any]], per_paper: int = PER_PAPER) -> list[ev.Event]:
    """A citing paper per `per_paper` reference rows, each row a citation.observed carrying its
    Crossref reference object as rendered."""
    out: list[ev.Event] = []
    for n, r in enumerate(rows):
        citing = f"2601.{n // per_paper:05d}"
        if n % per_paper == 0:
            out.append(ev.PaperObserved(observed_at=AT, data=ev.PaperData(
                citing, f"Citing paper {n // per_paper}", "cs.DL", AT, AT, 1)))  # fmt: skip
        ref = msgspec.convert(r["reference"], Reference)
        oid = str(uuid.uuid5(uuid.NAMESPACE_URL, r["id"]))
        data = ev.CitationData(oid, citing, n % per_paper, "pdf_text", None, ref)
        out.append(ev.CitationObserved(observed_at=AT, data=data))
    return out


def build(db: str, split: str = "test", limit: int = 5000) -> int:
    """Ingest the catalogue and append the references as citations; returns how many."""
    run = CliRunner().invoke(
        cli, ["ingest", "works", str(DATA / "catalogue.ndjson.gz"), "--observed-at", AT, "--db", db]
    )
    if run.exit_code != 0:
        raise SystemExit(run.output)
    with gzip.open(DATA / "references.jsonl.gz", "rt") as f:
        rows = [r for r in map(json.loads, f) if r["split"] == split][:limit]
    events = citations(rows)
    ledger = Ledger(db)
    for i in range(0, len(events), 1000):
        ledger.append(events[i : i + 1000])
    ledger.close()
    return len(rows)


def run_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", required=True)
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--limit", type=int, default=5000)
    ap.add_argument("--write", action="store_true", help="append the resolutions (default: --dry-run)")
    ap.add_argument("--workers", type=int, help="decide on this many processes (default: pool.WORKERS)")
    a = ap.parse_args()
    if a.workers is not None:
        pool.WORKERS = a.workers
    if a.build:
        print("built", build(a.db, limit=a.limit))
    t = time.perf_counter()
    args = ["resolve", "--all", "--db", a.db] + ([] if a.write else ["--dry-run"])
    run = CliRunner().invoke(cli, args)
    dt = time.perf_counter() - t
    first = run.output.splitlines()[0] if run.output else run.exception
    n = int(str(first).split()[1].rstrip(","))
    print(first)
    print(f"{n} references in {dt:.1f}s: {n / dt:.0f} refs/s")


if __name__ == "__main__":
    run_main()

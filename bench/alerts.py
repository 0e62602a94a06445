"""What standing alerts cost an ingest: a 50,000-row Retraction Watch file into a ledger with 10,000
watched papers, against the same ingest into the same ledger with no watch, each in its own process.

The ledger: 10,000 papers, each citing 3 works with DOIs (40,000 events). The file: 50,000 rows, 2,000 of
them naming a cited work's DOI (a retraction each), the rest works the ledger does not know. With the
watches, the ingest's append raises its alerts before it returns (Ledger.append, as the CLI runs it),
so the time measured holds both.

    .venv/bin/python -m bench.alerts
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.util import DATA, PYTHON, copy_db, remove_db, vm_hwm_kb
from ledger.model.events import CitationData, CitationObserved, CitedWork, Event, PaperData, PaperObserved
from service.alerts import alerts as al
from service.alerts.watch_spec import parse_watch
from service.ledger import Ledger
from service.sources import SourceFile, ingest

PAPERS = 10_000
REFS = 3
ROWS = 50_000
MATCHED = 2_000
AT = "2026-01-01T00:00:00Z"
T_INGEST = "2026-06-01T00:00:00Z"
HEADER = (
    "Record ID,Title,Subject,Institution,Journal,Publisher,Country,Author,URLS,ArticleType,RetractionDate,"
    "RetractionDOI,RetractionPubMedID,OriginalPaperDate,OriginalPaperDOI,OriginalPaperPubMedID,"
    "RetractionNature,Reason,Paywalled,Notes"
)


def _paper(i: int) -> str:
    return f"2401.{i:05d}"


def _doi(i: int, r: int) -> str:
    return f"10.5555/bench.{i}.{r}"


def build(db: Path) -> None:
    """The ledger of PAPERS papers citing REFS works each, appended 1000 events a batch."""
    ledger = Ledger(db, synchronous="OFF")
    batch: list[Event] = []
    for i in range(PAPERS):
        batch.append(
            PaperObserved(observed_at=AT, data=PaperData(_paper(i), f"Paper {i}", "cs.DL", AT, AT, 1))
        )
        for r in range(REFS):
            work = CitedWork(
                None, _doi(i, r), "crossref", None, AT, f"Work {i}.{r}", None, f"w-{i}-{r}", 2020
            )
            oid = str(uuid.UUID(int=i * REFS + r + 1))
            batch.append(CitationObserved(observed_at=AT, data=CitationData(oid, _paper(i), r, "pdf", work)))
        if len(batch) >= 1000:
            ledger.append(batch, typed=True)
            batch = []
    if batch:
        ledger.append(batch, typed=True)
    ledger.close()


def retraction_watch_file() -> bytes:
    """ROWS rows, MATCHED of them retracting a cited work (spread over the papers)."""
    lines = [HEADER]
    step = PAPERS // MATCHED
    for n in range(ROWS):
        doi = _doi(n * step, 0) if n < MATCHED else f"10.9999/unknown.{n}"
        dates = f"1/2/2025 0:00,10.1/notice.{n},0,1/1/2020 0:00"
        lines.append(f"{n},Title {n},,,J,P,,A,,Article;,{dates},{doi},0,Retraction,+Error;,No,")
    return ("\n".join(lines) + "\n").encode()


def measure(db: str, file: str) -> dict[str, object]:
    """One ingest of the file into the ledger, in this process: seconds, alerts raised, peak RSS."""
    ledger = Ledger(db)
    body = Path(file).read_bytes()
    start = time.perf_counter()
    summary = ingest(ledger, SourceFile("retraction-watch", body, T_INGEST))
    seconds = time.perf_counter() - start
    alerts = ledger.store.alerts.last_n()
    return {"seconds": round(seconds, 3), "notices": summary.notices, "alerts": alerts,
            "peak_rss_mb": round((vm_hwm_kb() or 0) / 1024, 1)}  # fmt: skip


def _run(db: Path, file: Path) -> dict[str, object]:
    out = subprocess.run([PYTHON, "-m", "bench.alerts", "measure", str(db), str(file)], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    """Build once, watch every paper in one copy, and time the same ingest into each copy (best of 3)."""
    if len(sys.argv) > 1 and sys.argv[1] == "measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
        return
    DATA.mkdir(parents=True, exist_ok=True)
    base, watched = DATA / "alerts-base.db", DATA / "alerts-watched.db"
    file = DATA / "alerts-rw.csv"
    if not base.exists():
        build(base)
    file.write_bytes(retraction_watch_file())
    if not watched.exists():
        copy_db(base, watched)
        ledger = Ledger(watched, synchronous="OFF")
        start = time.perf_counter()
        for i in range(PAPERS):
            al.add_watch(ledger.store, ledger.clock, parse_watch({"arxiv_id": _paper(i)}))
        print(f"{PAPERS:,} watches made in {time.perf_counter() - start:.1f} s", flush=True)
        ledger.close()
    runs: dict[str, list[dict[str, object]]] = {"no watch": [], "10,000 watches": []}
    for _ in range(3):
        for name, src in (("no watch", base), ("10,000 watches", watched)):
            copy = DATA / "alerts-run.db"
            copy_db(src, copy)
            runs[name].append(_run(copy, file))
            remove_db(copy)
    best = {name: min(r, key=lambda x: float(x["seconds"])) for name, r in runs.items()}  # type: ignore[arg-type]
    for name, r in best.items():
        what = f"{r['notices']} notices, {r['alerts']} alerts, peak RSS {r['peak_rss_mb']} MB"
        print(f"{name:>15}: {r['seconds']} s, {what}")
    ratio = float(best["10,000 watches"]["seconds"]) / float(best["no watch"]["seconds"])  # type: ignore[arg-type]
    size = f"file {len(file.read_bytes()):,} bytes, {ROWS:,} rows"
    print(f"with watches over without: {ratio:.2f} (target <= 1.5); {size}")


if __name__ == "__main__":
    main()

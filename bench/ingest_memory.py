"""Generate a 100k-row Retraction Watch CSV and print the peak memory and time of ingesting it.

    .venv/bin/python bench/ingest_memory.py [--rows N] [--keep DIR]

Two runs over a ledger holding the fixture record: one under tracemalloc (peak of Python
allocations during the ingest), one without (wall time, and the process's peak RSS).
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.ledger import Ledger  # noqa: E402
from service.sources import SourceFile, ingest  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "2509.02480.record.json"
HEADER = [
    "Record ID", "Title", "Subject", "Institution", "Journal", "Publisher", "Country", "Author", "URLS",
    "ArticleType", "RetractionDate", "RetractionDOI", "RetractionPubMedID", "OriginalPaperDate",
    "OriginalPaperDOI", "OriginalPaperPubMedID", "RetractionNature", "Reason", "Paywalled", "Notes",
]  # fmt: skip
NATURES = ["Retraction"] * 8 + ["Correction", "Expression of concern"]


def write_csv(path: Path, rows: int) -> None:
    """Rows shaped like the real export (BOM, trailing comma, lists); one names the fixture's arXiv work."""
    with path.open("w", encoding="utf-8-sig", newline="") as f:
        w = csv.writer(f)
        w.writerow([*HEADER, ""])
        for i in range(rows):
            doi = "10.48550/arXiv.2310.04610" if i == rows // 2 else f"10.5555/bench.{i:07d}"
            w.writerow(
                [
                    str(10000 + i),
                    f"Generated article {i}: an invented study of nothing in particular",
                    "(BLS) Biology - Cellular;(HSC) Medicine - Oncology;",
                    "Department of Examples, Invented University, Somewhere;Second Institute, Elsewhere;",
                    "Journal of Generated Results",
                    "Example Publisher",
                    "Nowhere;Elsewhere",
                    "A. Author;B. Author;C. Author;D. Author",
                    f"https://example.org/rw/{i};https://example.org/n/{i}",
                    "Research Article;",
                    f"{i % 12 + 1}/{i % 28 + 1}/{2000 + i % 25} 0:00",
                    "unavailable" if i % 7 == 0 else f"10.5555/notice.{i:07d}",
                    str(30000000 + i),
                    f"{i % 12 + 1}/1/{1990 + i % 30} 0:00",
                    doi,
                    str(20000000 + i),
                    NATURES[i % len(NATURES)],
                    "+Concerns/Issues About Data;+Investigation by Journal/Publisher;+Paper Mill;",
                    "No",
                    "",
                    "",
                ]  # fmt: skip
            )


def main() -> None:
    """Generate, ingest twice, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the CSV and ledgers here and keep them")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(work, args.rows)
    finally:
        if args.keep is None:
            shutil.rmtree(work)


def run(work: Path, rows: int) -> None:
    """The two measured ingests of a generated file in `work`."""
    path = work / "retraction_watch.csv"
    write_csv(path, rows)
    size = path.stat().st_size
    print(f"generated {rows} rows, {size / 1e6:.1f} MB: {path}")

    traced = Ledger(work / "traced.db", synchronous="OFF")
    traced.import_bytes(FIXTURE.read_bytes())
    tracemalloc.start()
    summary = ingest(traced, SourceFile("retraction-watch", path, "2026-09-01T12:00:00Z"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"tracemalloc peak during ingest: {peak / 1e6:.2f} MB ({peak / size:.1%} of the file)")
    print("summary:", "; ".join(summary.lines()))

    timed = Ledger(work / "timed.db", synchronous="OFF")
    timed.import_bytes(FIXTURE.read_bytes())
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    ingest(timed, SourceFile("retraction-watch", path, "2026-09-01T12:00:00Z"))
    elapsed = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"ingest time: {elapsed:.2f} s ({rows / elapsed:,.0f} rows/s, {size / 1e6 / elapsed:.1f} MB/s)")
    print(f"peak RSS: {rss_after / 1024:.1f} MB (before this ingest {rss_before / 1024:.1f} MB)")


if __name__ == "__main__":
    main()

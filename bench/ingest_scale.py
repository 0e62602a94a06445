"""What a source ingest costs as the ledger grows: the works a file names looked up in the works index
(ledger/storage/works_store.py) against the full scan of every observation that matching used before.

    .venv/bin/python -m bench.ingest_scale [--big 1000000] [--rows 50000] [--keep DIR]

Builds a small ledger (about 1k events) and a big one (`--big` events) of synthetic papers with
bench/synth.py (SQLite, as bench/library.py builds them), and appends to each the same five cited
works with DOIs of their own. Then, each figure in a fresh process (its time, and its own peak RSS:
VmHWM, and getrusage's ru_maxrss):

- a 5-row Retraction Watch CSV, a 5-item Crossref answer and a 5-item OpenAlex page naming those
  works and five papers: the ingest (parse and match, then the append of its batch), by index and by
  the full scan (`WorkIndex` / `PaperIndex` replaced by the full scan of before, as
  tests/service/sources/test_sources_index.py does); each at an instant of its own, so each appends its event;
- a 50,000-row Retraction Watch CSV and Crossref answer (five rows name the works, the rest match
  nothing): the adapter alone with an index that matches nothing without asking the store (the
  parse), the adapter with the store's index (parse and match), and the whole ingest (and append).

A Retraction Watch check lists every keyed work known as of T (sources-v1.md: the file is the
whole database), so its cost keeps a part that grows with the ledger's keyed works; Crossref and the
counts do not. Prints a table and one JSON line per figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.util import vm_hwm_kb

T0 = "2026-09-01T12:00:00Z"
WORKS_AT = "2026-08-01T00:00:00Z"
CITING = "2401.00001"
DOIS = [f"10.5555/Scale.{i}" for i in range(5)]  # mixed case: read back through the DOI rules
PAPERS = [1, 2, 3, 5, 8]  # synthetic papers (bench/synth.py arxiv_id) in both ledgers


def _at(n: int) -> str:
    """An instant of its own for each measured ingest, in this run and any other (a check at an
    instant already ingested is a duplicate, and appends nothing): n seconds after the run began,
    counted from 2026-09-01."""
    at = datetime(2026, 9, 1, tzinfo=UTC) + timedelta(seconds=_RUN + n)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


_RUN = int(time.time()) % 5_000_000  # about two months of seconds


# -- files ----------------------------------------------------------------------------------------


def rw_csv(path: Path, rows: int) -> None:
    """A Retraction Watch CSV of `rows` rows: rows spread evenly name the five works, the others nothing."""
    every = max(1, rows // len(DOIS))
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Record ID", "Title", "URLS", "RetractionDate", "RetractionDOI", "OriginalPaperDOI",
                    "RetractionNature", "Reason"])  # fmt: skip
        for i in range(rows):
            doi = DOIS[i // every] if i % every == 0 and i // every < len(DOIS) else f"10.5555/none.{i}"
            w.writerow([str(10_000 + i), f"Generated article {i}", f"https://example.org/rw/{i}",
                        f"{i % 12 + 1}/{i % 28 + 1}/2020 0:00", f"10.5555/notice.{i}", doi, "Retraction",
                        "+Concerns/Issues About Data;+Paper Mill;"])  # fmt: skip


def crossref_json(path: Path, rows: int) -> None:
    """A Crossref `/works?...` answer of `rows` items, named as rw_csv names them."""
    every = max(1, rows // len(DOIS))

    def item(i: int) -> dict[str, Any]:
        doi = DOIS[i // every] if i % every == 0 and i // every < len(DOIS) else f"10.5555/none.{i}"
        return {"DOI": doi, "title": [f"Generated article {i}"], "updated-by": [
            {"type": "retraction", "DOI": f"10.5555/notice.{i}", "source": "publisher",
             "updated": {"date-parts": [[2020, 1, 1]]}}]}  # fmt: skip

    with path.open("w", encoding="utf-8") as f:
        f.write('{"status": "ok", "message": {"items": [')
        for i in range(rows):
            f.write((", " if i else "") + json.dumps(item(i)))
        f.write("]}}")


def openalex_json(path: Path) -> None:
    """An OpenAlex results page naming five synthetic papers by their arXiv DOIs."""
    from bench.synth import arxiv_id

    results = [{"doi": f"https://doi.org/10.48550/arXiv.{arxiv_id(p)}", "cited_by_count": p} for p in PAPERS]
    path.write_text(json.dumps({"results": results}))


# -- ledgers --------------------------------------------------------------------------------------


def build(db: Path, target: int) -> dict[str, Any]:
    """Synthetic papers up to `target` events, then the five works (bench/library.py's build)."""
    from bench.library import build as build_papers
    from ledger.model.events import CitationData, CitationObserved, CitedWork
    from service.ledger import Ledger

    built = build_papers(db, target, 0)
    events = [
        CitationObserved(
            observed_at=WORKS_AT,
            data=CitationData(
                str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-scale-{i}")),
                CITING,
                10_000 + i,
                "pdf_text",
                CitedWork(
                    None, doi, "crossref", None, WORKS_AT, "A work to match", None, f"scale-work-{i}", 2020
                ),
            ),
        )  # fmt: skip
        for i, doi in enumerate(DOIS)
    ]
    ledger = Ledger(db)
    built["head"] = ledger.append(events).head.seq
    ledger.close()
    return built


# -- one figure, in its own process ---------------------------------------------------------------


def _full_scan() -> None:
    """Replace the indexes by the full scan matching used before the works index."""
    import service.sources as sources
    from ledger.model.doi import arxiv_key, doi_key, work_keys
    from ledger.storage.works_store import papers_known, works_known
    from service.sources.base import PaperIndex, WorkIndex

    class FullScanWorks(WorkIndex):
        def __init__(self, store: Any, as_of_us: int) -> None:
            self.by_key: dict[str, set[str]] = {}
            keyed: set[str] = set()
            for w in works_known(store, as_of_us):
                keys = work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)
                for k in keys:
                    self.by_key.setdefault(k, set()).add(w.work_id)
                if keys:
                    keyed.add(w.work_id)
            self.keyed = sorted(keyed)

        def load(self, dois: Iterable[Any]) -> None:
            pass

        def match(self, doi: Any) -> list[str]:
            key = doi_key(doi) if isinstance(doi, str) else None
            return sorted(self.by_key.get(key, ())) if key else []

        def checkable(self) -> list[str]:
            return self.keyed

    class FullScanPapers(PaperIndex):
        def __init__(self, store: Any, as_of_us: int) -> None:
            self.papers: dict[str, str] = {}
            for a in papers_known(store, as_of_us):
                self.papers.setdefault(arxiv_key(a) or "", a)

        def load(self, dois: Iterable[Any] = (), arxiv_ids: Iterable[Any] = ()) -> None:
            pass

        def _get(self, key: str | None) -> str | None:
            return self.papers.get(key) if key else None

    sources.WorkIndex = FullScanWorks  # type: ignore[misc]
    sources.PaperIndex = FullScanPapers  # type: ignore[misc]


def child(task: str, db: str, source: str, path: str, at: str) -> dict[str, Any]:
    """One measurement: `task` is ingest, fullscan (ingest matched by the full scan), parse (no
    lookups), or match (parse and lookups, nothing appended)."""
    from ledger.model.instants import parse_ts
    from service.ledger import Ledger
    from service.sources import SourceFile, crossref, ingest, parse_source, retraction_watch
    from service.sources.base import Summary, WorkIndex
    from service.sources.reader import open_text

    ledger = Ledger(db)
    ledger.head()  # opened (and migrated, if it must be) before the clock starts
    if task == "fullscan":
        _full_scan()
    out: dict[str, Any] = {}
    start = time.perf_counter()
    if task in ("ingest", "fullscan"):
        s = ingest(ledger, SourceFile(source, path, at))
        out |= {"appended": s.appended, "matched": s.matched, "works_checked": s.works_checked}
    elif task == "match":
        s = parse_source(ledger, SourceFile(source, path, at)).summary
        out |= {"matched": s.matched, "works_checked": s.works_checked}
    else:

        class Nothing(WorkIndex):
            def load(self, dois: Iterable[Any]) -> None:
                pass

            def match(self, doi: Any) -> list[str]:
                return []

            def checkable(self) -> list[str]:
                return []

        adapter = {"retraction-watch": retraction_watch.parse, "crossref": crossref.parse}[source]
        with open_text(path) as text:
            s = adapter(text, Nothing(ledger.store, parse_ts(at)), Summary(source, source, at)).summary
        out |= {"read": s.read}
    out["seconds"] = round(time.perf_counter() - start, 4)
    out["peak_rss_mb"] = round((vm_hwm_kb() or 0) / 1024, 1)
    out["ru_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def _run(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.ingest_scale", "--child", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"{args}: {done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


# -- the run --------------------------------------------------------------------------------------


def main() -> None:
    """Build the two ledgers, measure each figure in its own process, print them."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--child", nargs=5, metavar=("TASK", "DB", "SOURCE", "FILE", "AT"), help=argparse.SUPPRESS
    )
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each figure (the best is kept)")
    ap.add_argument("--keep", type=Path, default=None, help="build (or reuse) the ledgers here and keep them")
    args = ap.parse_args()
    if args.child:
        task, db, *rest = args.child
        print(json.dumps(build(Path(db), int(rest[0])) if task == "build" else child(task, db, *rest)))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="ingest-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(work, args.small, args.big, args.rows, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(work)


def run(work: Path, small: int, big: int, rows: int, repeat: int) -> None:
    """Every figure on both ledgers."""
    files = {"rw5": work / "rw5.csv", "cr5": work / "crossref5.json", "oa5": work / "openalex5.json",
             "rwN": work / f"rw{rows}.csv", "crN": work / f"crossref{rows}.json"}  # fmt: skip
    rw_csv(files["rw5"], 5)
    crossref_json(files["cr5"], 5)
    openalex_json(files["oa5"])
    rw_csv(files["rwN"], rows)
    crossref_json(files["crN"], rows)
    n = 0
    for size in (small, big):
        db = work / f"ledger-{size}.db"
        if not db.exists():
            started = time.perf_counter()
            built = _run(
                "build", str(db), str(size), "-", "-"
            )  # not in this process: its RSS floors the others'
            print(f"built {built['head']} events in {time.perf_counter() - started:.0f} s: {db}", flush=True)
        # the floor: a process that imports the package and parses the 5-row file without lookups
        _say(size, "rw5 parse", _run("parse", str(db), "retraction-watch", str(files["rw5"]), T0))
        small_files = (
            ("rw5", "retraction-watch", files["rw5"]),
            ("cr5", "crossref", files["cr5"]),
            ("oa5", "openalex", files["oa5"]),
        )
        big_files = (("rwN", "retraction-watch", files["rwN"]), ("crN", "crossref", files["crN"]))
        figures = [(f, "ingest") for f in small_files] + [(f, "fullscan") for f in small_files]
        figures += [(f, task) for f in big_files for task in ("parse", "match", "ingest")]
        for (name, source, path), task in figures:
            runs = []
            for _ in range(repeat):
                n += 1
                runs.append(_run(task, str(db), source, str(path), _at(n)))
            # the best of the runs: the machine is shared, and the least disturbed run is the cost
            _say(size, f"{name} {task}", min(runs, key=lambda r: r["seconds"]))


def _say(size: int, what: str, r: dict[str, Any]) -> None:
    print(f"{size:>9,} events  {what:<16} {r['seconds']:8.3f} s  peak RSS {r['peak_rss_mb']:6.1f} MB  "
          f"(ru_maxrss {r['ru_maxrss_mb']} MB)  {json.dumps(r)}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

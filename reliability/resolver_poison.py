"""Poisoned references among many good ones, over HTTP: what `POST /resolve` and an `all` job make of them.

A `ledger serve` over a fresh SQLite ledger holding the resolver evaluation set's catalogue
(bench/resolver/data) and `--good` of the set's references, spread over papers of 100, plus one paper
of its own holding the issue's poisoned references: a volume, 1,200 spaces and a letter (a pattern that
backtracked in cubic time), 16 KiB of `|`, and a page range of 4,400 digits (past int()'s limit).
Prints how `POST /resolve` of the poisoned paper answered and how long it took, then how an `all`
job ended, how long it took and what it resolved, then what a second `all` job examined.

    .venv/bin/python -m reliability.resolver_poison --good 5000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.resolver.make_catalogue import DATA, gz_lines
from ledger.model.events import CitationData, CitationObserved, PaperData, PaperObserved
from ledger.model.works import Reference
from reliability.server import serving
from service.ledger import Ledger
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works

TOKEN = "poison-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AT = "2026-08-07T06:00:33.427109Z"
POISONED_PAPER = "2601.99999"
POISONS = ["1" + " " * 1200 + "x", "|" * 16384, "pp. " + "7" * 4400 + "-8"]


def _paper(arxiv_id: str, lines: list[str], first: int) -> list[Any]:
    data = PaperData(arxiv_id, "A citing paper", "cs.DL", AT, AT, 1)
    events: list[Any] = [PaperObserved(observed_at=AT, data=data)]
    for n, line in enumerate(lines):
        oid = f"00000000-0000-4000-8000-{first + n:012x}"
        cit = CitationData(oid, arxiv_id, n, "pdf_text", None, Reference(unstructured=line))
        events.append(CitationObserved(observed_at=AT, data=cit))
    return events


def seed(db: Path, good: int) -> None:
    """The catalogue, `good` references in papers of 100, and the poisoned paper."""
    ledger = Ledger(str(db))
    works = b"".join(json.dumps(w).encode() + b"\n" for w in gz_lines(DATA / "catalogue.ndjson.gz"))
    ingest_works(ledger, SourceFile(NAME, works, "2026-11-01T00:00:00Z"))
    lines = [r["unstructured"] for r in gz_lines(DATA / "references.jsonl.gz") if r.get("unstructured")][
        :good
    ]
    events: list[Any] = []
    for p in range(0, len(lines), 100):
        events += _paper(f"2601.{p // 100:05d}", lines[p : p + 100], p)
    events += _paper(POISONED_PAPER, POISONS, len(lines))
    ledger.append(events)


def _job(base: str) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    r = httpx.post(f"{base}/resolve", json={"all": True}, headers=AUTH, timeout=600)
    assert r.status_code == 202, r.text
    url = f"{base}/resolve/jobs/{r.json()['id']}"
    while True:
        job: dict[str, Any] = httpx.get(url, headers=AUTH, timeout=60).json()
        if job["state"] != "running":
            return job, time.monotonic() - start
        time.sleep(0.5)


def main() -> None:
    """Seed, serve, resolve, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=int, default=5000, help="good references")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "poison.db"
        seed(db, args.good)
        with serving(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
            start = time.monotonic()
            r = httpx.post(f"{server.base}/resolve", json={"papers": [POISONED_PAPER], "dry_run": True},
                           headers=AUTH, timeout=3600)  # fmt: skip
            took = time.monotonic() - start
            answer = r.json().get("changed", r.json().get("error"))
            print(f"POST /resolve of the poisoned paper: {r.status_code} in {took:.2f} s: {answer}")
            job, took = _job(server.base)
            summary = job.get("summary") or {}
            print(f"all job: {job['state']} in {took:.1f} s; examined {summary.get('examined')}, "
                  f"changed {summary.get('changed')}; error {job.get('error')}")  # fmt: skip
            job, took = _job(server.base)
            summary = job.get("summary") or {}
            print(f"second all job: {job['state']} in {took:.1f} s; examined {summary.get('examined')}, "
                  f"appended {summary.get('appended')}")  # fmt: skip


if __name__ == "__main__":
    main()

"""The matcher's answers on a query set in the shape of the shared development set (`queries.jsonl`:
`{"id", "style", "unstructured" or "reference", "expected_doi"}`), against a ledger that ingested its
catalogue. Writes the answers `score-resolver` reads and, beside them, every decision in full (status,
work, evidence), so that two versions of the matcher can be compared answer by answer.

    ledger ingest works catalogue.json --observed-at 2026-09-01T00:00:00Z --db dev.db
    python -m bench.resolver.devset queries.jsonl --db dev.db --out answers.jsonl --full decisions.jsonl
    diff before.jsonl decisions.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from bench.resolver.evaluate import answer_key, open_catalogue
from ledger.model.resolving import RefInput
from ledger.model.works import Reference
from service.resolver import run as run_flow
from service.resolver.match import resolve_many
from service.resolver.pool import collector_paused


def queries(path: Path) -> Iterator[dict[str, Any]]:
    """The query lines of a file."""
    with path.open() as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def ref_input(q: dict[str, Any]) -> RefInput:
    """A query as the resolver reads an observation: its reference object, or its string as one."""
    ref = q["reference"] if "reference" in q else {"unstructured": q["unstructured"]}
    return RefInput(q["id"], msgspec.convert(ref, Reference), None)


def main(argv: list[str] | None = None) -> None:
    """Answer every query, in batches as `ledger resolve` decides them."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("queries", type=Path)
    ap.add_argument("--db", required=True, help="a ledger holding the set's catalogue")
    ap.add_argument("--out", type=Path, required=True, help="answers for score-resolver")
    ap.add_argument("--full", type=Path, help="every decision in full, one JSON line per query")
    args = ap.parse_args(argv)
    catalogue = open_catalogue(args.db)
    rows = list(queries(args.queries))
    with args.out.open("w") as out, (args.full or Path("/dev/null")).open("w") as full:
        for i in range(0, len(rows), run_flow.BATCH):
            batch = rows[i : i + run_flow.BATCH]
            with collector_paused():
                decisions = resolve_many([ref_input(q) for q in batch], catalogue)
            for q, d in zip(batch, decisions, strict=True):
                doi = d.work.doi if d.work is not None else None
                out.write(json.dumps({"id": q["id"], "doi": doi}) + "\n")
                evidence = msgspec.to_builtins(d.evidence)
                line = [q["id"], d.status, answer_key(d.work), evidence]
                full.write(json.dumps(line, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

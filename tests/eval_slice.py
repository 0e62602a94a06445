"""A real-shaped slice of the resolver's evaluation set (bench/resolver/data): the first works of its
catalogue, and references of its tune split (most to works in the slice, some to works outside it);
`citations` (the bench's) makes them citation.observed events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec

from bench.resolver.resolve_throughput import AT, citations
from ledger.model.resolving import RefInput
from ledger.model.works import Reference

DATA = Path(__file__).parents[1] / "bench" / "resolver" / "data"


def works_slice(n: int) -> tuple[bytes, set[str]]:
    """The first n works of the catalogue file (NDJSON bytes) and their DOIs, lower-cased."""
    with gzip.open(DATA / "catalogue.ndjson.gz", "rt") as f:
        lines = [next(f) for _ in range(n)]
    return "".join(lines).encode(), {json.loads(line)["DOI"].lower() for line in lines}


def tune_references(dois: set[str], n: int) -> list[dict[str, Any]]:
    """n references of the tune split: five in six to works among `dois`, the rest to others."""
    inside: list[dict[str, Any]] = []
    outside: list[dict[str, Any]] = []
    with gzip.open(DATA / "references.jsonl.gz", "rt") as f:
        for row in map(json.loads, f):
            if row["split"] != "tune":
                continue
            (inside if row["work_doi"] in dois else outside).append(row)
            if len(inside) >= n * 5 // 6 and len(outside) >= n // 6:
                break
    return inside[: n * 5 // 6] + outside[: n - n * 5 // 6]


def ref_inputs(rows: list[dict[str, Any]]) -> list[RefInput]:
    """What the matcher reads of each reference row: its Crossref reference object."""
    return [RefInput(r["id"], msgspec.convert(r["reference"], Reference), None) for r in rows]


__all__ = ["AT", "citations", "ref_inputs", "tune_references", "works_slice"]

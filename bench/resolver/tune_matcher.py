"""Precision and recall of the resolver's matcher and of the SBMV baseline on the evaluation set
(bench/resolver/data, made by make_catalogue.py and render.py), per style.

Precision counts every answer naming a work (those for held-out works included), recall the references
whose work is in the catalogue. Run: python -m bench.resolver.tune_matcher --split tune [--matcher sbmv]
[--db LEDGER] (a ledger holding the catalogue; by default the catalogue is held in memory) [--workers 2]
[--cache FILE] (the catalogue's answers kept between tuning runs). The data are bench/resolver/data of
the evaluation set (branch i30-evalset), or the folder $RESOLVER_EVAL_DATA names. Figures:
bench/resolver/matcher_results.md."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ledger.model.works import Decision, Reference, RefInput
from ledger.storage.interface import CatalogueTables

DATA = Path(os.environ.get("RESOLVER_EVAL_DATA", Path(__file__).parent / "data"))
Resolver = Callable[[Sequence[RefInput], CatalogueTables], list[Decision]]


def load_refs(split: str) -> list[dict[str, Any]]:
    """The evaluation set's references of one split."""
    with gzip.open(DATA / "references.jsonl.gz", "rt") as f:
        return [r for line in f if (r := json.loads(line))["split"] == split or split == "all"]


def ref_input(row: dict[str, Any]) -> RefInput:
    """A reference row as the matcher reads it."""
    return RefInput(row["id"], msgspec.convert(row["reference"], Reference), None)


def run(
    rows: list[dict[str, Any]], catalogue: CatalogueTables, resolve: Resolver, batch: int = 256
) -> list[Decision]:
    """Every row decided, a batch at a time."""
    out: list[Decision] = []
    for i in range(0, len(rows), batch):
        out.extend(resolve([ref_input(r) for r in rows[i : i + batch]], catalogue))
    return out


def figures(rows: list[dict[str, Any]], decisions: list[Decision]) -> dict[str, dict[str, float]]:
    """Per style and overall: precision, recall, F1, held-out answered unresolved, wrong exact answers."""
    acc: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row, d in zip(rows, decisions, strict=True):
        got = d.work.doi if d.work is not None else None
        if got is None and d.work is not None:
            got = "arxiv:" + (d.work.arxiv_id or "")
        for key in (row["style"], "all", f"near:{row['near_duplicate']}" if row["near_duplicate"] else None):
            if key is None:
                continue
            a = acc[key]
            a["n"] += 1
            if got is not None:
                a["answered"] += 1
                a["right"] += got == row["expected_doi"]
                a["wrong_exact"] += got != row["expected_doi"] and d.status == "verified_exact"
            if row["expected_doi"] is not None:
                a["in_catalogue"] += 1
                a["found"] += got == row["expected_doi"]
            else:
                a["held_out"] += 1
                a["held_out_unresolved"] += got is None
    out = {}
    for key, a in sorted(acc.items()):
        p = a["right"] / a["answered"] if a["answered"] else 1.0
        r = a["found"] / a["in_catalogue"] if a["in_catalogue"] else 1.0
        out[key] = {
            "n": a["n"],
            "precision": round(p, 4),
            "recall": round(r, 4),
            "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
            "held_out_unresolved": round(a["held_out_unresolved"] / a["held_out"], 4)
            if a["held_out"]
            else 1.0,
            "wrong": a["answered"] - a["right"],
            "wrong_exact": a["wrong_exact"],
        }
    return out


def table(figs: dict[str, dict[str, float]]) -> str:
    """The figures as a fixed-width table."""
    lines = [f"{'style':34} {'n':>6} {'P':>7} {'R':>7} {'F1':>7} {'held':>7} {'wrong':>6} {'wrongX':>6}"]
    for key, f in figs.items():
        lines.append(
            f"{key:34} {f['n']:>6} {f['precision']:>7.4f} {f['recall']:>7.4f} {f['f1']:>7.4f} "
            f"{f['held_out_unresolved']:>7.4f} {f['wrong']:>6} {f['wrong_exact']:>6}"
        )
    return "\n".join(lines)


def open_catalogue(db: str | None) -> CatalogueTables:
    """The catalogue: a ledger's (--db), or the evaluation set's held in memory."""
    if db is None:
        from bench.resolver.memory_catalogue import MemoryCatalogue, crossref_works

        return MemoryCatalogue(list(crossref_works(DATA / "catalogue.ndjson.gz")))
    from service.ledger import Ledger

    catalogue = Ledger(db).catalogue  # type: ignore[attr-defined]
    return catalogue() if callable(catalogue) else catalogue  # type: ignore[no-any-return]


_WORKER: tuple[CatalogueTables, Resolver] | None = None


def _start(db: str | None, matcher: str) -> None:
    global _WORKER
    _WORKER = (open_catalogue(db), _resolver(matcher))


def _batch(rows: list[dict[str, Any]]) -> list[Decision]:
    assert _WORKER is not None
    catalogue, resolve = _WORKER
    return resolve([ref_input(r) for r in rows], catalogue)


def run_pool(
    rows: list[dict[str, Any]], db: str | None, matcher: str, workers: int, batch: int = 256
) -> list[Decision]:
    """Every row decided by `workers` processes, each with its own catalogue, a batch per task."""
    from concurrent.futures import ProcessPoolExecutor

    chunks = [rows[i : i + batch] for i in range(0, len(rows), batch)]
    with ProcessPoolExecutor(workers, initializer=_start, initargs=(db, matcher)) as pool:
        return [d for ds in pool.map(_batch, chunks) for d in ds]


def _resolver(matcher: str) -> Resolver:
    if matcher == "ours":
        from service.resolver.match import resolve_many
    else:
        from service.resolver.sbmv import resolve_many  # type: ignore[assignment]
    return resolve_many


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--split", default="tune", choices=("tune", "test", "all"))
    ap.add_argument("--matcher", default="ours", choices=("ours", "sbmv"))
    ap.add_argument("--db")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="processes, each with its own catalogue")
    ap.add_argument("--show", default="", help="print the wrong answers (wrong) or the misses (missed)")
    ap.add_argument("--json")
    ap.add_argument("--cache", help="keep the catalogue's answers in this file between runs (tuning)")
    args = ap.parse_args()
    resolve = _resolver(args.matcher)
    catalogue = open_catalogue(args.db)
    if args.cache:
        from bench.resolver.cached_catalogue import CachedCatalogue

        catalogue = CachedCatalogue(catalogue, Path(args.cache))
    rows = load_refs(args.split)
    if args.limit:
        rows = rows[: args.limit]
    began = time.perf_counter()
    if args.workers > 1:
        began = time.perf_counter()  # each worker opens its catalogue: counted in the time
        decisions = run_pool(rows, args.db, args.matcher, args.workers)
    else:
        decisions = run(rows, catalogue, resolve)
    took = time.perf_counter() - began
    figs = figures(rows, decisions)
    if args.cache:
        catalogue.save()  # type: ignore[union-attr]
    print(table(figs))
    print(f"{len(rows)} references in {took:.1f}s: {len(rows) / took:.0f}/s with {args.workers} process(es)")
    for row, d in zip(rows, decisions, strict=True):
        got = d.work.doi if d.work else None
        wrong = got is not None and got != row["expected_doi"]
        missed = got is None and row["expected_doi"] is not None
        if (args.show == "wrong" and wrong) or (args.show == "missed" and missed):
            print(
                "---",
                row["style"],
                row["noise"],
                row["near_duplicate"],
                "held" if row["held_out"] else "",
                d.status,
                got,
                row["expected_doi"],
                d.evidence.score,
                d.evidence.agreed,
                d.evidence.disagreed,
                d.evidence.runner_up and (d.evidence.runner_up.doi, d.evidence.runner_up.score),
            )
            print("   ", row["unstructured"] or row["reference"])
    if args.json:
        Path(args.json).write_text(
            json.dumps({"split": args.split, "matcher": args.matcher, "figures": figs})
        )


if __name__ == "__main__":
    main()

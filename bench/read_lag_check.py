"""Byte for byte: the records this checkout reads, with the projector behind and caught up, against the
records another checkout reads from the same events (bench/read_lag.py `--check N`).

- N random papers of the synthetic ledger (those the lagging events cite among them), at every as_of
  the tests read a record at and at instants inside the synthetic history: this checkout on the lagging
  and the caught-up ledger, the other checkout on the caught-up one (its lagging reads fold every event
  past the position, too slow to read them all at 1M events; its lagging ledger is read for the first
  fifty);
- the two real records (the shared fixture and 2506.06472, built as the resolver's fixture test builds
  them) and every paper that ledger holds, at the same instants, now and known at an instant before the
  resolver ran: both checkouts, on the ledger as built (the projector at its start) and projected.

Each record is compared by the sha256 of its canonical bytes (a record not there yet by its error's
words); the result lists any that differ.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from bench.read_lag import SYNTH_AS_OF, TEST_AS_OF, Ledgers, worker
from bench.read_lag_worker import BUILD_START_US

BEFORE_LAGGING = 50  # the random papers the other checkout also reads from its lagging ledger


def _rendered(code: Path, db: Path, spec: dict[str, Any], out: Path) -> dict[str, tuple[int, str]]:
    """(paper, as_of, known_at) -> (length, sha256) of each record `code` reads from `db`."""
    spec_file = out.with_suffix(".spec.json")
    spec_file.write_text(json.dumps(spec))
    worker(code, "render", str(db), str(spec_file), str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {f"{r['paper']} {r['as_of']} {r['known_at']}": (r["len"], r["sha256"]) for r in rows}


def _compare(name: str, got: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    differ = sorted(k for k in want if got.get(k) != want[k])
    print(f"  {name}: {len(want):,} records, {len(differ)} differ", flush=True)
    return {"records": len(want), "differ": len(differ), "first_differing": differ[:10]}


def check(
    mine_code: Path,
    before: Path,
    mine: Ledgers,
    theirs: Ledgers,
    n: int,
    cache: Path,
    before_lagging: int = BEFORE_LAGGING,
) -> dict[str, Any]:
    """Render and compare; a summary of each comparison."""
    work = cache / "check"
    work.mkdir(exist_ok=True)
    out: dict[str, Any] = {}
    papers_total = int(mine.lagged["papers"]) + int(mine.built["next_paper"])
    from bench.synth import arxiv_id

    rng = random.Random(1200)
    picked = sorted(rng.sample(range(papers_total), min(n, papers_total)))
    papers = [arxiv_id(i) for i in picked]
    spec: dict[str, Any] = {"papers": papers, "as_of": [*TEST_AS_OF, *SYNTH_AS_OF], "known_at": [None]}
    print(f"check: {len(papers):,} synthetic papers x {len(spec['as_of'])} instants", flush=True)
    want = _rendered(before, theirs.caught, spec, work / "before-caught.ndjson")
    out["synthetic, this lagging"] = _compare(
        "this checkout, lagging", _rendered(mine_code, mine.lagging, spec, work / "mine-lag.ndjson"), want
    )
    out["synthetic, this caught up"] = _compare(
        "this checkout, caught up", _rendered(mine_code, mine.caught, spec, work / "mine-caught.ndjson"), want
    )
    first = papers[:before_lagging]
    few = {**spec, "papers": first}
    few_want = {k: v for k, v in want.items() if k.split()[0] in set(first)}
    out["synthetic, before lagging"] = _compare(
        f"before, lagging ({len(first)} papers)",
        _rendered(before, theirs.lagging, few, work / "before-lag.ndjson"),
        few_want,
    )
    out["real"] = _real(mine_code, before, work)
    return out


def _real(mine_code: Path, before: Path, work: Path) -> dict[str, Any]:
    """The real records' ledger built by each checkout; every paper of it, as built and projected."""
    rendered: dict[str, dict[str, Any]] = {}
    for name, code in (("this", mine_code), ("before", before)):
        built = work / f"real-{name}.db"
        for stale in work.glob(f"real-{name}*"):
            stale.unlink()
        worker(code, "real", str(built))
        projected = work / f"real-{name}-projected.db"
        shutil.copyfile(built, projected)
        worker(code, "project", str(projected))
        spec = {"papers": "all", "as_of": TEST_AS_OF, "known_at": [None, _before_resolving()]}
        rendered[f"{name}, as built"] = _rendered(code, built, spec, work / f"real-{name}.ndjson")
        rendered[f"{name}, projected"] = _rendered(code, projected, spec, work / f"real-{name}-p.ndjson")
    want = rendered["before, projected"]
    return {name: _compare(f"real records, {name}", got, want) for name, got in rendered.items()}


def _before_resolving() -> str:
    """An instant after the real records' import and before their resolution (as a known_at)."""
    from ledger.model.instants import format_recorded

    return format_recorded(BUILD_START_US + 1_500)

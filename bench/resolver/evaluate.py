"""Evaluate reference resolvers on the synthetic set against a real ledger's catalogue: the same references,
catalogue and run for each method.

    python -m bench.resolver.evaluate --split test --db ledger.db --ingest      # make the ledger, then run
    python -m bench.resolver.evaluate --split test --db postgresql://...        # a ledger already holding it
    python -m bench.resolver.evaluate --split tune --db ledger.db --tune-sbmv   # SBMV's threshold (tune only)

A method is any `resolve_many(inputs, catalogue) -> list[Decision]` named as `module:function`; by default
the ledger's matcher (service/resolver/match.py) and the SBMV baseline (service/resolver/sbmv.py).
Precision counts every non-null answer (held-out references included), recall the references whose work
is in the catalogue. Writes results.json and results.md into --out (default bench/resolver).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from bench.resolver.make_catalogue import DATA, gz_lines
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Reference
from ledger.storage.interface import CatalogueTables
from ledger.storage.sql_store import SqlStore
from service.ledger import is_pg_url
from service.resolver import run as run_flow
from service.resolver.pool import collector_paused

HERE = Path(__file__).parent
METHODS = {"resolver": "service.resolver.match:resolve_many", "sbmv": "service.resolver.sbmv:resolve_many"}
BATCH = run_flow.BATCH  # references per call, as `ledger resolve` decides them
Resolve = Callable[[Sequence[RefInput], CatalogueTables], list[Decision]]


def load_method(spec: str) -> Resolve:
    """`module:function` -> the function."""
    mod, _, name = spec.partition(":")
    fn: Resolve = getattr(importlib.import_module(mod), name)
    return fn


def references(path: Path, split: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The references of one split (all splits when split is 'all')."""
    rows = [r for r in gz_lines(path) if split == "all" or r["split"] == split]
    return rows[:limit] if limit else rows


def ref_input(row: dict[str, Any]) -> RefInput:
    """A reference row as the resolver reads an observation: its Crossref reference object, no cited work."""
    return RefInput(row["id"], msgspec.convert(row["reference"], Reference), None)


def answer_key(w: CatalogueWork | None) -> str | None:
    """The key of the work answered: its DOI's, else its arXiv id's."""
    if w is None:
        return None
    return doi_key(w.doi) or arxiv_key(w.arxiv_id)


# The catalogue each worker process opens once: a ledger's tables.
_CATALOGUE: CatalogueTables | None = None


def open_catalogue(db: str) -> CatalogueTables:
    """The ledger's catalogue, indexed up to its head (as `ledger resolve` reads it)."""
    from service.ledger import Ledger

    return Ledger(db).catalogue


def catalogue_size(db: str) -> int:
    """The works (and arXiv papers) a ledger's catalogue holds, once brought up to its head."""
    from service.ledger import Ledger

    ledger = Ledger(db)
    ledger.catalogue  # noqa: B018 - indexed up to the head first
    store = ledger.store
    assert isinstance(store, SqlStore)
    return int(store.query(store.connection(), "SELECT count(*) FROM catalogue_works").fetchone()[0])


def _init(db: str) -> None:
    global _CATALOGUE
    _CATALOGUE = open_catalogue(db)


Answer = tuple[str | None, str, int]  # the key of the work answered, the status, the evidence's score


def _run(spec: str, kwargs: dict[str, Any], rows: list[dict[str, Any]]) -> list[tuple[str, Answer]]:
    assert _CATALOGUE is not None
    fn = functools.partial(load_method(spec), **kwargs)
    with collector_paused():  # as `ledger resolve`'s workers decide
        decisions = fn([ref_input(r) for r in rows], _CATALOGUE)
    return [
        (r["id"], (answer_key(d.work), d.status, d.evidence.score))
        for r, d in zip(rows, decisions, strict=True)
    ]


def run(
    spec: str,
    rows: list[dict[str, Any]],
    workers: int,
    db: str,
    kwargs: dict[str, Any] | None = None,
) -> tuple[dict[str, Answer], float]:
    """Each reference's answer (work key, status) and the wall seconds the resolving took, catalogue
    opening excluded: batches of BATCH references spread over `workers` processes, the last shared
    among them (as `ledger resolve` does)."""
    batches = [rows[i : i + BATCH] for i in range(0, len(rows), BATCH)]
    if workers > 1 and batches:
        last = batches.pop()
        size = -(-len(last) // workers)
        batches += [last[i : i + size] for i in range(0, len(last), size)]
    kwargs = kwargs or {}
    answers: dict[str, Answer] = {}
    if workers <= 1:
        _init(db)
        t = time.perf_counter()
        for b in batches:
            answers.update(_run(spec, kwargs, b))
        return answers, time.perf_counter() - t
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(db,)) as pool:
        # the catalogue is opened in every worker before the clock starts
        list(pool.map(_run, [spec] * workers, [kwargs] * workers, [[]] * workers))
        t = time.perf_counter()
        for res in pool.map(_run, [spec] * len(batches), [kwargs] * len(batches), batches):
            answers.update(res)
        return answers, time.perf_counter() - t


def write_answers(path: Path, method: str, rows: list[dict[str, Any]], answers: dict[str, Answer]) -> None:
    """Each reference's answer (work key, status, score) as a JSON line, in the split's order, appended
    to `path`: two runs' files are equal when every answer is."""
    with path.open("a") as f:
        for r in rows:
            key, status, sc = answers[r["id"]]
            f.write(json.dumps([method, r["id"], key, status, sc]) + "\n")


def score(rows: Iterable[dict[str, Any]], answers: dict[str, Answer]) -> dict[str, Any]:
    """Precision, recall, F1, held-out unresolved rate and wrong exact matches of some references."""
    n = answered = correct = in_cat = held = held_unresolved = wrong_exact = exact = 0
    for r in rows:
        n += 1
        key, status, _ = answers[r["id"]]
        expected = doi_key(r["expected_doi"]) if r["expected_doi"] else None
        if expected:
            in_cat += 1
        else:
            held += 1
            held_unresolved += key is None
        if key is not None:
            answered += 1
            ok = key == expected
            correct += ok
            exact += status == "verified_exact"
            wrong_exact += status == "verified_exact" and not ok
    p = correct / answered if answered else 1.0
    rec = correct / in_cat if in_cat else 1.0
    return {
        "references": n,
        "in_catalogue": in_cat,
        "held_out": held,
        "answered": answered,
        "correct": correct,
        "precision": round(p, 4),
        "recall": round(rec, 4),
        "f1": round(2 * p * rec / (p + rec), 4) if p + rec else 0.0,
        "held_out_unresolved": round(held_unresolved / held, 4) if held else None,
        "verified_exact": exact,
        "wrong_verified_exact": wrong_exact,
    }


def breakdown(rows: list[dict[str, Any]], answers: dict[str, Answer]) -> dict[str, Any]:
    """The scores overall and per style, noise kind, near-duplicate kind and work type."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups["style"][r["style"]].append(r)
        for kind in {x.split(":")[-1] for x in r["noise"]} or {"clean"}:
            groups["noise"][kind].append(r)
        groups["near_duplicate"][r["near_duplicate"] or "none"].append(r)
        groups["type"][r["type"]].append(r)
    out: dict[str, Any] = {"overall": score(rows, answers)}
    for g, members in groups.items():
        out[g] = {k: score(v, answers) for k, v in sorted(members.items())}
    return out


def tune_sbmv(rows: list[dict[str, Any]], workers: int, db: str) -> float:
    """The SBMV threshold with the best F1 on these (tune) references: one run at threshold 0 keeps each
    best candidate's score, and each threshold then keeps the answers that reach it."""
    best = (0.0, 0.0)
    every, _ = run(METHODS["sbmv"], rows, workers, db, {"min_similarity": 0.0})
    for th in [x / 100 for x in range(30, 100, 2)]:
        answers: dict[str, Answer] = {
            k: (key, status, sc) if sc >= round(th * 100) else (None, "unresolved", sc)
            for k, (key, status, sc) in every.items()
        }
        f1 = score(rows, answers)["f1"]
        print(f"threshold {th:.2f}: F1 {f1}", file=sys.stderr)
        best = max(best, (f1, th))
    return best[1]


def markdown(results: dict[str, Any]) -> str:
    """A table per breakdown, one column pair per method."""
    names = list(results["methods"])
    lines = [
        f"# Resolver evaluation: split `{results['split']}`, {results['references']} references, "
        f"{results['catalogue_works']} catalogued works",
        "",
    ]
    rate = ", ".join(f"{m} {results['methods'][m]['references_per_s']} references/s" for m in names)
    lines += [f"Rate ({results['workers']} worker(s), catalogue: {results['catalogue']}): {rate}.", ""]
    if results.get("note"):
        lines += [results["note"], ""]
    metrics = ["precision", "recall", "f1", "held_out_unresolved", "wrong_verified_exact"]
    for section in ["overall", "style", "noise", "near_duplicate", "type"]:
        first = results["methods"][names[0]]["scores"][section]
        keys = ["overall"] if section == "overall" else list(first)
        lines.append(f"## {section}")
        lines.append("")
        head = "| " + section + " | n | " + " | ".join(f"{m} {x}" for x in metrics for m in names) + " |"
        lines.append(head)
        lines.append("|" + "---|" * (2 + len(metrics) * len(names)))
        for k in keys:
            cells = []
            for x in metrics:
                for m in names:
                    s = results["methods"][m]["scores"][section]
                    s = s if section == "overall" else s[k]
                    cells.append("" if s[x] is None else str(s[x]))
            n = (first if section == "overall" else first[k])["references"]
            lines.append(f"| {k} | {n} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def ingest(db: str, catalogue_file: Path) -> None:
    """The catalogue into a ledger through the CLI, as a user would."""
    cmd = [
        str(Path(sys.executable).with_name("ledger")),
        "ingest",
        "works",
        str(catalogue_file),
        "--observed-at",
        "2026-12-01T00:00:00Z",
        "--db",
        db,
    ]
    subprocess.run(cmd, check=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", default="test", choices=["test", "tune", "all"])
    ap.add_argument("--method", action="append", help="name=module:function (default: resolver and sbmv)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument(
        "--db", required=True, help="a ledger (SQLite path or PostgreSQL URL) holding the catalogue"
    )
    ap.add_argument("--ingest", action="store_true", help="first ingest the catalogue into --db via the CLI")
    ap.add_argument("--catalogue-file", type=Path, help="the works file --ingest reads (default: --data's)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--limit", type=int, help="only the first N references of the split")
    ap.add_argument("--sbmv-threshold", type=float, help="SBMV's threshold (default: its tuned constant)")
    ap.add_argument("--tune-sbmv", action="store_true", help="choose SBMV's threshold on the tune split")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument(
        "--answers", type=Path, help="also write each reference's answer (JSON lines) here, to compare runs"
    )
    ap.add_argument(
        "--note", default="", help="what was measured (e.g. the resolver's commit), kept with the results"
    )
    a = ap.parse_args(argv)
    cat_file = a.catalogue_file or a.data / "catalogue.ndjson.gz"
    if a.ingest:
        ingest(a.db, cat_file)
    rows = references(a.data / "references.jsonl.gz", a.split, a.limit)
    if a.tune_sbmv:
        if a.split != "tune":
            ap.error("SBMV is tuned on the tune split only")
        print(json.dumps({"sbmv_threshold": tune_sbmv(rows, a.workers, a.db)}))
        return
    methods = dict(m.split("=", 1) for m in a.method) if a.method else METHODS
    n_works = catalogue_size(a.db)
    results: dict[str, Any] = {
        "note": a.note,
        "split": a.split,
        "references": len(rows),
        "catalogue_works": n_works,
        "workers": a.workers,
        "catalogue": "postgresql ledger" if is_pg_url(a.db) else "sqlite ledger",
        "methods": {},
    }
    for name, spec in methods.items():
        try:
            load_method(spec)
        except (ImportError, AttributeError) as e:
            print(f"{name}: {spec} cannot be loaded ({e}); skipped", file=sys.stderr)
            continue
        kwargs = {"min_similarity": a.sbmv_threshold} if name == "sbmv" and a.sbmv_threshold else {}
        answers, secs = run(spec, rows, a.workers, a.db, kwargs)
        if a.answers:
            write_answers(a.answers, name, rows, answers)
        results["methods"][name] = {
            "function": spec,
            "seconds": round(secs, 2),
            "references_per_s": round(len(rows) / secs, 1),
            "scores": breakdown(rows, answers),
        }
        o = results["methods"][name]["scores"]["overall"]
        print(
            f"{name}: P {o['precision']} R {o['recall']} F1 {o['f1']} held-out unresolved "
            f"{o['held_out_unresolved']} wrong exact {o['wrong_verified_exact']} "
            f"{results['methods'][name]['references_per_s']} refs/s",
            file=sys.stderr,
        )
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (a.out / "results.md").write_text(markdown(results) + "\n")
    print(markdown(results))


if __name__ == "__main__":
    main()

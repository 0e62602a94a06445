"""The quality benchmark on the development split (shared/fixtures/resolver-dev): the ledger's matcher
and the SBMV baseline (service/resolver/sbmv.py) answer every query against the same ledger, and each is
scored per style as `score-resolver` scores it. Development figures: the test split is scored elsewhere.

    python -m bench.resolver.devquality --dev ../shared/fixtures/resolver-dev [--db LEDGER] \\
        [--answers DIR] [--out bench/resolver]

Without --db, the catalogue is ingested into a new SQLite ledger with `ledger ingest works`. Queries
are answered in the batches `ledger resolve` decides (run.BATCH), each as the resolver reads an
observation: its reference object, or its string as one. Writes devquality.json and devquality.md.

Per style, as score-resolver counts: precision = correct non-null answers / non-null answers; recall =
correct non-null answers / queries whose cited work is in the catalogue; null = share of the queries
whose work is not in the catalogue answered null. A DOI answered is correct when, lower-cased, it is
the expected one (or one of them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.resolver.devrate import DEV
from bench.resolver.devset import queries, ref_input
from bench.resolver.evaluate import ingest, open_catalogue
from ledger.model.resolving import Decision, RefInput
from ledger.storage.interface import CatalogueTables
from service.resolver import run as run_flow
from service.resolver import sbmv
from service.resolver.match import METHOD_VERSION, resolve_many
from service.resolver.pool import collector_paused

Method = Callable[[Sequence[RefInput], CatalogueTables], list[Decision]]
METHODS: dict[str, Method] = {"resolver": resolve_many, "sbmv": sbmv.resolve_many}
METRICS = ("precision", "recall", "null")


def norm(doi: str | None) -> str | None:
    """A DOI as score-resolver compares it: a doi.org or doi: prefix dropped, trimmed, lower-cased."""
    if doi is None:
        return None
    for prefix in (
        "https://doi.org/",
        "http://doi.org/",
        "https://dx.doi.org/",
        "http://dx.doi.org/",
        "doi:",
    ):
        if doi.lower().startswith(prefix):
            doi = doi[len(prefix) :]
    return doi.strip().lower() or None


def expected(q: dict[str, Any]) -> set[str]:
    """The DOIs a query's answer may be (none: its work is not in the catalogue)."""
    exp = q.get("expected_doi")
    given = exp if isinstance(exp, list) else [exp]
    return {d for d in map(norm, given) if d}


def answer(
    method: Method, rows: list[dict[str, Any]], catalogue: CatalogueTables
) -> tuple[list[Decision], float]:
    """Each query's decision, in batches as `ledger resolve` decides; and the seconds it took."""
    out: list[Decision] = []
    t = time.perf_counter()
    for i in range(0, len(rows), run_flow.BATCH):
        with collector_paused():
            out += method([ref_input(q) for q in rows[i : i + run_flow.BATCH]], catalogue)
    return out, time.perf_counter() - t


def counts(rows: list[dict[str, Any]], answers: list[str | None]) -> dict[str, dict[str, int]]:
    """score-resolver's counts, overall and per style: n, pos, neg, ans, ok, abst."""
    per: dict[str, dict[str, int]] = {}
    for q, ans in zip(rows, answers, strict=True):
        exp = expected(q)
        for key in ("overall", q.get("style", "?")):
            c = per.setdefault(key, dict.fromkeys(("n", "pos", "neg", "ans", "ok", "abst"), 0))
            c["n"] += 1
            c["pos" if exp else "neg"] += 1
            c["abst"] += not exp and ans is None
            c["ans"] += ans is not None
            c["ok"] += ans is not None and ans in exp
    return per


def scores(c: dict[str, int]) -> dict[str, Any]:
    """Precision, recall and null answered from the counts (None where there is nothing to count)."""

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {
        **c,
        "precision": ratio(c["ok"], c["ans"]),
        "recall": ratio(c["ok"], c["pos"]),
        "null": ratio(c["abst"], c["neg"]),
        "wrong": c["ans"] - c["ok"],
    }


def markdown(results: dict[str, Any]) -> str:
    """One table: per style, each metric for the resolver and SBMV side by side."""
    names = list(results["methods"])
    by = {m: results["methods"][m]["styles"] for m in names}
    lines = [
        "# Development figures: the resolver and SBMV on the development split",
        "",
        f"The shared development split (`shared/fixtures/resolver-dev`): {results['queries']:,} queries "
        f"against {results['works']:,} works, scored as `score-resolver` scores them; matcher "
        f"`{results['matcher']}`, SBMV at `MIN_SIMILARITY` {results['sbmv_threshold']}, on one "
        f"{results['backend']} ledger, code at "
        f"`{results['commit']}`, measured {results['measured']}. These are development figures, not the "
        "hidden test split's.",
        "",
        "| style | n | " + " | ".join(f"{x} {m}" for x in (*METRICS, "wrong") for m in names) + " |",
        "|---|---|" + "---|" * (len(METRICS) + 1) * len(names),
    ]
    styles = ["overall"] + sorted(k for k in by[names[0]] if k != "overall")
    for style in styles:
        cells = []
        for x in (*METRICS, "wrong"):
            for m in names:
                v = by[m][style][x]
                cells.append("n/a" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)))
        name = "**overall**" if style == "overall" else f"`{style}`"
        lines.append(f"| {name} | {by[names[0]][style]['n']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "precision: correct answers / answers that name a work; recall: correct answers / queries whose work "
        "the catalogue holds; null: queries whose work it does not hold answered with none; wrong: answers "
        "naming another work than the expected one.",
        "",
        "Wrong `verified_exact` answers of the resolver: "
        f"{results['methods']['resolver']['wrong_verified_exact']}. Seconds to answer every query in one "
        "process: " + ", ".join(f"{m} {results['methods'][m]['seconds']}" for m in names) + ".",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=DEV, help="the development set's folder")
    ap.add_argument("--db", help="a ledger holding the set's catalogue (default: a new SQLite one)")
    ap.add_argument("--answers", type=Path, help="write each method's answers (score-resolver's input) here")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent, help="devquality.json and .md here")
    a = ap.parse_args(argv)
    rows = list(queries(a.dev / "queries.jsonl"))
    with tempfile.TemporaryDirectory(prefix="devquality-") as tmp:
        db = a.db
        if db is None:
            db = str(Path(tmp) / "dev.db")
            ingest(db, a.dev / "catalogue.json")
        catalogue = open_catalogue(db)
        results: dict[str, Any] = {
            "queries": len(rows),
            "works": len(json.loads((a.dev / "catalogue.json").read_text())["message"]["items"]),
            "matcher": METHOD_VERSION,
            "sbmv_threshold": sbmv.MIN_SIMILARITY,
            "backend": "PostgreSQL" if db.startswith("postgresql") else "SQLite",
            "commit": _commit(),
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "methods": {},
        }
        for name, method in METHODS.items():
            decisions, secs = answer(method, rows, catalogue)
            dois = [norm(d.work.doi) if d.work is not None else None for d in decisions]
            if a.answers:
                a.answers.mkdir(parents=True, exist_ok=True)
                with (a.answers / f"answers-{name}.jsonl").open("w") as f:
                    f.writelines(
                        json.dumps({"id": q["id"], "doi": x}) + "\n" for q, x in zip(rows, dois, strict=True)
                    )
            per = counts(rows, dois)
            wrong_exact = sum(
                d.status == "verified_exact" and x not in expected(q)
                for q, d, x in zip(rows, decisions, dois, strict=True)
            )
            results["methods"][name] = {
                "seconds": round(secs, 1),
                "wrong_verified_exact": wrong_exact,
                "styles": {k: scores(c) for k, c in per.items()},
            }
            o = results["methods"][name]["styles"]["overall"]
            print(f"{name}: P {o['precision']} R {o['recall']} null {o['null']}", file=sys.stderr)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "devquality.json").write_text(json.dumps(results, indent=1) + "\n")
    (a.out / "devquality.md").write_text(markdown(results))
    print(markdown(results))


def _commit() -> str:
    import subprocess

    from bench.resolver.devrate import REPO

    out = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip()


if __name__ == "__main__":
    main()

"""Gather the runs of evaluate.py (each written into its own folder) into results.json and results.md: a
headline table of every run, then each run's own tables.

    python -m bench.resolver.summary sqlite=/tmp/runs/sqlite postgresql=/tmp/runs/pg sqlite-1m=/tmp/runs/1m
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.resolver.evaluate import HERE, markdown

METRICS = ("precision", "recall", "f1", "held_out_unresolved", "wrong_verified_exact")


def headline(runs: dict[str, dict[str, Any]]) -> list[str]:
    """One row per run and method: the overall scores and the rate."""
    lines = [
        "| run | catalogue | works | method | " + " | ".join(METRICS) + " | references/s |",
        "|" + "---|" * (5 + len(METRICS)),
    ]
    for name, r in runs.items():
        for m, got in r["methods"].items():
            o = got["scores"]["overall"]
            cells = " | ".join(str(o[x]) for x in METRICS)
            rate = got["references_per_s"]
            lines.append(f"| {name} | {r['catalogue']} | {r['catalogue_works']} | {m} | {cells} | {rate} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="name=folder holding one run's results.json")
    ap.add_argument("--out", type=Path, default=HERE)
    a = ap.parse_args(argv)
    runs = {}
    for spec in a.runs:
        name, _, folder = spec.partition("=")
        runs[name] = json.loads((Path(folder) / "results.json").read_text())
    (a.out / "results.json").write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    parts = ["# Resolver evaluation on real ledgers", "", *headline(runs), ""]
    for name, r in runs.items():
        parts += [f"## Run `{name}`", ""]
        # the run's title becomes a line under the run's heading, its sections one level down
        for line in markdown(r).splitlines():
            parts.append(
                line[2:] if line.startswith("# ") else "#" + line if line.startswith("## ") else line
            )
        parts.append("")
    (a.out / "results.md").write_text("\n".join(parts))


if __name__ == "__main__":
    main()

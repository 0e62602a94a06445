"""Count the evaluation set (per style and split, noise, near-duplicate kind), as markdown tables for the
README. Run: python -m bench.resolver.stats."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.resolver.make_catalogue import DATA, gz_lines


def table(title: str, counts: Counter[tuple[str, str]], cols: list[str], total: bool = True) -> str:
    rows = sorted({k for k, _ in counts})
    out = [f"| {title} | " + " | ".join(cols) + " | total |", "|---" * (len(cols) + 2) + "|"]
    for r in rows:
        cells = [counts[(r, c)] for c in cols]
        out.append(f"| {r} | " + " | ".join(str(c) for c in cells) + f" | {sum(cells)} |")
    tot = [sum(counts[(r, c)] for r in rows) for c in cols]
    if total:
        out.append("| total | " + " | ".join(str(t) for t in tot) + f" | {sum(tot)} |")
    return "\n".join(out)


def main(data: Path = DATA) -> None:
    refs = list(gz_lines(data / "references.jsonl.gz"))
    meta = list(gz_lines(data / "works_meta.jsonl.gz"))
    splits = ["tune", "test"]
    style: Counter[tuple[str, str]] = Counter()
    noise: Counter[tuple[str, str]] = Counter()
    dup: Counter[tuple[str, str]] = Counter()
    other: Counter[tuple[str, str]] = Counter()
    for r in refs:
        style[(r["style"], r["split"])] += 1
        for n in {x.split(":")[-1] for x in r["noise"]} or {"clean"}:
            noise[(n, r["split"])] += 1
        dup[(r["near_duplicate"] or "none", r["split"])] += 1
        other[("held out" if r["held_out"] else "in catalogue", r["split"])] += 1
        if r["structured"]:
            other[("with structured fields", r["split"])] += 1
        if r["identifier_in_text"]:
            other[(f"{r['identifier_in_text']} id in text", r["split"])] += 1
        other[(f"type {r['type']}", r["split"])] += 1
    works: Counter[tuple[str, str]] = Counter()
    for m in meta:
        works[("held out" if m["held_out"] else "catalogued", m["split"])] += 1
        works[(f"kind {m['kind'] or 'single'}", m["split"])] += 1
    print(table("works (rows overlap)", works, splits, total=False), end="\n\n")
    print(table("style", style, splits), end="\n\n")
    print(table("noise (a reference may have several)", noise, splits), end="\n\n")
    print(table("near-duplicate in catalogue", dup, splits), end="\n\n")
    print(table("references (rows overlap)", other, splits, total=False))


if __name__ == "__main__":
    main()

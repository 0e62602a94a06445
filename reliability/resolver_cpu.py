"""The worst CPU time per reference over hostile references, against a normal reference's.

A SQLite ledger holding the resolver evaluation set's catalogue (bench/resolver/data, about 16,000
works), one citing paper of `--per-case` normal references (the set's own, in many styles), and one
citing paper per hostile case holding `--per-case` copies of it, each at the length the matcher reads
(LEDGER_RESOLVER_MAX_TEXT, its default unless set). Each paper is resolved through the function
`POST /resolve` calls (`resolve_on_cores`, a dry run, so it can be run again) and the least CPU time of
`--repeat` runs, per reference, is printed per case with its ratio to the normal references'. The
target is 10x at most.

    .venv/bin/python -m reliability.resolver_cpu
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.resolver.make_catalogue import DATA, gz_lines
from ledger.model.events import CitationData, CitationObserved, PaperData, PaperObserved
from ledger.model.works import Reference
from service.ledger import Ledger
from service.resolver.defaults import default_resolver
from service.resolver.match import max_text
from service.resolver.pool import resolve_on_cores
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works

AT = "2026-08-07T06:00:33.427109Z"
MAX_TEXT = max_text()
TARGET = 10.0


def _fill(unit: str, head: str = "", tail: str = "") -> str:
    """`head`, then `unit` repeated, then `tail`: MAX_TEXT characters in all."""
    room = max(0, MAX_TEXT - len(head) - len(tail))
    return head + (unit * (room // max(1, len(unit)) + 1))[:room] + tail


def cases(titles: list[str], n: int) -> dict[str, str]:
    """The hostile references, by name, the `n`th copy of each: the shapes that made a pattern
    backtrack, a page range past int()'s digits, identifiers glued in a row, and the words of many
    catalogue titles (each copy begins with its own number, so that no two are one search)."""
    words = f"r{n} " + " ".join(titles[n * 20 :])
    cases = {
        "volume, spaces, letter": _fill(" ", "1", "x"),
        "bars": _fill("|"),
        "page range of digits": _fill("7", "pp. ", "-8"),
        "digits and spaces": _fill("1 "),
        "DOI prefixes glued": _fill("doi:10.1234/a"),
        "DOI heads glued": _fill("10.1234/"),
        "DOI broken on every line": _fill("10.1234/a-\n"),
        "arxiv prefixes glued": _fill("arxiv-"),
        "arxiv, spaces": _fill(" ", "arxiv", "x"),
        "closing brackets": _fill(")", "doi:10.1234/a"),
        "volume (issue), page": _fill("12 (3), 45; "),
        "hyphen, space": _fill("a- "),
        "OCR letters": _fill("lO", " O", "x"),
        "catalogue titles": _fill(" ", words[: MAX_TEXT - 1]),
        "accessed, spaces": _fill(" ", "accessed on", "x"),
    }
    return {
        name: text if name == "catalogue titles" else f"r{n} {text}"[:MAX_TEXT]
        for name, text in cases.items()
    }


def _paper(arxiv_id: str, lines: list[str]) -> list[Any]:
    events: list[Any] = [PaperObserved(observed_at=AT, data=PaperData(arxiv_id, "A citing paper", "cs.DL",
                                                                      AT, AT, 1))]  # fmt: skip
    for n, line in enumerate(lines):
        oid = f"{int(arxiv_id.replace('.', '')):08x}-0000-4000-8000-{n:012x}"
        data = CitationData(oid, arxiv_id, n, "pdf_text", None, Reference(unstructured=line))
        events.append(CitationObserved(observed_at=AT, data=data))
    return events


def cpu_per_reference(run: Callable[[], object], refs: int, repeat: int) -> float:
    """The least CPU seconds of `repeat` runs, per reference."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        run()
        best = min(best, time.process_time() - t)
    return best / refs


def main() -> None:
    """Build the ledger, resolve each paper, print the figures (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-case", type=int, default=20, help="references per case")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the least is kept")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    refs = [r for r in gz_lines(DATA / "references.jsonl.gz") if r.get("unstructured")][::97][: args.per_case]
    titles = [w["title"][0] for w in gz_lines(DATA / "catalogue.ndjson.gz") if w.get("title")][:1000]
    copies = [cases(titles, n) for n in range(args.per_case)]
    hostile = copies[0]
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(str(Path(tmp) / "cpu.db"))
        works = b"".join(json.dumps(w).encode() + b"\n" for w in gz_lines(DATA / "catalogue.ndjson.gz"))
        ingest_works(ledger, SourceFile(NAME, works, "2026-11-01T00:00:00Z"))
        papers = {"normal": "2601.00000"} | {name: f"2601.{n + 1:05d}" for n, name in enumerate(hostile)}
        events = _paper(papers["normal"], [r["unstructured"] for r in refs])
        for name in hostile:
            events += _paper(papers[name], [c[name] for c in copies])
        ledger.append(events)
        resolver = default_resolver()
        figures: dict[str, Any] = {"max_text": MAX_TEXT, "per_case": args.per_case, "cases": {}}
        for name, arxiv_id in papers.items():
            summary = resolve_on_cores(ledger, [arxiv_id], resolver, dry_run=True)
            assert summary.examined == args.per_case, (name, summary.examined)
            cpu = cpu_per_reference(
                lambda a=arxiv_id: resolve_on_cores(ledger, [a], resolver, dry_run=True),  # type: ignore[misc]
                args.per_case,
                args.repeat,
            )
            figures["cases"][name] = {"cpu_ms": round(cpu * 1000, 3), "changed": summary.changed()}
        normal = figures["cases"]["normal"]["cpu_ms"]
        print(
            f"CPU per reference, least of {args.repeat} runs of {args.per_case} references,"
            f" text cap {MAX_TEXT}"
        )
        worst = ("", 0.0)
        for name, f in figures["cases"].items():
            ratio = f["cpu_ms"] / normal
            f["ratio"] = round(ratio, 2)
            if name != "normal" and ratio > worst[1]:
                worst = (name, ratio)
            print(f"  {name:28} {f['cpu_ms']:9.3f} ms  {ratio:6.2f}x  {f['changed']}")
        figures["worst"] = {"case": worst[0], "ratio": round(worst[1], 2), "target": TARGET}
        print(f"worst: {worst[0]} at {worst[1]:.2f}x a normal reference (target: at most {TARGET:.0f}x)")
        if args.json:
            print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()

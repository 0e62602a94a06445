"""Works files that try to take the resolver's matches over, full size, on the development set.

`python -m reliability.works_hijack [--attack NAME...] [--dev DIR]` ingests the development catalogue
(`shared/fixtures/resolver-dev/catalogue.json`) into a fresh ledger, ingests one attack file after it,
answers every development query through the resolver's own `resolve_many`, and prints one JSON line per
attack: what the ingest wrote and skipped, the answers' precision and recall (scored as
`shared/tools/score-resolver` scores them), and how many answers went to a work the attack added.
`none` is the catalogue alone, the baseline the others are read against. Nothing here asserts a time.

Attacks:
- `copies`: every work of the catalogue again under a new DOI, observed a year before the original;
- `everyword`: 25 works whose titles hold every word of the catalogue (skipped by the default title
  cap; `LEDGER_WORK_MAX_TITLE=1000000` lets them in, to test the title index's own bound);
- `cover`: works of 64 words each that together hold the catalogue's whole vocabulary;
- `hostile`: DOIs off the syntax (100,000 characters, U+0001, U+202E, U+200B, Arabic-Indic digits)
  and a 10 MB title.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ledger.model.resolving import RefInput
from ledger.model.works import Reference
from service.ledger import Ledger
from service.resolver.match import resolve_many
from service.resolver.run import BATCH
from service.sources import SourceFile
from service.sources.work_limits import WorkLimits, from_env
from service.sources.works import NAME, ingest_works

DEV = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "resolver-dev"
ORIGINAL_AT = "2026-01-01T00:00:00Z"
ATTACK_AT = "2025-01-01T00:00:00Z"  # backdated: a copy claims to be older than the original
_WORD = re.compile(r"[^\W_]+")
ATTACK_PREFIX = "10.5555/attack."


def _vocabulary(items: list[dict[str, Any]]) -> list[str]:
    words: set[str] = set()
    for it in items:
        for t in it.get("title", []) + it.get("container-title", []):
            words.update(_WORD.findall(t.lower()))
        for a in it.get("author", []):
            for k in ("family", "given"):
                if a.get(k):
                    words.update(_WORD.findall(a[k].lower()))
    return sorted(words)


def copies(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each work again under a DOI of the attacker's."""
    return [{**it, "DOI": f"{ATTACK_PREFIX}copy.{n}"} for n, it in enumerate(items)]


def everyword(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """25 works whose titles hold every word of the catalogue, shuffled."""
    words, rng, out = _vocabulary(items), random.Random(7), []
    for i in range(25):
        rng.shuffle(words)
        out.append({"DOI": f"{ATTACK_PREFIX}everyword.{i}", "title": [" ".join(words)],
                    "author": [{"family": "Mallory", "given": "M"}], "type": "journal-article"})  # fmt: skip
    return out


def cover(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Works of 64 words each, within every cap, that together hold the whole vocabulary."""
    words = _vocabulary(items)
    random.Random(3).shuffle(words)
    return [
        {
            "DOI": f"{ATTACK_PREFIX}cover.{i}",
            "title": [" ".join(words[j : j + 64])],
            "author": [{"family": "Mallory"}],
        }
        for i, j in enumerate(range(0, len(words), 64))
    ]


def hostile(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """DOIs off the syntax and a title of 10 MB, beside one good work."""

    def item(doi: str, **more: Any) -> dict[str, Any]:
        return {"DOI": doi, "title": ["A title of a work"], "author": [{"family": "Doe", "given": "Jane"}],
                "issued": {"date-parts": [[2020]]}, **more}  # fmt: skip

    return [
        item(f"{ATTACK_PREFIX}fine"),
        item("10.1000/" + "x" * 100_000),
        item("10.1000/a\u0001b"),
        item("10.1000/a\u202eb"),
        item("10.1000/a\u200bb"),
        item("10.\u0661\u0662\u0663\u0664/abc"),
        item(f"{ATTACK_PREFIX}big", title=["t" * (10 * 1024 * 1024)]),
    ]


ATTACKS: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "none": lambda items: [],
    "copies": copies,
    "everyword": everyword,
    "cover": cover,
    "hostile": hostile,
}


def _ingest(ledger: Ledger, items: list[dict[str, Any]], at: str, limits: WorkLimits) -> dict[str, Any]:
    body = json.dumps({"message": {"items": items}}).encode()
    s = ingest_works(ledger, SourceFile(NAME, body, at), None, limits=limits)
    return {"read": s.read, "appended": s.appended, "skipped": dict(s.skipped)}


def _norm(doi: str | None) -> str | None:
    return None if doi is None else doi.lower()


def score(queries: list[dict[str, Any]], answers: dict[str, str | None]) -> dict[str, Any]:
    """Precision, recall and the share of no-match queries answered null, as score-resolver counts."""
    answered = ok = positives = nulls = null_ok = 0
    for q in queries:
        want = q["expected_doi"]
        wanted = {_norm(d) for d in (want if isinstance(want, list) else [want])} - {None}
        got = _norm(answers.get(q["id"]))
        positives += bool(wanted)
        if not wanted:
            nulls += 1
            null_ok += got is None
        if got is not None:
            answered += 1
            ok += got in wanted
    return {
        "precision": round(ok / answered, 4) if answered else None,
        "recall": round(ok / positives, 4) if positives else None,
        "null_answered_null": round(null_ok / nulls, 4) if nulls else None,
        "answers": answered,
        "correct": ok,
    }


def run(name: str, dev: Path, work: Path) -> dict[str, Any]:
    """One attack: catalogue, attack file, every query answered; the figures as a dict."""
    items = json.loads((dev / "catalogue.json").read_bytes())["message"]["items"]
    queries = [json.loads(line) for line in (dev / "queries.jsonl").open(encoding="utf-8")]
    ledger = Ledger(str(work / f"{name}.db"))
    limits = from_env(os.environ)
    _ingest(ledger, items, ORIGINAL_AT, limits)
    began = time.process_time()
    attack = _ingest(ledger, ATTACKS[name](items), ATTACK_AT, limits)
    ingest_cpu = time.process_time() - began
    answers: dict[str, str | None] = {}
    statuses: Counter[str] = Counter()
    catalogue = ledger.catalogue
    began = time.process_time()
    for i in range(0, len(queries), BATCH):
        part = queries[i : i + BATCH]
        inputs = [
            RefInput(q["id"], msgspec.convert(q["reference"], Reference) if "reference" in q
                     else Reference(unstructured=q["unstructured"]), None)
            for q in part
        ]  # fmt: skip
        for q, decision in zip(part, resolve_many(inputs, catalogue), strict=True):
            answers[q["id"]] = decision.work.doi if decision.work else None
            statuses[decision.status] += 1
    resolve_cpu = time.process_time() - began
    taken = sum(1 for d in answers.values() if d and d.lower().startswith(ATTACK_PREFIX))
    return {
        "attack": name,
        "ingest": attack,
        "ingest_cpu_s": round(ingest_cpu, 2),
        "resolve_cpu_s": round(resolve_cpu, 2),
        **score(queries, answers),
        "answers_to_attack_works": taken,
        "statuses": dict(statuses),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the attacks named (all by default) and print a JSON line for each."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--attack", action="append", choices=sorted(ATTACKS), help="repeatable; default all")
    p.add_argument("--dev", type=Path, default=DEV, help="the resolver development set's folder")
    args = p.parse_args(argv)
    if not (args.dev / "catalogue.json").is_file():
        sys.exit(f"no development set at {args.dev} (it comes with the project's shared folder)")
    with tempfile.TemporaryDirectory(prefix="ledger-hijack-") as tmp:
        for name in args.attack or list(ATTACKS):
            print(json.dumps(run(name, args.dev, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()

"""What the resolver's catalogue costs: ingesting works (NDJSON of Crossref items), extending the
catalogue past its cursor, and its three batched candidate reads, on a synthetic catalogue of `--works`
works with titles drawn from a vocabulary of 5,000 words with Zipf's frequencies (a few words in many
titles, most in few), as real titles are.

    .venv/bin/python -m bench.catalogue_cost [--works 15000] [--refs 1000] [--db URL-or-dir]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from service.ledger import Ledger
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works

_TOPICS = (
    "training large language models memory efficient parallel pipeline tensor distributed deep learning "
    "neural networks optimization gradient scalable inference attention transformer sparse mixture experts "
    "graph convolution reinforcement policy vision image segmentation detection retrieval augmented "
    "generation compression quantization pruning federated privacy robust adversarial benchmark dataset "
    "protein folding molecular dynamics climate simulation quantum circuits error correction compiler "
    "scheduling cluster cloud storage network latency throughput energy hardware accelerator"
)
_WORDS = _TOPICS.split()
_NAMES = "Smith Chen Wang Li Zhang Kumar Garcia Müller Rossi Tanaka Kim Nguyen Brown Ivanov Silva"
_FAMILIES = _NAMES.split()


_VOCAB = list(
    dict.fromkeys(
        _WORDS + ["".join(random.Random(n).choices("aeioubcdfglmnprstvz", k=7)) for n in range(5000)]
    )
)
_WEIGHTS = [1 / (rank + 1) for rank in range(len(_VOCAB))]


def _work(i: int, rng: random.Random) -> dict[str, Any]:
    title = " ".join(dict.fromkeys(rng.choices(_VOCAB, _WEIGHTS, k=rng.randint(6, 12)))).capitalize()
    authors = [
        {"family": rng.choice(_FAMILIES) + str(i % 97), "given": "A."} for _ in range(rng.randint(1, 4))
    ]
    return {
        "DOI": f"10.5555/bench.{i}",
        "title": [title],
        "author": authors,
        "container-title": [f"Journal of {rng.choice(_WORDS).capitalize()}"],
        "issued": {"date-parts": [[rng.randint(1990, 2025)]]},
        "volume": str(rng.randint(1, 300)),
        "page": f"{rng.randint(1, 3000)}-{rng.randint(3001, 4000)}",
        "type": "journal-article",
    }


def main() -> None:
    """Build, then time each step; print one line each."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--works", type=int, default=15_000)
    parser.add_argument("--refs", type=int, default=1_000)
    parser.add_argument("--db", default=None, help="a postgresql:// URL, or a directory for the SQLite file")
    args = parser.parse_args()
    rng = random.Random(7)
    works = [_work(i, rng) for i in range(args.works)]
    folder = Path(tempfile.mkdtemp())
    source = folder / "works.ndjson"
    source.write_text("".join(json.dumps(w) + "\n" for w in works))
    db = args.db if args.db and args.db.startswith("postgres") else str(Path(args.db or folder) / "cat.db")
    ledger = Ledger(db, synchronous="NORMAL")

    began = time.perf_counter()
    summary = ingest_works(ledger, SourceFile(NAME, source, "2026-11-01T00:00:00Z"))
    took = time.perf_counter() - began
    print(f"ingest {summary.appended} works: {took:.1f} s ({summary.appended / took:.0f} works/s)")
    began = time.perf_counter()
    ledger.catalogue  # noqa: B018 - extended to the head
    print(f"catalogue extended over {summary.appended} events: {time.perf_counter() - began:.2f} s")
    began = time.perf_counter()
    again = ingest_works(ledger, SourceFile(NAME, source, "2026-11-02T00:00:00Z"))
    print(f"re-ingest ({again.unchanged} unchanged): {time.perf_counter() - began:.1f} s")

    picks = [works[rng.randrange(len(works))] for _ in range(args.refs)]
    texts = [
        f"{w['author'][0]['family']} A. {w['title'][0]}. {w['container-title'][0]} "
        f"{w['volume']}, {w['page']} ({w['issued']['date-parts'][0][0]})"
        for w in picks
    ]
    cat = ledger.catalogue
    began = time.perf_counter()
    found = cat.catalogue_search(texts, 10)
    took = time.perf_counter() - began
    hit = sum(any(c.doi == w["DOI"].lower() for c in f) for w, f in zip(picks, found, strict=True))
    print(
        f"search {len(texts)} texts, limit 10: {took:.2f} s ({len(texts) / took:.0f}/s), "
        f"right work among them: {hit}"
    )
    keys = [str(w["DOI"]) for w in picks]
    began = time.perf_counter()
    cat.catalogue_by_keys(keys)
    took = time.perf_counter() - began
    print(f"by keys {len(keys)}: {took * 1000:.0f} ms")
    pairs = [(str(w["volume"]), str(w["page"]).split("-")[0]) for w in picks]
    began = time.perf_counter()
    got = cat.catalogue_by_volume_page(pairs, 10)
    took = time.perf_counter() - began
    print(f"by volume and page {len(pairs)}: {took * 1000:.0f} ms, {sum(map(len, got))} candidates")
    ledger.close()


if __name__ == "__main__":
    main()

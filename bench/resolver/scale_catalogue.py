"""A larger catalogue for the scale figure: the evaluation set's catalogue plus N more works drawn from the
same vocabulary (make_catalogue.Maker, another seed), none sharing a DOI or a title with any work of the
set (catalogued or held out), so the set's expected answers stay right. Nothing is rendered.

    python -m bench.resolver.scale_catalogue --extra 984000 --out /tmp/catalogue-1m.ndjson.gz
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.resolver.make_catalogue import DATA, Maker, crossref_item, gz_lines, gz_writer, norm


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--extra", type=int, required=True, help="works to add to the set's catalogue")
    ap.add_argument("--seed", type=int, default=31, help="another seed than the set's (30)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    m = Maker(a.seed)
    base = list(gz_lines(a.data / "catalogue.ndjson.gz"))
    # the set's DOIs and titles are taken: a new work never stands for one of them
    for path in ("catalogue.ndjson.gz", "held_out.ndjson.gz"):
        for item in gz_lines(a.data / path):
            m.dois.add(item["DOI"].lower())
            # a preprint's DOI is made from its arXiv id, not drawn: its id is taken too
            m.arxiv.update(item.get("alternative-id") or [])
            if item["DOI"].lower().startswith("10.48550/arxiv."):
                m.arxiv.add(item["DOI"][len("10.48550/arxiv.") :])
            m.titles.add(norm(item["title"][0] + "".join(item.get("subtitle") or [])))
            m.titles.add(norm(item["title"][0]))
    t = time.perf_counter()
    with gz_writer(a.out) as out:
        for item in base:
            out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
        made = 0
        for n in range(a.extra):
            try:
                w = m.group_of(None)[0]
            except RuntimeError as e:  # the vocabulary has no new title or DOI left
                print(f"stopped after {n} works: {e}", flush=True)
                break
            made += 1
            out.write(json.dumps(crossref_item(w), ensure_ascii=False, separators=(",", ":")) + "\n")
            if n and n % 100_000 == 0:
                print(f"{n} works, {n / (time.perf_counter() - t):.0f}/s", flush=True)
    print(f"{len(base) + made} works -> {a.out}")


if __name__ == "__main__":
    main()

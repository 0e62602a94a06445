"""The evaluation set's catalogue held in memory, answering `CatalogueTables` the way the stores do (an OR
of the searched words ranked by BM25; keys; (volume, first page)), so the matcher can be tuned in seconds.
The figures reported come from a real ledger (tune_matcher.py --db)."""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ledger.model.doi import arxiv_key, doi_key
from ledger.model.works import CatalogueWork

# the stores' search rule (ledger/storage/derived/catalogue.py): words, stop words dropped, the 24 longest
_WORD = re.compile(r"[^\W_]+")
_BROKEN = re.compile(r"(?<=[^\W\d_])-\s+(?=[^\W\d_])")
_STOP = frozenset(
    [
        "a",
        "al",
        "an",
        "and",
        "are",
        "arxiv",
        "as",
        "at",
        "be",
        "by",
        "com",
        "conference",
        "der",
        "die",
        "doi",
        "et",
        "for",
        "from",
        "http",
        "https",
        "in",
        "international",
        "into",
        "is",
        "it",
        "its",
        "journal",
        "no",
        "of",
        "on",
        "or",
        "org",
        "pages",
        "pp",
        "preprint",
        "proc",
        "proceedings",
        "the",
        "to",
        "und",
        "using",
        "via",
        "vol",
        "with",
        "www",
    ]
)
_ARXIV_IN = re.compile(r"(?i)(?:arxiv[:.]\s*|arxiv\.org/(?:abs|pdf)/)([\w./-]+?)(?:v\d+)?$")


def tokens(text: str, most: int = 24) -> list[str]:
    """The words a search looks for."""
    words = _WORD.findall(_BROKEN.sub("", text.lower()))
    seen = list(dict.fromkeys(w for w in words if len(w) > 1 and not w.isdigit() and w not in _STOP))
    if len(seen) <= most:
        return seen
    keep = set(sorted(seen, key=lambda w: -len(w))[:most])
    return [w for w in seen if w in keep]


def _arxiv_of(item: dict[str, Any]) -> str | None:
    doi = item.get("DOI", "").lower()
    if doi.startswith("10.48550/arxiv."):
        return doi[len("10.48550/arxiv.") :]
    for rel in item.get("relation", {}).get("has-preprint", []):
        if rel.get("id-type") == "arxiv":
            return str(rel["id"])
    return None


def crossref_works(path: Path, observed_at: str = "2026-11-01T00:00:00Z") -> Iterator[CatalogueWork]:
    """The Crossref items of an NDJSON file as catalogue works, seq from 1 in file order."""
    with gzip.open(path, "rt") as f:
        for seq, line in enumerate(f, 1):
            item = json.loads(line)
            parts = (item.get("issued") or {}).get("date-parts") or [[None]]
            page = item.get("page")
            yield CatalogueWork(
                seq,
                observed_at,
                "crossref",
                item["DOI"].lower(),
                _arxiv_of(item),
                (item.get("title") or [None])[0],
                tuple(a.get("family") or a.get("name") or "" for a in item.get("author", [])),
                (item.get("container-title") or [None])[0],
                parts[0][0],
                item.get("volume"),
                item.get("issue"),
                re.split(r"\s*[-\u2010-\u2015,]\s*", page.strip(), maxsplit=1)[0] if page else None,
                item.get("type"),
            )


class MemoryCatalogue:
    """`CatalogueTables` over a list of works."""

    def __init__(self, works: Sequence[CatalogueWork]) -> None:
        self.works = list(works)
        self.by_key: dict[str, list[CatalogueWork]] = defaultdict(list)
        self.by_pair: dict[tuple[str, str], list[CatalogueWork]] = defaultdict(list)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for n, w in enumerate(self.works):
            for k in {doi_key(w.doi), arxiv_key(w.arxiv_id)} - {None}:
                self.by_key[k].append(w)  # type: ignore[index]
            if w.volume and w.first_page:
                self.by_pair[(w.volume.strip().lower(), w.first_page.strip().lower())].append(w)
            words = _WORD.findall(" ".join(x for x in (w.title, *w.authors, w.container) if x).lower())
            counts: dict[str, int] = defaultdict(int)
            for t in words:
                counts[t] += 1
            for t, c in counts.items():
                self.postings[t].append((n, c))
            self.lengths.append(len(words))
        self.avg = sum(self.lengths) / max(1, len(self.lengths))

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        return [sorted(self.by_key.get(doi_key(k) or "", []), key=lambda w: w.seq) for k in keys]

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        out = []
        n = len(self.works)
        for text in texts:
            scores: dict[int, float] = defaultdict(float)
            for t in tokens(text):
                posting = self.postings.get(t)
                if not posting:
                    continue
                idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
                for i, c in posting:
                    norm = c + 1.2 * (0.25 + 0.75 * self.lengths[i] / self.avg)
                    scores[i] += idf * c * 2.2 / norm
            best = sorted(scores.items(), key=lambda kv: (-kv[1], self.works[kv[0]].seq))[:limit]
            out.append([self.works[i] for i, _ in best])
        return out

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        return [
            sorted(self.by_pair.get((v.lower(), p.lower()), []), key=lambda w: w.seq)[:limit]
            for v, p in pairs
        ]

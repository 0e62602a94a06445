"""A stand-in for the ledger's catalogue tables, for evaluating before `ledger ingest works` lands: the
works of data/catalogue.ndjson.gz in an in-memory SQLite database with an FTS5 index of titles, authors
and containers, a key table, and a (volume, first page) index. It answers `CatalogueTables`
(ledger/storage/interface.py) the way the protocol says: one list of candidates per item asked."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.resolver.make_catalogue import gz_lines
from ledger.model.doi import arxiv_key, doi_key, normalize_doi
from ledger.model.works import CatalogueWork

OBSERVED_AT = "2026-12-01T00:00:00Z"
_WORD = re.compile(r"[^\W_]+")
# words nearly every work has: a search engine's analyser drops them, and they would make every row a match
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
        "via",
        "vol",
        "no",
        "pp",
        "p",
        "eds",
        "ed",
        "et",
        "al",
        "journal",
        "proceedings",
        "conference",
        "international",
        "review",
        "letters",
    ]
)


def work_of(seq: int, item: dict[str, Any]) -> CatalogueWork:
    """A Crossref item as the catalogue hands it to the resolver; the arXiv id only for a preprint."""
    title = (item.get("title") or [None])[0]
    if item.get("subtitle") and title:
        title = f"{title}: {item['subtitle'][0]}"
    date = (item.get("issued") or {}).get("date-parts") or [[None]]
    arxiv = (item.get("alternative-id") or [None])[0] if item.get("type") == "posted-content" else None
    page = item.get("page")
    return CatalogueWork(
        seq,
        OBSERVED_AT,
        "crossref",
        normalize_doi(item["DOI"]),
        arxiv,
        title,
        tuple(a.get("family") or a.get("name") or "" for a in item.get("author") or []),
        (item.get("container-title") or [None])[0],
        date[0][0],
        item.get("volume"),
        item.get("issue"),
        page.split("-")[0] if page else None,
        item.get("type"),
    )


def works_of(path: Path) -> Iterator[CatalogueWork]:
    """The works of a gzipped Crossref NDJSON file, seq from 1 in file order."""
    for seq, item in enumerate(gz_lines(path), start=1):
        yield work_of(seq, item)


def fts_query(text: str) -> str:
    """Every word of the text as an FTS5 OR query (quoted, so no word is read as an operator)."""
    words = dict.fromkeys(w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP)
    return " OR ".join(f'"{w}"' for w in words)


class MemoryCatalogue:
    """`CatalogueTables` over works held in an in-memory SQLite database."""

    def __init__(self, works: Iterable[CatalogueWork]) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.works: dict[int, CatalogueWork] = {}
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
        self.db.execute("CREATE TABLE keys(key TEXT, seq INTEGER)")
        self.db.execute("CREATE TABLE vp(volume TEXT, page TEXT, seq INTEGER)")
        rows, keys, vps = [], [], []
        for w in works:
            self.works[w.seq] = w
            rows.append((w.seq, f"{w.title or ''} {' '.join(w.authors)} {w.container or ''}"))
            keys += [(k, w.seq) for k in (doi_key(w.doi), arxiv_key(w.arxiv_id)) if k]
            if w.volume and w.first_page:
                vps.append((w.volume.lower(), w.first_page.lower(), w.seq))
        self.db.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", rows)
        self.db.executemany("INSERT INTO keys VALUES (?, ?)", keys)
        self.db.executemany("INSERT INTO vp VALUES (?, ?, ?)", vps)
        self.db.execute("CREATE INDEX keys_key ON keys(key)")
        self.db.execute("CREATE INDEX vp_pair ON vp(volume, page)")

    @classmethod
    def from_file(cls, path: Path) -> MemoryCatalogue:
        return cls(works_of(path))

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        q = "SELECT seq FROM keys WHERE key = ?"
        return [[self.works[s] for (s,) in self.db.execute(q, (k,))] for k in keys]

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        q = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?"
        out = []
        for text in texts:
            m = fts_query(text)
            out.append([self.works[s] for (s,) in self.db.execute(q, (m, limit))] if m else [])
        return out

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        q = "SELECT seq FROM vp WHERE volume = ? AND page = ? LIMIT ?"
        return [
            [self.works[s] for (s,) in self.db.execute(q, (v.lower(), p.lower(), limit))] for v, p in pairs
        ]

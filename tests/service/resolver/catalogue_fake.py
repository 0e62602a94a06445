"""A test double of `CatalogueTables`: works held in a list, candidates found by shared words, keys and
(volume, first page) pairs. Not a store: the matcher's tests need a catalogue, not its indexes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ledger.model.doi import arxiv_key, doi_key
from ledger.model.works import CatalogueWork

_WORD = re.compile(r"[0-9a-z]+")


def _words(text: str | None) -> set[str]:
    return set(_WORD.findall((text or "").lower()))


def work(
    seq: int,
    title: str | None,
    authors: Iterable[str] = (),
    *,
    doi: str | None = None,
    arxiv_id: str | None = None,
    container: str | None = None,
    year: int | None = None,
    volume: str | None = None,
    issue: str | None = None,
    first_page: str | None = None,
    type: str | None = "journal-article",
    source: str = "crossref",
) -> CatalogueWork:
    """A catalogue work with the fields a test names and a DOI made from its seq otherwise."""
    if doi is None and source != "arxiv":
        doi = f"10.5555/w{seq}"
    return CatalogueWork(
        seq=seq,
        observed_at="2026-01-01T00:00:00Z",
        source=source,
        type=type,
        doi=doi,
        arxiv_id=arxiv_id,
        title=title,
        authors=tuple(authors),
        container=container,
        year=year,
        volume=volume,
        issue=issue,
        first_page=first_page,
    )


class FakeCatalogue:
    """The works given, answering each batch the way the protocol says (a superset, in no promised
    order); `calls` counts the calls, to show the matcher asks once per batch."""

    def __init__(self, works: Iterable[CatalogueWork], *, reverse: bool = False) -> None:
        self.works = list(works)
        self.reverse = reverse  # answer in the opposite order: decisions must not depend on it
        self.calls: dict[str, int] = {"keys": 0, "search": 0, "volume_page": 0}
        self._words = [_words(f"{w.title} {w.container} {' '.join(w.authors)}") for w in self.works]

    def _ordered(self, found: list[CatalogueWork]) -> list[CatalogueWork]:
        return found[::-1] if self.reverse else found

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        self.calls["keys"] += 1
        out = []
        for key in keys:
            found = [w for w in self.works if key in {doi_key(w.doi), arxiv_key(w.arxiv_id)}]
            out.append(self._ordered(found))
        return out

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        self.calls["search"] += 1
        out = []
        for text in texts:
            asked = _words(text)
            ranked = sorted(
                (
                    (len(asked & ws), w.seq, w)
                    for w, ws in zip(self.works, self._words, strict=True)
                    if asked & ws
                ),
                key=lambda t: (-t[0], t[1]),
            )
            out.append(self._ordered([w for _, _, w in ranked[:limit]]))
        return out

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        self.calls["volume_page"] += 1
        out = []
        for volume, page in pairs:
            found = [w for w in self.works if w.volume == volume and (w.first_page or "").lower() == page]
            out.append(self._ordered(found[:limit]))
        return out

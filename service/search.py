"""Finding papers and references by the words of their titles: the index extended to the head, then a
page of hits, each with the path of the record that shows it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.ids import normalise_arxiv
from ledger.model.jsonvalue import JsonObject
from ledger.storage.derived.search import Hit, query_words
from service.ledger import Ledger

PER_PAGE = 50
MAX_PAGE = 10**6


@dataclass(frozen=True)
class Answer:
    """A page of hits for a query, and how far the index reached when it was read."""

    q: str
    words: list[str]
    page: int
    total: int
    hits: list[Hit]
    indexed_through: int
    head_seq: int
    # the paper q names when q is one arXiv id as pasted (bare, arXiv:, a version, an abs URL, a DOI)
    arxiv_id: str | None = None

    @property
    def pages(self) -> int:
        """How many pages the hits fill (at least one)."""
        return max(1, -(-self.total // PER_PAGE))

    def page_href(self, page: int) -> str:
        """The path of another page of the same query."""
        return "/search?" + urlencode({"q": self.q, "page": page})

    def to_dict(self) -> JsonObject:
        """The JSON answer of GET /search."""
        out: JsonObject = {
            "q": self.q,
            "words": [*self.words],
            "hits": [hit_json(h) for h in self.hits],
            "page": {
                "number": self.page,
                "per_page": PER_PAGE,
                "total_hits": self.total,
                "pages": self.pages,
                "next": self.page_href(self.page + 1) if self.page < self.pages else None,
                "prev": self.page_href(self.page - 1) if self.page > 1 else None,
            },
            "index": {
                "through_seq": self.indexed_through,
                "head_seq": self.head_seq,
                "complete": self.indexed_through >= self.head_seq,
            },
        }
        if self.arxiv_id is not None:
            out["arxiv_id"] = self.arxiv_id
        return out


def record_href(hit: Hit) -> str:
    """The record page that shows the hit: the paper's, or its citing paper's at the observation."""
    path = f"/paper/{hit.arxiv_id}/citation-record"
    return f"{path}#{quote(hit.observation_id)}" if hit.observation_id else path


def hit_json(hit: Hit) -> JsonObject:
    """One hit as JSON."""
    out: JsonObject = {
        "kind": hit.kind,
        "arxiv_id": hit.arxiv_id,
        "title": hit.title,
        "seq": hit.seq,
        "href": record_href(hit),
    }
    if hit.observation_id:
        out["observation_id"] = hit.observation_id
        out["reference_index"] = hit.reference_index
    return out


def pasted_id(q: str | None) -> str | None:
    """The canonical arXiv id when `q` is one id as people paste it (every form the paper routes take),
    else None: `q` is title words."""
    text = (q or "").strip()
    if not text or any(c.isspace() for c in text):
        return None
    try:
        return normalise_arxiv(text, "q")
    except InvalidEvent:
        return None


def _paper_answer(ledger: Ledger, q: str, arxiv_id: str) -> Answer:
    """The one hit of a query that names a paper: the paper under its latest title; NotFound when the
    ledger has never observed it."""
    history = ledger.store.paper_history(arxiv_id)
    if not history:
        raise NotFound(
            f"arXiv:{arxiv_id} is not in this ledger: it has never been observed here",
            details={"arxiv_id": arxiv_id, "q": q},
        )
    title = history[-1].data.title
    seq = history[-1].seq
    for fact in reversed(history):  # the first event of the run that carries the latest title
        if fact.data.title != title:
            break
        seq = fact.seq
    hit = Hit(arxiv_id, "", None, title, seq)
    head = ledger.head()
    indexed = ledger.store.search.titles_indexed()
    return Answer(q, [], 1, 1, [hit], indexed, head.seq, arxiv_id)


def search(ledger: Ledger, q: str | None, page: int = 1, *, index: bool = True, where: str = "q") -> Answer:
    """Page `page` of the titles holding every word of `q` (each word as a prefix), papers first; the
    index is first extended to the head unless `index` is False (a read-only server writes nothing),
    and a ledger that cannot be written is searched as far as it is indexed. A `q` that is an arXiv id
    (`pasted_id`) answers that paper alone, or NotFound when the ledger does not hold it."""
    arxiv_id = pasted_id(q)
    if arxiv_id is not None:
        return _paper_answer(ledger, str(q), arxiv_id)
    words = query_words(q, where)
    if not 1 <= page <= MAX_PAGE:
        raise InvalidEvent("page", f"{page}: a page is 1..{MAX_PAGE}")
    head = ledger.head()
    if index and ledger.store.search.titles_indexed() < head.seq:
        ledger.store.search.index_titles(head.seq)
    found = ledger.store.search.search_titles(words, PER_PAGE, (page - 1) * PER_PAGE)
    return Answer(str(q), words, page, found.total, found.hits, found.indexed_through, head.seq)

"""Title search: the words of a query, and what a hit is. The index is derived from the events (papers'
titles from paper.observed, references' from the cited_work.title of citations and resolutions), kept in
search_titles past a cursor and extended when a search reads it (no append pays for it); its SQL is
tables/search.py's, spelled per backend by the Dialect (SQLite FTS5, PostgreSQL text search)."""

from __future__ import annotations

import re
from typing import NamedTuple

from ledger.model.errors import InvalidEvent

MAX_QUERY = 200  # characters of a query
MAX_WORDS = 12
# letters and digits in any script: what FTS5's unicode61 tokenizer and PostgreSQL's parser both
# take as a word's characters (an underscore, a hyphen, a quote separate words)
_WORD = re.compile(r"[^\W_]+")
# events past the cursor indexed per transaction: the SQLite write lock is held some 0.1 s for each
INDEX_CHUNK = 100_000


class Hit(NamedTuple):
    """One title that matched: a paper's own (observation_id '') or a reference's in a citing paper."""

    arxiv_id: str  # the paper, or the citing paper of a reference
    observation_id: str
    reference_index: int | None
    title: str
    seq: int  # the first event that carried this title

    @property
    def kind(self) -> str:
        """`paper` or `reference`."""
        return "reference" if self.observation_id else "paper"


class Found(NamedTuple):
    """A page of hits, how many there are in all, and how far the index reached (its last seq)."""

    total: int
    hits: list[Hit]
    indexed_through: int


def query_words(q: str | None, where: str = "q") -> list[str]:
    """The words of a query, lower-cased, each matched as a prefix of a title's word (all of them must
    match); InvalidEvent naming `where` for a query too long, with too many words or none."""
    if q is None or not q.strip():
        raise InvalidEvent(where, "required: the words to look for in titles, e.g. q=memory wall")
    if len(q) > MAX_QUERY:
        raise InvalidEvent(where, f"{len(q)} characters; a query has at most {MAX_QUERY}")
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(q)))
    if not words:
        raise InvalidEvent(where, f"no word in {q!r}: a word is letters or digits")
    if len(words) > MAX_WORDS:
        raise InvalidEvent(where, f"{len(words)} words; a query has at most {MAX_WORDS}")
    return words

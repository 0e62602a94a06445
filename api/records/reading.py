"""The record page's notes for a librarian: that a reference's lines are what its source said, what the
source's method names mean, where the source contradicts itself (a linked paper left unresolved, a
reference number that is a year, a "title" that is an author list, a venue or an address), and the
ledger's own resolution when the page shows another. Pure functions of the record and the resolutions
(projections.readings); the rules look at the shape of the text, never at a named work."""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import quote

from ledger.model.claims import PERSON_PREFIX, RESOLVER_PREFIX, claimed
from ledger.model.record_types import Observation, Record
from projections.readings import Said, Sides

VERIFIED = ("verified_exact", "verified_fuzzy")
VENUE = "a venue, or holds one (a proceedings, a journal, its volume or pages)"

# what a source's method names mean, in words (the names are the source's own, as its records give them)
SOURCE_METHODS = {
    "raw_fallback": (
        "the source read this reference from its raw text alone, with no identifier: the title, venue "
        "and year shown are pieces of that text, not a catalogued work's"
    ),
    "local_arxiv": "the source matched this reference to a paper of its own copy of arXiv",
}

# a reference number from 1800 to 2100 above the paper's count of references is a year taken for a number
YEARS = range(1800, 2101)

# a person's name as reference lists print it: capitalised words and initials
_NAME_WORD = r"[A-Z][\w'’.-]*"
_NAME = re.compile(rf"{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,3}}")
# endings of the nouns titles are made of, rare in names
_NOT_NAME = re.compile(r"(?:tion|sion|ment|ness|ity|ics|ism|ogy|ures?)$", re.IGNORECASE)
_ET_AL = re.compile(r"\bet\.?\s+al\b", re.IGNORECASE)
# a word broken across a line by a hyphen, as text taken from a PDF keeps it
_BROKEN = re.compile(r"(\w)- (\w)")
_VENUE_START = re.compile(
    r"^(?:In\s*(?:Proc\b|Proceedings|Advances|International|Conference|Workshop|Symposium|the\s|\d)"
    r"|Proceedings of\b|Proc\. of\b)",
    re.IGNORECASE,
)
# a volume with its year, a volume (issue) with its pages, or pages: what follows a venue in a reference
_VOLUME_PAGES = re.compile(
    r"\b\d+\s*\(\d{4}\)|\b\d+(?:\s*\(\d+\))?\s*:\s*\d+(?:\s*[–-]\s*\d+)?|\bpages?\s+\d+\s*[–-]\s*\d+|\bpp\.\s*\d+"
)
# a venue run on after the title's full stop, as text taken from a PDF keeps it
_VENUE_AFTER = re.compile(r"[.?!]\s*(?:Advances in|Journal of|Proceedings of|Transactions on|In Proc)", re.I)
_ADDRESS = re.compile(
    r"https?://|^arXiv:\S+|^(?:www\.)?[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|edu|gov)/", re.I
)


class Note(NamedTuple):
    """One line of the notes: its text, and a link at its end (label, href) when there is one."""

    text: str
    link: tuple[str, str] | None = None


def looks_like_authors(title: str) -> bool:
    """Whether a "title" reads as a list of authors: `et al`, or two or more names of two words or more
    (and any of one word, a surname cut from its given name) joined by commas and a last `and`."""
    text = _BROKEN.sub(r"\1\2", title.strip().rstrip("."))
    if _ET_AL.search(text):
        return True
    if not re.search(r",?\s+(?:and|&)\s+\S+", text):
        return False
    parts = [p.strip() for p in re.split(r",|\s(?:and|&)\s", text) if p.strip()]
    if len(parts) < 2 or not all(_NAME.fullmatch(p) for p in parts):
        return False
    if any(_NOT_NAME.search(word) for p in parts for word in p.split()):
        return False
    return sum(len(p.split()) >= 2 for p in parts) >= 2


def looks_like_venue(title: str) -> bool:
    """Whether a "title" reads as a venue (`In Proceedings of ...`) or holds one: a venue's volume and
    pages, or a venue run on after the title."""
    text = title.strip()
    return bool(_VENUE_START.match(text) or _VOLUME_PAGES.search(text) or _VENUE_AFTER.search(text))


def looks_like_address(title: str) -> bool:
    """Whether a "title" is a web address or an identifier rather than a work's title."""
    return bool(_ADDRESS.search(title.strip()))


def looks_like_year(index: int, references: int) -> bool:
    """Whether a reference number is a year: within YEARS and above the paper's count of references."""
    return index in YEARS and index > references


def method_words(source: str | None) -> str:
    """A resolver_source in plain words."""
    if source is None:
        return "no method named"
    if claimed(source) is not None:
        if source.startswith(PERSON_PREFIX):
            return f"a person, {source.removeprefix(PERSON_PREFIX)}"
        method, _, version = source.removeprefix(RESOLVER_PREFIX).rpartition("/")
        return f"this ledger's resolver (method {method or version}, version {version if method else '?'})"
    return f"the source's method {source}"


def _source_line(res_source: str | None, status: str, said: Said | None, shown: bool) -> str:
    """Whose the reference's lines are, and the source's method in words (`shown`: the record shows the
    source's resolution; else the ledger's, and `said` is the source's latest, if any)."""
    if not shown:
        if said is None:
            return "As the source gave it: no resolution (the ledger's is shown above)."
        return (
            f"As the source gave it: {said.status.replace('_', ' ')}; {method_words(said.resolver_source)}, "
            f"observed {said.observed_at} (the ledger's resolution is shown above)."
        )
    if status == "pending":
        return "As the source gave it: no resolution yet."
    if res_source is None:
        return "As the source gave it: its resolution names no method."
    why = SOURCE_METHODS.get(
        res_source, "the source's own name for its method, which this ledger does not describe"
    )
    return f"As the source gave it: {res_source}, {why}."


def _title_notes(title: str | None, status: str) -> list[str]:
    """Notes on a "title" that is not one, and on a verified status resting on it."""
    if title is None:
        return []
    looks = (
        "an author list" if looks_like_authors(title)
        else VENUE if looks_like_venue(title)
        else "a web address or an identifier" if looks_like_address(title)
        else None
    )  # fmt: skip
    if looks is None:
        return []
    rests = (
        f"; its {status.replace('_', ' ')} match rests on that text, so read it as doubtful"
        if status in VERIFIED
        else ""
    )
    return [f"Note: the “title” the source parsed looks like {looks}, not a work's title{rests}."]


def notes(record: Record, o: Observation, sides: Sides | None) -> list[Note]:
    """The notes of one outbound observation, in the order shown."""
    c = o.citation
    res = o.resolution
    shown_own = claimed(res.resolver_source) is not None
    sides = sides or Sides(None, None)
    out = [Note(_source_line(res.resolver_source, res.status, sides.source, not shown_own))]
    if not shown_own:
        if c.cited_paper is not None and res.status not in VERIFIED:
            who = "names no resolver" if res.resolver_source is None else f"names {res.resolver_source}"
            untitled = (
                " and parsed no title"
                if c.cited_work is None or not (c.cited_work.title or "").strip()
                else ""
            )
            out.append(Note(
                "Note: the source contradicts itself: it links this reference to "
                f"arXiv:{c.cited_paper.arxiv_id}, yet calls it {res.status.replace('_', ' ')}, "
                f"{who}{untitled}. "
                "The link is the source's; no resolver of this ledger has checked it."
            ))  # fmt: skip
        title = None if c.cited_work is None else c.cited_work.title
        out.extend(Note(t) for t in _title_notes(title, res.status))
    references = max(record.reference_resolution.total_outbound_references, len(record.outbound))
    if looks_like_year(c.reference_index, references):
        out.append(Note(
            f"Note: the source numbered this reference {c.reference_index}, which looks like a year, not a "
            f"place in a list of {references} references: the source probably took the year for its number."
        ))  # fmt: skip
    own = sides.ledger
    if own is not None and not shown_own:
        href = (
            f"/paper/{record.paper.arxiv_id}/observations/{o.observation_id}/resolution"
            f"?as_of={quote(own.observed_at, safe=':')}"
        )
        out.append(Note(
            f"The ledger's own resolution: {own.status.replace('_', ' ')} by "
            f"{method_words(own.resolver_source)}, observed {own.observed_at}; the source's, shown above, "
            "came later.",
            ("its evidence", href),
        ))  # fmt: skip
    return out


def all_notes(record: Record, sides: dict[str, Sides] | None) -> dict[str, list[Note]]:
    """The notes of every outbound observation of the record, by observation id."""
    sides = sides or {}
    return {o.observation_id: notes(record, o, sides.get(o.observation_id)) for o in record.outbound}

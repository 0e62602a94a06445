"""A paper's notices: those the latest check of each source holds for the works the paper cites, as
of T, each with the first check that held it (the record page's alerts and the Atom feed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

from ledger.model.events import CitedWork, Notice
from ledger.model.facts import Fact, SourceHead
from ledger.model.jsonvalue import JsonInObject, JsonObject
from ledger.storage.works_store import displayed
from projections.record import observations
from service.alerts.alerts import alert_id, notice_key

if TYPE_CHECKING:
    from ledger.storage.interface import Store

_NOTICES = msgspec.json.Decoder(list[Notice])
# a standing check covering a work: (work_id, source, observed_at, observed_us, seq, hash, notices JSON)
CheckHistoryRow = tuple[str, str, str, int, int, str, str | bytes]


class NoticeReader(Protocol):
    """What a paper's notices are read from: a store's reader as of T."""

    def source_heads(self) -> Sequence[SourceHead]: ...
    def check_history(self, work_ids: Sequence[str]) -> Sequence[CheckHistoryRow]: ...


class PaperNotice(NamedTuple):
    """A notice a standing check holds for a work the paper cites, and the first check that held it."""

    id: str  # stable: the paper, the work and the notice
    work_id: str
    title: str | None  # the cited work's, as parsed
    observation_id: str
    reference_index: int | None
    source: str
    notice: JsonObject
    seq: int  # the first check (as of T) whose rows for the work hold it
    hash: str
    observed_at: str
    doi: str | None = None  # the cited work's, as its reference or resolution gives it
    arxiv_id: str | None = None

    def work(self) -> JsonObject:
        """The work the notice is on, as an alert names it."""
        return {"work_id": self.work_id, "doi": self.doi, "arxiv_id": self.arxiv_id, "title": self.title}


def work_name(work: JsonInObject) -> str:
    """A work as a reader names it: its DOI or arXiv id and its title in quotes; its work_id only when
    it has neither (the ledger's own id, which names it nowhere else)."""
    ids = [
        f"DOI {work['doi']}" if work.get("doi") else "",
        f"arXiv:{work['arxiv_id']}" if work.get("arxiv_id") else "",
    ]
    named = " ".join(i for i in ids if i)
    title = f"“{work['title']}”" if work.get("title") else ""
    if not named and not title:
        return f"work {work.get('work_id')} (no identifier or title given)"
    return " ".join(p for p in (named, title) if p)


def paper_notices(
    store: Store, arxiv_id: str, as_of_us: int, known_us: int | None = None
) -> list[PaperNotice]:
    """The notices in force as of T (the latest check of each source, as the record shows them) for the
    works the paper's outbound references cite, each with the first check that listed it; by seq."""
    return paper_alerts(store, arxiv_id, as_of_us, known_us)[0]


def paper_alerts(
    store: Store, arxiv_id: str, as_of_us: int, known_us: int | None = None
) -> tuple[list[PaperNotice], list[str]]:
    """`paper_notices`, and the sources that had checked works as of T (what "no notice" covers)."""
    with store.snapshot(as_of_us, known_us) as reader:
        return alerts_in(reader, arxiv_id, reader.paper_stream(arxiv_id))


def alerts_in(reader: NoticeReader, arxiv_id: str, facts: list[Fact]) -> tuple[list[PaperNotice], list[str]]:
    """`paper_alerts` from a reader as of T and the paper's stream as of T, already read."""
    sources = sorted({h.source for h in reader.source_heads()})
    refs: dict[str, tuple[str, int | None, CitedWork]] = {}  # work_id -> observation, index, the work
    for oid, o in sorted(observations(facts).items()):
        w = displayed(o.cit.data.cited_work, None if o.res is None else o.res.data.cited_work)
        if w is not None and w.work_id is not None and w.work_id not in refs:
            refs[w.work_id] = (oid, o.cit.data.reference_index, w)
    history = reader.check_history(sorted(refs))
    first: dict[tuple[str, str, str], tuple[str, int, str]] = {}  # (work, source, notice key) -> first row
    current: dict[tuple[str, str], list[Notice]] = {}  # (work, source) -> notices of its latest check
    for work_id, source, observed_at, _, seq, hash_, raw in history:
        notices = _NOTICES.decode(raw)
        for w in refs if work_id == "*" else [work_id]:
            mine = [n for n in notices if n.work_id == w]
            current[(w, source)] = mine
            for n in mine:
                first.setdefault((w, source, notice_key(source, n)), (observed_at, seq, hash_))
    out = []
    for (work_id, source), notices in current.items():
        oid, index, w = refs[work_id]
        for n in notices:
            key = notice_key(source, n)
            observed_at, seq, hash_ = first[(work_id, source, key)]
            # a PaperNotice holds the notice as JSON values: the feed, the page and the alerts read keys
            out.append(PaperNotice(alert_id(f"paper:{arxiv_id}", work_id, key), work_id, w.title, oid, index,
                                   source, msgspec.to_builtins(n), seq, hash_, observed_at, w.doi,
                                   w.arxiv_id or w.pith_arxiv_id))  # fmt: skip
    return sorted(out, key=lambda n: (n.seq, n.work_id, n.source, n.id)), sources

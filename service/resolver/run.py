"""Resolving (resolver-v1.md "Resolving"): select the observations still unresolved, ask the matcher,
and append one `resolution.observed` per observation whose answer changes.

The matcher (`decide`) and the catalogue are passed in: the flow knows how to select, compare and
append, not how to match. With none given, the ledger's own are used (`defaults.py`).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from msgspec import UNSET

from ledger.model.claims import PERSON_PREFIX as PERSON_PREFIX
from ledger.model.claims import RESOLVER_PREFIX as RESOLVER_PREFIX
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.events import CitationData, CitedWork, ResolutionData, ResolutionObserved
from ledger.model.facts import Fact, Head
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import JsonObject
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Evidence
from ledger.storage.interface import CatalogueTables
from ledger.storage.works_store import works_matching
from projections.record import observations
from service.ledger import Ledger
from service.resolver.bounds import Busy, Cancelled, OverBudget
from service.resolver.parse import SettingError

# the latest statuses the resolver may revisit (absent too); a verified match stays as it is
REOPENED = frozenset({"unresolved", "parse_uncertain", "malformed_identifier", "metadata_mismatch"})
# a new work's id: uuid5 in the URL namespace of "https://doi.org/" + its match key (sources-v1.md),
# the normalised DOI, else the arXiv id's DataCite DOI (10.48550/arxiv.<id>)
WORK_ID_NAMESPACE = uuid.NAMESPACE_URL
# characters of an exception's message kept as a failure's reason
MAX_REASON = 300
# references per call of the matcher, and resolutions per append: a batch's references share their
# catalogue reads (the works of a word, a candidate's row), so 1000 cost about an eighth less each than 500
BATCH = 1000

Decide = Callable[[Sequence[RefInput], CatalogueTables], list[Decision]]


class Decided(Protocol):
    """A batch submitted to the workers: its decisions, once made (a Future is one)."""

    def result(self) -> list[Decision]: ...


class Workers(Protocol):
    """Processes that decide batches (service/resolver/pool.py): how many, and one batch submitted."""

    workers: int

    def submit(self, refs: Sequence[RefInput]) -> Decided: ...


class Pending(NamedTuple):
    """One observation the resolver may change: its ids, what it reads, and its latest resolution."""

    observation_id: str
    citing_arxiv_id: str
    reference_index: int
    ref: RefInput
    latest: ResolutionData | None


class Change(NamedTuple):
    """One observation whose answer changed: from its latest status (None: no resolution) to the new."""

    observation_id: str
    citing_arxiv_id: str
    reference_index: int
    before: str | None
    after: str
    event: ResolutionObserved


@dataclass
class Summary:
    """What a run examined and changed (`ledger resolve`, `POST /resolve`)."""

    examined: int = 0
    unchanged: int = 0
    changes: list[Change] = field(default_factory=list)
    appended: int = 0
    dry_run: bool = False
    head: Head | None = None

    def changed(self) -> dict[str, int]:
        """How many observations changed, per new status (sorted by status)."""
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.after] = out.get(c.after, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self, *, listed: int = 100) -> JsonObject:
        """The summary as JSON values: counts, and the first `listed` changes."""
        return {
            "examined": self.examined,
            "changed": {**self.changed()},
            "unchanged": self.unchanged,
            "appended": self.appended,
            "dry_run": self.dry_run,
            "changes": [
                {
                    "observation_id": c.observation_id,
                    "citing_arxiv_id": c.citing_arxiv_id,
                    "reference_index": c.reference_index,
                    "before": c.before,
                    "after": c.after,
                    "doi": None if c.event.data.cited_work is None else c.event.data.cited_work.doi,
                    "arxiv_id": None if c.event.data.cited_work is None else c.event.data.cited_work.arxiv_id,
                }
                for c in self.changes[:listed]
            ],
            "head": None if self.head is None else {"seq": self.head.seq, "hash": self.head.hash},
        }


def by_person(data: ResolutionData | None) -> bool:
    """Whether a person made this resolution (their name follows `person:` in resolver_source)."""
    return data is not None and (data.resolver_source or "").startswith(PERSON_PREFIX)


def failed(data: ResolutionData | None) -> bool:
    """Whether this resolution is the resolver's failure to read the reference (its evidence says why)."""
    return data is not None and isinstance(data.evidence, Evidence) and data.evidence.error is not UNSET


def reopened(data: ResolutionData | None, source: str) -> bool:
    """Whether the resolver named `source` (its prefix, method and version) may revisit an observation
    whose latest resolution is this (resolver-v1.md): none yet; one of the statuses it revisits, made by
    neither a person nor its own failure to read the reference; or any of its own made under another
    version. Another source's verified answer and a person's are never revisited."""
    if data is None:
        return True
    if by_person(data):
        return False
    made = data.resolver_source or ""
    if made.startswith(RESOLVER_PREFIX) and made != source:
        return True  # another version: a better matcher corrects its own earlier answers
    if made == source and failed(data):
        return False  # this version could not read it, and would fail the same way again
    return data.status in REOPENED


def unknown_papers(ledger: Ledger, papers: Sequence[str]) -> list[str]:
    """Those of `papers` with no snapshot as of now, in the order given."""
    known = set(ledger.store.works.papers_among(sorted(set(papers)), ledger.clock.now_us()))
    return [p for p in papers if p not in known]


def all_papers(ledger: Ledger, page: int = 1000) -> list[str]:
    """Every paper with a snapshot, sorted."""
    out: set[str] = set()
    offset = 0
    while True:
        ids = ledger.store.papers(page, offset)
        out.update(ids)
        if len(ids) < page:
            return sorted(out)
        offset += page


def pending(ledger: Ledger, papers: Iterable[str], as_of_us: int, source: str) -> Iterator[Pending]:
    """The observations of these papers the resolver named `source` may change as of T (resolver-v1.md,
    `reopened`), in (paper, reference index, observation id) order."""
    for arxiv_id in papers:
        with ledger.store.snapshot(as_of_us) as reader:
            facts: list[Fact] = reader.paper_stream(arxiv_id)
        obs = observations(facts)
        for o in sorted(obs.values(), key=lambda o: (o.cit.data.reference_index, o.oid)):
            if o.citing != arxiv_id:
                continue  # a resolution on this stream of another paper's citation is not its own
            latest = None if o.res is None else o.res.data
            if not reopened(latest, source):
                continue
            yield Pending(o.oid, o.citing, o.cit.data.reference_index, ref_input(o.cit.data, latest), latest)


def ref_input(citation: CitationData, latest: ResolutionData | None) -> RefInput:
    """What the matcher reads of an observation: its reference (when its citation carries one) and the
    cited work its latest citation displays."""
    reference = None if citation.reference is UNSET else citation.reference
    shown = latest.cited_work if latest is not None and latest.cited_work is not None else citation.cited_work
    return RefInput(citation.observation_id, reference, shown)


def match_key(doi: str | None, arxiv_id: str | None) -> str | None:
    """A work's identity for comparing answers and naming it: its DOI's key, else its arXiv id's."""
    return doi_key(doi) or arxiv_key(arxiv_id)


def new_work_id(work: CatalogueWork) -> str:
    """The work_id of a work the ledger holds no id for: uuid5 of its match key (WORK_ID_NAMESPACE)."""
    key = match_key(work.doi, work.arxiv_id)
    if key is None:
        raise InvalidEvent("work", "a catalogue work has a DOI or an arXiv id")
    return str(uuid.uuid5(WORK_ID_NAMESPACE, "https://doi.org/" + key))


def work_ids(ledger: Ledger, works: Iterable[CatalogueWork], as_of_us: int) -> dict[str, str]:
    """For each work's match key, the work_id to write: the least the ledger already holds under its
    DOI (else its arXiv id), else a new one (new_work_id)."""
    wanted: dict[str, CatalogueWork] = {}
    for w in works:
        key = match_key(w.doi, w.arxiv_id)
        if key is not None:
            wanted.setdefault(key, w)
    asked = sorted({k for w in wanted.values() for k in (doi_key(w.doi), arxiv_key(w.arxiv_id)) if k})
    held = works_matching(ledger.store, asked, as_of_us)
    out: dict[str, str] = {}
    for key, w in wanted.items():
        found = held.get(doi_key(w.doi) or "", []) or held.get(arxiv_key(w.arxiv_id) or "", [])
        out[key] = found[0] if found else new_work_id(w)
    return out


def cited_work(work: CatalogueWork, work_id: str) -> CitedWork:
    """The record-v1 cited_work of a catalogue work (resolver-v1.md)."""
    return CitedWork(
        arxiv_id=work.arxiv_id,
        doi=work.doi,
        metadata_source=work.source,
        pith_arxiv_id=None,
        snapshot_observed_at=work.observed_at,
        title=work.title,
        venue=work.container,
        work_id=work_id,
        year=work.year,
    )


def arxiv_paper(work: CatalogueWork) -> str | None:
    """The arXiv id of a work that is an arXiv paper (one the ledger holds, or one whose DOI is its
    DataCite arXiv DOI), else None: a journal version naming its preprint is not the preprint."""
    if work.arxiv_id is None:
        return None
    if work.source == "arxiv" or doi_key(work.doi) == arxiv_key(work.arxiv_id):
        return work.arxiv_id
    return None


def _identity(status: str, work: CitedWork | None) -> tuple[str, str | None]:
    return status, None if work is None else match_key(work.doi, work.arxiv_id)


def failure(error: Exception) -> Decision:
    """The answer for a reference whose resolving raised: `unresolved` (what resolver-v1 answers when
    nothing validates), with the exception as the evidence's `error`."""
    reason = f"{type(error).__name__}: {error}"
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 1] + "\u2026"
    return Decision("unresolved", None, Evidence("error", None, 0, [], [], None, error=reason))


# what stops a whole run: the database, the disk, memory, the ledger refusing a write, a bad setting,
# and the run's own bounds (its client gone, its budget spent, no slot). Failing each reference for one
# of these would keep every one of them from being examined again until the version changes.
_SYSTEMIC = (sqlite3.Error, OSError, MemoryError, LedgerError, SettingError, Cancelled, OverBudget, Busy)
_SYSTEMIC_MODULES = ("psycopg", "psycopg_pool", "concurrent")


def systemic(error: BaseException) -> bool:
    """Whether an exception is the run's, not a reference's: it would meet every reference alike."""
    return isinstance(error, _SYSTEMIC) or type(error).__module__.split(".")[0] in _SYSTEMIC_MODULES


def decide_apart(decide: Decide, refs: Sequence[RefInput], catalogue: CatalogueTables) -> list[Decision]:
    """`decide(refs)`; when that raises, each half decided apart, down to the references that raise
    alone, each of which is then its own `failure`. A `systemic` exception is raised: it ends the run."""
    try:
        return decide(refs, catalogue)
    except Exception as e:
        if systemic(e):
            raise
        if len(refs) == 1:
            return [failure(e)]
    half = len(refs) // 2
    return decide_apart(decide, refs[:half], catalogue) + decide_apart(decide, refs[half:], catalogue)


def resolution_of(
    p: Pending, d: Decision, ids: dict[str, str], source: str, observed_at: str
) -> ResolutionObserved | None:
    """The resolution to append for this answer, or None when it changes nothing (same status, same
    work as the latest resolution). Only a verified match names a work."""
    work = None
    cited_arxiv = None
    if d.work is not None and d.status in ("verified_exact", "verified_fuzzy"):
        key = match_key(d.work.doi, d.work.arxiv_id)
        if key is not None:
            work = cited_work(d.work, ids[key])
            cited_arxiv = arxiv_paper(d.work)
    if p.latest is not None and _identity(d.status, work) == _identity(p.latest.status, p.latest.cited_work):
        # the same answer; a failure is a new answer unless this resolver already recorded it, so that
        # it is not tried again (and the failure of another version is not kept for this one)
        error = d.evidence.error is not UNSET
        if error == failed(p.latest) and (not error or p.latest.resolver_source == source):
            return None
    data = ResolutionData(p.observation_id, d.status, source, work, cited_arxiv, d.evidence)
    return ResolutionObserved(observed_at=observed_at, data=data)


def resolve(
    ledger: Ledger,
    papers: Sequence[str] | None,
    *,
    decide: Decide,
    catalogue: CatalogueTables,
    method: str,
    dry_run: bool = False,
    workers: Workers | None = None,
) -> Summary:
    """Resolve the observations of `papers` (None: every paper) against the catalogue as of now, and
    append one resolution per changed answer (none with `dry_run`). `method` is the matcher's name and
    version, written after RESOLVER_PREFIX. With `workers`, batches are decided in those processes
    (the same decisions) while this one selects the next and appends, in order. InvalidEvent naming
    `papers` for a paper never observed."""
    if papers is not None:
        missing = unknown_papers(ledger, papers)
        if missing:
            raise InvalidEvent(
                "papers",
                f"no paper {missing[0]!r} in this ledger",
                details={"where": "papers", "reason": "unknown papers", "unknown": missing},
            )
    now = ledger.clock.now_us()
    ids = all_papers(ledger) if papers is None else sorted(set(papers))
    summary = Summary(dry_run=dry_run)
    source = RESOLVER_PREFIX + method
    batch: list[Pending] = []
    # batches being decided by the workers, oldest first: each is settled in the order it was selected
    inflight: deque[tuple[list[Pending], Decided]] = deque()
    submitted: list[int] = []

    def settle(done: list[Pending], decisions: list[Decision]) -> None:
        if len(decisions) != len(done):
            # a matcher answering for fewer references than asked is broken for the whole batch
            raise ValueError(f"the matcher answered {len(decisions)} of {len(done)} references")
        held = work_ids(ledger, [d.work for d in decisions if d.work is not None], now)
        at = format_recorded(ledger.clock.now_us())
        events = []
        for p, d in zip(done, decisions, strict=True):
            summary.examined += 1
            event = resolution_of(p, d, held, source, at)
            if event is None:
                summary.unchanged += 1
                continue
            before = None if p.latest is None else p.latest.status
            summary.changes.append(Change(p.observation_id, p.citing_arxiv_id, p.reference_index, before,
                                          d.status, event))  # fmt: skip
            events.append(event)
        if events and not dry_run:
            summary.appended += ledger.append(events, resolver_events=True).appended

    def decided(done: list[Pending], future: Decided) -> list[Decision]:
        try:
            return future.result()
        except Exception as e:
            if systemic(e):
                raise
            # a reference a worker could not decide: the batch again here, apart, to find which
            return decide_apart(decide, [p.ref for p in done], catalogue)

    def flush(last: bool = False) -> None:
        # a run of less than a batch is decided here: starting workers would cost more than it saves
        if workers is None or (last and not submitted):
            settle(batch, decide_apart(decide, [p.ref for p in batch], catalogue))
        else:
            # the last batch is shared among the workers: none then waits alone on a whole batch at the end
            size = -(-len(batch) // workers.workers) if last else len(batch)
            for i in range(0, len(batch), size):
                part = batch[i : i + size]
                inflight.append((part, workers.submit([p.ref for p in part])))
            submitted.append(len(batch))
            # two batches a worker keeps each busy while the next is selected
            while len(inflight) > 2 * workers.workers:
                done, future = inflight.popleft()
                settle(done, decided(done, future))
        batch.clear()

    for p in pending(ledger, ids, now, source):
        if len(batch) >= BATCH:
            flush()  # a full batch goes once another follows it: the last one is known as the last
        batch.append(p)
    if batch:
        flush(last=True)
    while inflight:
        done, future = inflight.popleft()
        settle(done, decided(done, future))
    summary.head = ledger.head()
    return summary

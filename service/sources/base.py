"""What every adapter shares: the ingest summary, the work and paper indexes, refusals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ledger.model.codec import FUTURE_SLACK_US, canonical
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import InvalidEvent
from ledger.model.events import Event, Notice, StandingChecked, StandingData
from ledger.model.facts import Head, IngestReceipt
from ledger.model.importer import notice_sort_key
from ledger.model.instants import format_recorded, parse_ts
from ledger.model.jsonvalue import Json, JsonInObject
from ledger.storage.interface import Store
from ledger.storage.works_store import checkable_works, papers_matching, works_matching
from service.sources.reader import Digest

EXAMPLES_PER_REASON = 3


def new_receipt(
    source: str,
    observed_at: str,
    file: Digest,
    read: int,
    matched: int,
    appended: int,
    seq: int | None,
    at: int,
) -> IngestReceipt:
    """The receipt of a file accepted at `at` (the ledger's clock): what it was (sha256 and size as
    given), the rows read and matched, the events new to the ledger and the last seq the ingest appended."""
    return IngestReceipt(
        source, observed_at, parse_ts(observed_at), format_recorded(at), at, file.sha256, file.size, read,
        matched, appended, seq,
    )  # fmt: skip


def check_observed_at(observed_at: str, now: int) -> int:
    """When the file was fetched, in UTC microseconds; InvalidEvent naming observed_at when it is not
    an instant or is more than 5 minutes ahead of `now` (the clock the append records with)."""
    try:
        t = parse_ts(observed_at)
    except (ValueError, TypeError) as e:
        raise InvalidEvent(
            "observed_at", f"{e}; give when the file was fetched, e.g. 2026-09-01T12:00:00Z"
        ) from None
    # refused again by the append, but checked here so a 60 MB file is not read for nothing
    if t > now + FUTURE_SLACK_US:
        raise InvalidEvent("observed_at", "more than 5 minutes in the future")
    return t


class NotThatFormat(InvalidEvent):
    """The file is not the named source's format at all: refused, nothing written."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__("file", f"not a {source} file: {reason}")


class Refused(InvalidEvent):
    """A whole-database file refused under one of its rules (sources-v1.md): nothing written."""

    def __init__(self, rule: str, reason: str, *, line: int | None = None, forceable: bool = False) -> None:
        lifts = "--force or ?force=true accepts it anyway" if forceable else "force does not lift this rule"
        where = f"line {line}: " if line is not None else ""
        text = f"{where}{reason}; the whole file is refused ({rule}; {lifts})"
        super().__init__("file", text)
        self.details = {"where": "file", "reason": text, "rule": rule, "line": line, "forceable": forceable}


@dataclass(kw_only=True)
class Tally:
    """What every ingest counts: what it skipped (with a few examples of each reason) and what its
    appends did."""

    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    appended: int = 0
    duplicates: int = 0
    head: Head | None = None

    def skip(self, reason: str, example: str) -> None:
        """Count a row, item or entry that was not used, keeping a few examples of each reason."""
        self.skipped[reason] += 1
        self._example(reason, example)

    def _example(self, reason: str, example: str) -> None:
        kept = self.examples.setdefault(reason, [])
        if len(kept) < EXAMPLES_PER_REASON:
            kept.append(example)

    def tally_dict(self) -> JsonInObject:
        """The tally as the JSON answers give it (their keys are sorted when written)."""
        return {
            "skipped": dict(sorted(self.skipped.items())),
            "examples": dict(sorted(self.examples.items())),
            "appended": self.appended,
            "duplicates": self.duplicates,
            "head": None if self.head is None else {"hash": self.head.hash, "seq": self.head.seq},
        }


@dataclass
class Summary(Tally):
    """What one ingest read, matched, skipped (with reasons) and appended."""

    source: str
    event_source: str
    observed_at: str
    read: int = 0
    matched: int = 0
    works_checked: int | None = None
    notices: int = 0
    measurements: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)

    def note(self, what: str, example: str) -> None:
        """Count something kept but worth saying (e.g. an unparsable date read as null)."""
        self.notes[what] += 1
        self._example(what, example)

    def ignore(self, what: str) -> None:
        """Count something the spec says is not a notice at all (not a skip)."""
        self.ignored[what] += 1

    def to_dict(self) -> JsonInObject:
        """The JSON answer of POST /ingest and `ledger ingest --json`."""
        return {
            "source": self.source,
            "event_source": self.event_source,
            "observed_at": self.observed_at,
            "read": self.read,
            "matched": self.matched,
            "works_checked": self.works_checked,
            "notices": self.notices,
            "measurements": self.measurements,
            "ignored": dict(sorted(self.ignored.items())),
            "notes": dict(sorted(self.notes.items())),
            **self.tally_dict(),
        }

    def lines(self) -> list[str]:
        """The summary as a few human lines."""
        out = [f"{self.source} at {self.observed_at}: read {self.read:,}, matched {self.matched:,}"]
        if self.works_checked is not None:
            out.append(f"  works checked: {self.works_checked:,}; notices: {self.notices:,}")
        else:
            out.append(f"  measurements: {self.measurements:,}")
        for title, counts in (("skipped", self.skipped), ("ignored", self.ignored), ("notes", self.notes)):
            for reason, n in sorted(counts.items()):
                eg = self.examples.get(reason)
                out.append(f"  {title}: {n:,} {reason}" + (f" (e.g. {'; '.join(eg)})" if eg else ""))
        verb = (
            "nothing new appended (already ingested)" if not self.appended else f"{self.appended:,} appended"
        )
        head = "" if self.head is None else f"; head seq {self.head.seq:,}"
        out.append(f"  {verb}, {self.duplicates:,} duplicate{head}")
        return out


@dataclass
class Parsed:
    """An adapter's answer: the events of one batch, their places, and the summary so far."""

    events: list[Event]
    places: list[str]
    summary: Summary


class WorkIndex:
    """Works known as of T, by matching key (normalized DOI, arXiv DOI without version), looked up in
    the ledger's works index: an adapter loads the keys of a chunk of rows, then matches each row."""

    def __init__(self, store: Store, as_of_us: int) -> None:
        self._store = store
        self._t = as_of_us
        self._loaded: dict[str, list[str]] = {}
        self._keys: dict[str, str | None] = {}  # the loaded DOIs as read -> their keys

    def load(self, dois: Iterable[Json]) -> None:
        """Look up the keys of these DOIs read from a file (one statement per CHUNK keys); the keys of
        the previous load are forgotten, so memory follows the chunk, not the file."""
        self._keys = {d: doi_key(d) for d in dois if isinstance(d, str)}
        keys = {k for k in self._keys.values() if k}
        self._loaded = works_matching(self._store, keys, self._t)

    def match(self, doi: Json) -> list[str]:
        """The work_ids a DOI read from a file matches (sorted; [] when none or not a string)."""
        if not isinstance(doi, str):
            return []
        key = self._keys[doi] if doi in self._keys else doi_key(doi)
        if not key:
            return []
        if key not in self._loaded:  # not loaded with its chunk: looked up alone
            self._loaded.update(works_matching(self._store, [key], self._t))
        return self._loaded[key]

    def checkable(self) -> list[str]:
        """Every work known as of T with a DOI or arXiv id to match on, sorted (all the ledger's keyed
        works: what a check of a whole database covers)."""
        return checkable_works(self._store, self._t)


class PaperIndex:
    """Papers known as of T, matched by their arXiv DOI (or an arXiv id), looked up by their streams:
    an adapter loads the keys of a chunk of items, then matches each item."""

    def __init__(self, store: Store, as_of_us: int) -> None:
        self._store = store
        self._t = as_of_us
        self._loaded: dict[str, str | None] = {}

    def load(self, dois: Iterable[Json] = (), arxiv_ids: Iterable[Json] = ()) -> None:
        """Look up the papers these DOIs and arXiv ids read from a file name (the previous load is
        forgotten)."""
        keys = _keys(dois, doi_key) | _keys(arxiv_ids, arxiv_key)
        self._loaded = papers_matching(self._store, keys, self._t)

    def by_doi(self, doi: Json) -> str | None:
        """The paper whose arXiv DOI this DOI is (version suffix ignored), else None."""
        return self._get(doi_key(doi) if isinstance(doi, str) else None)

    def by_arxiv(self, arxiv_id: Json) -> str | None:
        """The paper with this arXiv id (version suffix ignored), else None."""
        return self._get(arxiv_key(arxiv_id) if isinstance(arxiv_id, str) else None)

    def _get(self, key: str | None) -> str | None:
        if not key:
            return None
        if key not in self._loaded:
            self._loaded.update(papers_matching(self._store, [key], self._t))
        return self._loaded[key]


def _keys(values: Iterable[Json], key: Callable[[str], str | None]) -> set[str]:
    """The matching keys of the strings among `values` (none for an empty one)."""
    return {k for v in values if isinstance(v, str) and (k := key(v))}


def standing_batch(
    summary: Summary, work_ids: Iterable[str], notices: Iterable[Notice], place: str
) -> Parsed:
    """The one standing.checked of an ingest: work_ids sorted, notices deduplicated and sorted."""
    unique: dict[bytes, Notice] = {}
    for n in notices:
        unique.setdefault(canonical(n), n)
    # the importer's order, so the check's content (and so its derived event id) is deterministic
    ordered = sorted(unique.values(), key=notice_sort_key)
    covered = sorted(set(work_ids))
    summary.works_checked = len(covered)
    summary.notices = len(ordered)
    event = StandingChecked(
        observed_at=summary.observed_at, data=StandingData(summary.event_source, covered, ordered)
    )
    return Parsed([event], [place], summary)

"""A paper's timeline: the instants where its record changed, and lanes of what changed when.

Pure: one fold, in observed order, over the events a TimelineSource hands it (known now). An instant is
listed when the record as of it differs from the record just before it: the first snapshot (the
record begins), each later event of the paper's own stream that changes what the record shows, every
standing check (each moves `standing_sources`), each new snapshot of a paper a shown reference
resolves to, and each change of the inbound observations (their count, or one the record shows). The
record is the judge (tests/projections/test_timeline.py holds every instant to it); two things are
coarser, and say so: a paper with more than EXACT_INBOUND inbound spans has its inbound changes counted
per day (each day's first and last such instant are listed, the ones between are not), and then a
citing paper's new snapshot is not listed either.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Generic, Protocol, TypeVar

import msgspec

from ledger.model.errors import NotFound
from ledger.model.events import CitedWork, Notice
from ledger.model.facts import Checked, CheckWorkRow, Fact, InboundDay
from ledger.model.instants import format_as_of, to_datetime
from ledger.storage.derived.spans import OPEN, Span
from projections.record import CAPS

_EPOCH = datetime(1970, 1, 1)  # naive: isoformat then writes no offset
EXACT_INBOUND = 2000  # inbound spans followed one by one; a paper with more is counted per day
# the resolution coverage groups, in stacking order (a step line each)
GROUPS = ("verified_exact", "verified_fuzzy", "unresolved", "other", "pending")
_OWN_GROUP = ("verified_exact", "verified_fuzzy", "unresolved")  # the rest of the statuses are "other"


class TimelineSource(Protocol):
    """The reads a timeline needs, known now (SqlReader, MemoryReader)."""

    def paper_stream(self, arxiv_id: str) -> list[Fact]: ...
    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]: ...
    def checks(self) -> list[Checked]: ...
    def notice_rows(self, work_ids: Sequence[str]) -> list[CheckWorkRow]: ...
    def inbound_spans(self, arxiv_id: str, limit: int) -> list[tuple[Span, int | None]] | None: ...
    def inbound_days(self, arxiv_id: str) -> list[InboundDay]: ...


# gc=False and tuples: a timeline is thousands of these, in no reference cycle, kept per head in the
# API's cache; none of them is an object the collector tracks (its full passes over lists were tens of
# milliseconds of a page)
class Mark(msgspec.Struct, frozen=True, gc=False):
    """What one lane learned at one instant, and the events behind it."""

    at_us: int
    text: str
    seqs: tuple[int, ...]
    strong: bool = False  # a notice that appeared
    # the first instant whose record shows it: at_us, or for what was observed before the paper's first
    # snapshot, the instant the record begins
    shown_at: int = 0


class Series(msgspec.Struct, frozen=True, gc=False):
    """A step line: (instant, value from then on), one point per change."""

    name: str
    points: tuple[tuple[int, int], ...]


class Lane(msgspec.Struct, frozen=True, gc=False):
    """One row of the timeline: its marks, and its step lines (resolution coverage, counts)."""

    key: str  # snapshots, citations, resolutions, inbound, notices, check:<source>, measure:<source>:<metric>
    label: str
    marks: tuple[Mark, ...]
    series: tuple[Series, ...] = ()


class Instant(msgspec.Struct, frozen=True, gc=False):
    """An instant where the record changed: what changed, the events behind it, the lanes touched."""

    at_us: int
    changes: tuple[str, ...]
    seqs: tuple[int, ...]
    lanes: tuple[str, ...]

    @property
    def at(self) -> str:
        """The instant as the record spells its as_of."""
        return as_of_text(self.at_us)

    def line(self) -> str:
        """The instant, what changed and the events behind it, on one line."""
        return f"{self.at}  {'; '.join(self.changes)}  ({events_text(self.seqs)})"


class Timeline(msgspec.Struct, frozen=True, gc=False):
    """A paper's instants (oldest first) and lanes."""

    arxiv_id: str
    instants: tuple[Instant, ...]
    lanes: tuple[Lane, ...]
    inbound_by_day: bool  # the paper has more than EXACT_INBOUND inbound spans: counted per day

    def index_at(self, as_of_us: int) -> int | None:
        """The index of the last instant at or before `as_of_us` (None: before the first)."""
        i = bisect.bisect_right([x.at_us for x in self.instants], as_of_us) - 1
        return None if i < 0 else i


def _words(value: str) -> str:
    return value.replace("_", " ")


_OutKey = tuple[int, str]  # an outbound observation: (reference_index, observation_id)
_InKey = tuple[str, int, str, int]  # an inbound span: (citing, reference_index, observation_id, t_from)
K = TypeVar("K", _OutKey, _InKey)
# what the fold meets at an instant: a fact, a span's start or end (and the seqs behind it), a day of
# inbound changes, a standing check
_Item = Fact | tuple[Span, list[int]] | InboundDay | Checked
Items = list[tuple[int, int, int, str, _Item]]  # (instant, order at it, seq, kind, item)


class _Ranked(Generic[K]):
    """Keys kept sorted, the first `cap` of them shown (the record's caps)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.keys: list[K] = []

    def shown(self, key: K) -> bool:
        i = bisect.bisect_left(self.keys, key)
        return i < self.cap and i < len(self.keys) and self.keys[i] == key

    def add(self, key: K) -> tuple[K | None, K | None]:
        """Insert; (the key that became shown, the key that stopped being shown), each or None."""
        i = bisect.bisect_left(self.keys, key)
        self.keys.insert(i, key)
        if i >= self.cap:
            return None, None
        return key, self.keys[self.cap] if len(self.keys) > self.cap else None

    def remove(self, key: K) -> tuple[K | None, K | None]:
        """Delete; (the key that became shown, the key that stopped being shown), each or None."""
        i = bisect.bisect_left(self.keys, key)
        del self.keys[i]
        if i >= self.cap:
            return None, None
        return self.keys[self.cap - 1] if len(self.keys) >= self.cap else None, key

    def first(self) -> list[K]:
        return self.keys[: self.cap]


class _Obs:
    __slots__ = ("cit", "res", "_key")

    def __init__(self) -> None:
        self.cit: Fact | None = None
        self.res: Fact | None = None
        self._key: tuple[int, str] | None = None

    def cite(self, f: Fact) -> None:
        self.cit = f
        self._key = (f.data.reference_index, f.data.observation_id)

    def key(self) -> tuple[int, str]:
        assert self._key is not None
        return self._key

    def group(self) -> str:
        if self.res is None:
            return "pending"
        status: str = self.res.data.status
        return status if status in _OWN_GROUP else "other"

    def work(self) -> CitedWork | None:
        if self.res is not None and self.res.data.cited_work is not None:
            return self.res.data.cited_work
        return None if self.cit is None else self.cit.data.cited_work


class _Note(msgspec.Struct, gc=False):
    lane: str
    kind: str  # what aggregates with what at one instant (see _summarize)
    text: str
    seqs: tuple[int, ...]
    strong: bool = False
    detail: str = ""  # what a count of several says (a resolution's status)


def build_timeline(src: TimelineSource, arxiv_id: str, own: list[Fact] | None = None) -> Timeline:
    """The timeline of `arxiv_id` from the source's events (`own`: its paper stream, if read already);
    NotFound when it has no snapshot."""
    own = src.paper_stream(arxiv_id) if own is None else own
    if not any(f.type == "paper.observed" for f in own):
        raise NotFound(
            f"arXiv:{arxiv_id} has never been observed in this ledger",
            details={"arxiv_id": arxiv_id, "first_observed_at": None},
        )
    cited = sorted(
        {
            f.data.cited_arxiv_id
            for f in own
            if f.type == "resolution.observed" and f.data.cited_arxiv_id not in (None, arxiv_id)
        }
    )
    works = sorted(
        {
            w.work_id
            for f in own
            if f.type in ("citation.observed", "resolution.observed")
            and (w := f.data.cited_work) is not None
            and w.work_id is not None
        }
    )
    spans = src.inbound_spans(arxiv_id, EXACT_INBOUND)
    days = src.inbound_days(arxiv_id) if spans is None else []
    citing = sorted({s.citing for s, _ in spans or ()} - {arxiv_id})
    fold = _Fold(arxiv_id, src.notice_rows(works))
    items: Items = []
    items += [(f.observed_us, 0, f.seq, "own", f) for f in own]
    for s, ended_by in spans or ():
        items.append((s.t_from, 1, s.citation_seq, "span+", (s, [s.citation_seq, s.resolution_seq])))
        if s.t_to != OPEN:
            items.append((s.t_to, 1, s.citation_seq, "span-", (s, [] if ended_by is None else [ended_by])))
    for d in days:
        if d.instants > 1:
            items.append((d.first_us, 1, 0, "day<", d))
        items.append((d.last_us, 1, 1, "day>", d))
    items += [(f.observed_us, 2, f.seq, "cited", f) for f in src.snapshots(cited)]
    items += [(f.observed_us, 2, f.seq, "citing", f) for f in src.snapshots(citing)]
    items += [(c.observed_us, 3, c.seq, "check", c) for c in src.checks()]
    items.sort(key=itemgetter(0, 1, 2))
    return fold.run(items, spans is None)


class _Fold:
    """The record's state, one instant at a time, and what each instant changed in it."""

    def __init__(self, arxiv_id: str, notice_rows: Iterable[CheckWorkRow]) -> None:
        self.arxiv_id = arxiv_id
        self.obs: dict[str, _Obs] = {}
        self.out: _Ranked[_OutKey] = _Ranked(CAPS["outbound"])
        self.counts = dict.fromkeys(GROUPS, 0)  # over the shown outbound, as the record counts
        self.inbound: _Ranked[_InKey] = _Ranked(CAPS["inbound"])
        self.inbound_count = 0
        self.snapshot: Fact | None = None
        self.measures: dict[tuple[str, str], Fact] = {}
        self.measured: set[tuple[str, str]] = set()  # measured since the last instant listed
        self.counts_moved = True  # since the last instant listed
        self.shown_inbound = -1
        # how many shown outbound observations cite each work now, and a cited_work of each (its title)
        self.cited: dict[str, int] = {}
        self.work_of: dict[str, CitedWork] = {}
        self.begun = False
        self.rows: dict[int, list[CheckWorkRow]] = {}
        for r in notice_rows:
            self.rows.setdefault(r.seq, []).append(r)
        self.listed: dict[tuple[str, str], dict[bytes, Notice]] = {}  # (source, work) -> notices
        self.marks: dict[str, list[Mark]] = {}
        self.series: dict[str, list[tuple[int, int]]] = {g: [] for g in (*GROUPS, "inbound")}
        self.instants: list[Instant] = []
        self.pending: list[int] = []  # seqs applied before the record began
        self._lanes: dict[str, tuple[str, ...]] = {}

    # -- the run -----------------------------------------------------------------------

    def run(self, items: Items, by_day: bool) -> Timeline:
        i, end = 0, len(items)
        while i < end:
            at = items[i][0]
            j = i + 1
            while j < end and items[j][0] == at:
                j += 1
            item = items[i][4]
            if j == i + 1 and self.begun and items[i][3] == "own" and isinstance(item, Fact):
                # the usual instant: one event of the paper's own stream, after the record began
                notes = self._own(item)
                if len(notes) == 1:
                    self._emit_one(at, notes[0])
                elif notes:
                    self._emit(at, notes, [s for n in notes for s in n.seqs])
            else:
                self._instant(at, items[i:j])
            i = j
        lanes = [
            Lane("snapshots", "Snapshots", self._lane("snapshots")),
            Lane("citations", "References observed", self._lane("citations")),
            Lane(
                "resolutions",
                "Resolutions",
                self._lane("resolutions"),
                tuple(Series(g, tuple(self.series[g])) for g in GROUPS),
            ),
            Lane(
                "inbound",
                "Inbound citations",
                self._lane("inbound"),
                (Series("inbound", tuple(self.series["inbound"])),),
            ),
            Lane("notices", "Notices", self._lane("notices")),
        ]
        for key in sorted(k for k in self.marks if k.startswith("check:")):
            lanes.append(Lane(key, f"{key[6:]} checks", self._lane(key)))
        for source, metric in sorted(self.measures):
            key = f"measure:{source}:{metric}"
            series = (Series(source, tuple(self.series[key])),)
            lanes.append(Lane(key, f"{source} {metric}", self._lane(key), series))
        return Timeline(self.arxiv_id, tuple(self.instants), tuple(lanes), by_day)

    def _lane(self, key: str) -> tuple[Mark, ...]:
        return tuple(self.marks.get(key, ()))

    def _instant(self, at: int, items: Items) -> None:
        notes: list[_Note] = []
        begins = False
        if not self.begun and any(
            isinstance(x, Fact) and k == "own" and x.type == "paper.observed" for _, _, _, k, x in items
        ):
            self.begun = begins = True
        shown_in: list[_InKey] | None = None
        count_in = self.inbound_count
        span_seqs: list[int] = []
        for _, _, _, kind, item in items:
            # the kinds name the items: own, cited and citing are facts, the rest each of its own type
            if isinstance(item, Fact):
                notes += self._own(item) if kind == "own" else self._snapshot_of(kind, item)
            elif isinstance(item, InboundDay):
                notes.append(self._day(kind, item))
            elif isinstance(item, Checked):
                notes += self._check(item)
            else:
                if shown_in is None:
                    shown_in = self.inbound.first()
                self._span(kind, item[0])
                span_seqs += item[1]  # a span's start: its citation and resolution; its end: what ended it
        if span_seqs and (self.inbound.first() != shown_in or self.inbound_count != count_in):
            n, was = self.inbound_count, count_in
            text = (
                f"inbound {'+' if n > was else '−'}{abs(n - was)} (now {n})"
                if n != was
                else "an inbound observation changed"
            )
            notes.append(_Note("inbound", "inbound", text, tuple(sorted(set(span_seqs)))))
        if not self.begun:
            self.pending += [s for n in notes for s in n.seqs]
            self._marks(at, notes, None)
            return
        if begins:
            seqs = [*self.pending, *(s for n in notes for s in n.seqs)]
            n_in = self.inbound_count
            text = f"the record begins: {len(self.out.keys)} outbound references, {n_in} inbound"
            notes = [_Note("snapshots", "begins", text, ()), *notes]
            self.pending = []
            for lane, marks in self.marks.items():
                self.marks[lane] = [msgspec.structs.replace(m, shown_at=at) for m in marks]
        elif not notes:
            return
        else:
            seqs = [s for n in notes for s in n.seqs]
        self._emit(at, notes, seqs)

    def _marks(self, at: int, notes: list[_Note], shown_at: int | None) -> dict[str, Sequence[str]]:
        """One mark per lane the notes touch; each lane's lines."""
        if len(notes) == 1:  # the usual instant: one event
            n = notes[0]
            self.marks.setdefault(n.lane, []).append(Mark(at, n.text, n.seqs, n.strong, shown_at or at))
            return {n.lane: (n.text,)}
        by_lane: dict[str, list[_Note]] = {}
        for n in notes:
            by_lane.setdefault(n.lane, []).append(n)
        lines: dict[str, Sequence[str]] = {}
        for lane, mine in by_lane.items():
            texts = lines[lane] = [mine[0].text] if len(mine) == 1 else _summarize(mine)
            lane_seqs = mine[0].seqs if len(mine) == 1 else tuple(sorted({s for n in mine for s in n.seqs}))
            mark = Mark(at, "; ".join(texts), lane_seqs, any(n.strong for n in mine), shown_at or at)
            self.marks.setdefault(lane, []).append(mark)
        return lines

    def _emit_one(self, at: int, n: _Note) -> None:
        """_emit of an instant with one note (most of them)."""
        self.marks.setdefault(n.lane, []).append(Mark(at, n.text, n.seqs, n.strong, at))
        self._points(at)
        self.instants.append(Instant(at, (n.text,), n.seqs, self._lanes.get(n.lane) or self._one(n.lane)))

    def _emit(self, at: int, notes: list[_Note], seqs: list[int]) -> None:
        by_lane = self._marks(at, notes, at)
        changes = [line for lines in by_lane.values() for line in lines]
        self._points(at)
        unique = tuple(seqs) if len(seqs) == 1 else tuple(sorted(set(seqs)))
        self.instants.append(Instant(at, tuple(changes), unique, tuple(sorted(by_lane))))

    def _one(self, lane: str) -> tuple[str, ...]:
        """The one-lane tuple of `lane`, made once (thousands of instants touch one lane)."""
        made = self._lanes[lane] = (lane,)
        return made

    def _points(self, at: int) -> None:
        """The step lines' points at an instant listed: each value that moved since the last."""
        if self.counts_moved:
            self.counts_moved = False
            for g in GROUPS:
                self._point(g, at, self.counts[g])
        if self.inbound_count != self.shown_inbound:
            self.shown_inbound = self.inbound_count
            self._point("inbound", at, self.inbound_count)
        if self.measured:
            for key in self.measured:
                f = self.measures[key]
                self._point(f"measure:{f.data.source}:{f.data.metric}", at, f.data.value)
            self.measured = set()

    def _point(self, name: str, at: int, value: int) -> None:
        points = self.series.setdefault(name, [])
        if not points or points[-1][1] != value:
            points.append((at, value))

    # -- the paper's own stream --------------------------------------------------------

    def _shown_change(self, entered: _OutKey | None, left: _OutKey | None) -> None:
        for key, sign in ((entered, 1), (left, -1)):
            if key is not None:
                o = self.obs[key[1]]
                self.counts[o.group()] += sign
                self.counts_moved = True
                self._cites(o.work(), sign)

    def _cites(self, work: CitedWork | None, sign: int) -> None:
        if work is not None and work.work_id is not None:
            self.cited[work.work_id] = self.cited.get(work.work_id, 0) + sign
            self.work_of[work.work_id] = work

    def _own(self, f: Fact) -> list[_Note]:
        d = f.data
        if f.type == "paper.observed":
            first = self.snapshot is None
            text = f"snapshot v{d.version}"
            if first:
                text = "first " + text
            elif d.title != self.snapshot.data.title:  # type: ignore[union-attr]
                text += " (title changed)"
            self.snapshot = f
            return [_Note("snapshots", "snapshot", text, (f.seq,))]
        if f.type == "measurement.observed":
            key = (d.source, d.metric)
            was = self.measures.get(key)
            self.measures[key] = f
            self.measured.add(key)
            text = f"{d.source} {d.metric} {d.value}" + ("" if was is None else f" (was {was.data.value})")
            return [_Note(f"measure:{d.source}:{d.metric}", "measure", text, (f.seq,))]
        o = self.obs.get(d.observation_id)
        if o is None:
            o = self.obs[d.observation_id] = _Obs()
        if f.type == "citation.observed":
            return self._citation(o, f)
        return self._resolution(o, f)

    def _citation(self, o: _Obs, f: Fact) -> list[_Note]:
        index = f.data.reference_index
        if o.cit is None:
            o.cite(f)
            entered, left = self.out.add(o.key())
            self._shown_change(entered, left)
            return [_Note("citations", "observed", f"reference {index} observed", (f.seq,))]
        old = o.key()
        was_shown = self.out.shown(old)
        self._shown_change(*self.out.remove(old))
        o.cite(f)
        self._shown_change(*self.out.add(o.key()))
        if not (was_shown or self.out.shown(o.key())):
            return []  # beyond the cap before and after: the record shows neither
        text = f"reference {old[0]} re-observed" + ("" if old[0] == index else f" as reference {index}")
        return [_Note("citations", "re-observed", text, (f.seq,))]

    def _resolution(self, o: _Obs, f: Fact) -> list[_Note]:
        before = o.res
        if o.cit is None or not self.out.shown(o.key()):
            o.res = f  # not shown: no citation yet, or beyond the cap
            return []
        self.counts[o.group()] -= 1
        self._cites(o.work(), -1)
        o.res = f
        self.counts[o.group()] += 1
        self._cites(o.work(), 1)
        self.counts_moved = True
        status = f.data.status
        index = o.cit.data.reference_index
        if before is None:
            text = f"reference {index} resolved: {_words(status)}"
            return [_Note("resolutions", "resolved", text, (f.seq,), detail=status)]
        was = before.data.status
        text = f"reference {index} re-resolved: " + (
            _words(status) if was == status else f"{_words(was)} → {_words(status)}"
        )
        return [_Note("resolutions", "re-resolved", text, (f.seq,), detail=status)]

    # -- other papers, inbound, checks -------------------------------------------------

    def _snapshot_of(self, kind: str, f: Fact) -> list[_Note]:
        pid = f.data.arxiv_id
        if kind == "cited":
            shown = any(
                (res := self.obs[oid].res) is not None and res.data.cited_arxiv_id == pid
                for _, oid in self.out.first()
            )
        else:
            shown = any(key[0] == pid for key in self.inbound.first())
        if not shown:
            return []
        text = f"{kind} paper arXiv:{pid} snapshot v{f.data.version}"
        return [_Note("snapshots", kind, text, (f.seq,))]

    def _span(self, kind: str, s: Span) -> None:
        key = (s.citing, s.reference_index, s.observation_id, s.t_from)
        if kind == "span+":
            self.inbound.add(key)
            self.inbound_count += 1
        else:
            self.inbound.remove(key)
            self.inbound_count -= 1

    def _day(self, kind: str, d: InboundDay) -> _Note:
        day = to_datetime(d.bucket * 86_400_000_000).strftime("%Y-%m-%d")
        if kind == "day<":
            return _Note("inbound", "day", f"the first of {d.instants} inbound changes on {day}", ())
        self.inbound_count += d.starts - d.ends
        text = f"inbound +{d.starts} −{d.ends} on {day} (now {self.inbound_count})"
        return _Note("inbound", "day", text, ())

    def _check(self, c: Checked) -> list[_Note]:
        notes = [_Note(f"check:{c.source}", "check", f"{c.source} checked", (c.seq,))]
        rows = self.rows.pop(c.seq, [])
        if not rows:
            return notes
        covered: dict[str, list[Notice]] = {}
        for r in rows:
            notices = [] if r.notices == b"[]" else _NOTICES.decode(r.notices)
            if r.work_id == "*":
                known = {w for s, w in self.listed if s == c.source}
                targets = sorted({w for w, n in self.cited.items() if n > 0} | known)
            else:
                targets = [r.work_id]
            for w in targets:
                covered.setdefault(w, []).extend(n for n in notices if n.work_id == w)
        for w, notices in sorted(covered.items()):
            now = {_key(n): n for n in notices}
            was = self.listed.get((c.source, w), {})
            self.listed[(c.source, w)] = now
            if self.cited.get(w, 0) <= 0:
                continue
            label = self.work_of[w].title or w
            for k in sorted(set(now) - set(was)):
                kind = _words(now[k].kind)
                text = f"{c.source} reports {'an' if kind[0] in 'aeiou' else 'a'} {kind} of “{label}”"
                notes.append(_Note("notices", "notice", text, (c.seq,), strong=True))
            for k in sorted(set(was) - set(now)):
                text = f"{c.source} no longer lists the {_words(was[k].kind)} of “{label}”"
                notes.append(_Note("notices", "notice", text, (c.seq,)))
        return notes


def events_text(seqs: Sequence[int]) -> str:
    """The events behind a mark or an instant, briefly: `event 12`, `events 3, 4`, `56 events, seq 1–56`."""
    if not seqs:
        return "no event of its own"
    if len(seqs) <= 3:
        return ("event " if len(seqs) == 1 else "events ") + ", ".join(map(str, seqs))
    return f"{len(seqs)} events, seq {seqs[0]}–{seqs[-1]}"


def as_of_text(us: int) -> str:
    """format_as_of(us), faster for the years 1000..9999 (isoformat spells them the same)."""
    dt = _EPOCH + timedelta(microseconds=us)
    return dt.isoformat() + "Z" if dt.year >= 1000 else format_as_of(us)


_NOTICES = msgspec.json.Decoder(list[Notice])


def _key(notice: Notice) -> bytes:
    # Python's json spelling, which orders the notices an instant lists
    return json.dumps(msgspec.to_builtins(notice), sort_keys=True).encode()


_PLURAL = {"observed": "references observed", "re-observed": "references re-observed"}


def _summarize(notes: list[_Note]) -> list[str]:
    """One lane's notes at one instant as lines: several of a kind said once, with their count."""
    out: list[str] = []
    kinds: dict[str, list[_Note]] = {}
    for n in notes:
        kinds.setdefault(n.kind, []).append(n)
    for kind, mine in kinds.items():
        if len(mine) == 1 or kind not in ("observed", "re-observed", "resolved", "re-resolved"):
            out += [n.text for n in mine]
        elif kind in _PLURAL:
            out.append(f"{len(mine)} {_PLURAL[kind]}")
        else:
            tally: dict[str, int] = {}
            for n in mine:
                tally[n.detail] = tally.get(n.detail, 0) + 1
            parts = ", ".join(f"{k} {_words(s)}" for s, k in sorted(tally.items(), key=lambda x: -x[1]))
            verb = "resolved" if kind == "resolved" else "re-resolved"
            out.append(f"{len(mine)} references {verb} ({parts})")
    return out

"""The screen: which references of which papers are resolved to a work carrying a standing notice, as
of T (known at K). A pure function of the citations, resolutions and checks a store hands it, folded
by the record's own rules (projections/record.py), so the screen says what each paper's record says."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple

from ledger.model.events import CitedWork
from ledger.model.facts import CheckRow, Fact
from ledger.model.instants import parse_ts
from ledger.model.record_types import NoticeEvent
from projections.record import observations, standing_notice

VERIFIED = ("verified_exact", "verified_fuzzy")


class Flag(NamedTuple):
    """One notice on the work one reference is resolved to, with the events that show it."""

    citing: str
    reference_index: int
    observation_id: str
    work: CitedWork
    status: str
    resolver_source: str | None
    resolved_at: str
    citation_seq: int
    resolution_seq: int
    notice: NoticeEvent
    check_seq: int  # the latest check of the notice's source covering the work (it lists the notice)

    @property
    def key(self) -> tuple[str, int, str]:
        """Where it sorts: the citing paper, the reference, the observation."""
        return (self.citing, self.reference_index, self.observation_id)


class State(NamedTuple):
    """What one reference shows as of T: its latest citation and resolution seqs, the latest check of
    each source covering its work, and its flags."""

    citation_seq: int
    resolution_seq: int | None
    checks: dict[str, int]
    flags: list[Flag]


WorkChecks = Callable[[Sequence[tuple[str, int]]], list[CheckRow]]


def states(
    facts: Iterable[Fact],
    work_checks: WorkChecks,
    *,
    kinds: Collection[str] | None = None,
    exact_only: bool = False,
) -> dict[str, State]:
    """Each observation among the citations and resolutions `facts` that is tied to a work: what it
    shows (flags only for a verified resolution, of the given kinds), by observation id."""
    wanted = ("verified_exact",) if exact_only else VERIFIED
    seen = observations(facts)
    pairs = sorted(
        {
            (w.work_id, parse_ts(w.snapshot_observed_at))
            for o in seen.values()
            if (w := o.cited_work()) is not None and w.work_id is not None
        }
    )
    checks: dict[tuple[str, int], list[CheckRow]] = {}
    for row in work_checks(pairs):
        checks.setdefault((row.work_id, row.since_us), []).append(row)
    out: dict[str, State] = {}
    for oid, o in seen.items():
        cit, res, work = o.cit, o.res, o.cited_work()
        if work is None or work.work_id is None:
            # no longer tied to a work: it shows nothing, and what made it so is its latest events
            out[oid] = State(cit.seq, None if res is None else res.seq, {}, [])
            continue
        rows = checks.get((work.work_id, parse_ts(work.snapshot_observed_at)), [])
        by_source = {r.source: r.seq for r in rows}
        flags: list[Flag] = []
        if res is not None and res.data.status in wanted:
            for n in standing_notice(work, checks, set()).events:
                if kinds is None or n.kind in kinds:
                    flags.append(
                        Flag(
                            cit.data.citing_arxiv_id,
                            cit.data.reference_index,
                            oid,
                            work,
                            res.data.status,
                            res.data.resolver_source,
                            res.observed_at,
                            cit.seq,
                            res.seq,
                            n,
                            by_source[n.source],
                        )
                    )
        out[oid] = State(cit.seq, None if res is None else res.seq, by_source, flags)
    return out


def flags(states_: dict[str, State]) -> list[Flag]:
    """Every flag of these states, in the screen's order (the citing paper, the reference, then the
    record's order of notices)."""
    return [f for s in sorted(states_.values(), key=_state_key) for f in s.flags]


def _state_key(s: State) -> tuple[str, int, str]:
    return s.flags[0].key if s.flags else ("", 0, "")


class Change(NamedTuple):
    """A flag that appeared (`flagged`) or went (`cleared`) between two instants, and the events of the
    later state that differ from the earlier one's: what made the change."""

    change: str
    flag: Flag
    events: list[int]


def changes(before: dict[str, State], after: dict[str, State]) -> list[Change]:
    """What became flagged or cleared from `before` to `after`, in the screen's order."""
    out: list[Change] = []
    for oid in sorted(before.keys() | after.keys()):
        a, b = before.get(oid), after.get(oid)
        old = {_identity(f): f for f in (a.flags if a else [])}
        new = {_identity(f): f for f in (b.flags if b else [])}
        for ident, f in new.items():
            if ident not in old:
                out.append(Change("flagged", f, _responsible(a, b, f.notice.source)))
        for ident, f in old.items():
            if ident not in new:
                out.append(Change("cleared", f, _responsible(a, b, f.notice.source)))
    return sorted(out, key=lambda c: (*c.flag.key, c.change, _identity(c.flag)))


def _identity(f: Flag) -> tuple[str, str, str, str, str, tuple[str, ...], str, str, str]:
    """A notice as its source gave it: the same notice in a later check is not a new one."""
    n = f.notice
    return (n.source, n.kind, n.notice_doi or "", n.record_id or "", n.raw_type or "", tuple(n.reasons),
            n.notice_date or "", n.url or "", n.work_id or "")  # fmt: skip


def _responsible(before: State | None, after: State | None, source: str) -> list[int]:
    """The events of the later state (citation, resolution, the source's check) it does not share with
    the earlier one."""
    if after is None:
        return []
    was = (
        (before.citation_seq, before.resolution_seq, before.checks.get(source))
        if before
        else (None, None, None)
    )
    now = (after.citation_seq, after.resolution_seq, after.checks.get(source))
    return sorted({n for n, w in zip(now, was, strict=True) if n is not None and n != w})

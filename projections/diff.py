"""What changed in a paper's record between two instants, per observation, with the events responsible.

`diff_records` is pure: two records and the facts observed between them. `record_changes` builds them
from one consistent read the caller opened (the TO record's build set minus the FROM record's, observed
after FROM); it never reaches back up to the service that opened it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec

from ledger.model.codec import canonical, decode_data
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.facts import Fact
from ledger.model.instants import format_as_of, parse_ts
from ledger.model.jsonvalue import JsonIn as Json
from ledger.model.record_types import Measurement, NoticeEvent, Observation, Record, StandingNotice
from ledger.storage.interface import Store
from ledger.storage.works_store import observation_events
from projections.record import RecordSource, build_record

SCHEMA = "citation-ledger.record-changes.v1"
Change = dict[str, Json]
Changes = dict[str, Any]  # the diff document (as served): the API and the CLI read its keys


def event_ref(f: Fact) -> dict[str, Json]:
    """How a change names an event: seq, type, observed_at."""
    return {"observed_at": f.observed_at, "seq": f.seq, "type": f.type}


class Missing:
    """The value on the side of a JSON diff where a key or list item is absent."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()
Side = Json | Missing  # one side of a JSON diff: a value, or MISSING


def json_diff(
    a: Side, b: Side, path: str = "", *, lists: bool = True, missing: Side = MISSING
) -> list[tuple[str, Side, Side]]:
    """Every leaf path where JSON values a and b differ, as (path, a's value, b's value), sorted by key.

    Objects are walked key by key, a key absent on one side standing as `missing` (compared like any
    value unless it is MISSING); lists item by item (lists=False: each list is one value). Paths read
    `outbound[3].resolution.status`; the root is "". Leaves differ unless their canonical JSON is the
    same, so 1 and true, or [] and {}, differ.
    """
    out: list[tuple[str, Side, Side]] = []
    _walk(a, b, path, lists, missing, out)
    return out


def _walk(a: Side, b: Side, path: str, lists: bool, missing: Side, out: list[tuple[str, Side, Side]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _walk(
                a.get(k, missing), b.get(k, missing), f"{path}.{k}" if path else str(k), lists, missing, out
            )
    elif lists and isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else missing
            y = b[i] if i < len(b) else missing
            _walk(x, y, f"{path}[{i}]", lists, missing, out)
    elif isinstance(a, Missing) or isinstance(b, Missing) or canonical(a) != canonical(b):
        out.append((path, a, b))


def as_json(value: msgspec.Struct | Json) -> Json:
    """A part of a record as the JSON values it encodes to (the keys a record leaves out left out)."""
    out: Json = msgspec.to_builtins(value)
    return out


def field_changes(
    before: msgspec.Struct | Json, after: msgspec.Struct | Json, prefix: str = ""
) -> list[Change]:
    """Paths whose values differ: [{path, from, to}]; objects are compared key by key, a list is one
    value, and an absent key is null."""
    return [
        {"from": x, "path": path, "to": y}  # type: ignore[dict-item]  # missing=None: never MISSING
        for path, x, y in json_diff(as_json(before), as_json(after), prefix, lists=False, missing=None)
    ]


def _notice_key(n: NoticeEvent) -> bytes:
    # the same notice seen again by a newer check is not a change: the receipt move says that
    return canonical({k: getattr(n, k) for k in n.__struct_fields__ if k != "observed_at"})


_NO_STANDING = StandingNotice([], None, [], "unavailable")


def _standing_changes(before: StandingNotice | None, after: StandingNotice) -> tuple[list[Change], set[str]]:
    """Notice and receipt changes of one observation, and the sources whose newest check is responsible."""
    out: list[Change] = []
    sources: set[str] = set()
    was_state = None if before is None else before.state
    was_reason = None if before is None else before.reason
    for f, a, b in (("state", was_state, after.state), ("reason", was_reason, after.reason)):
        if a != b:
            out.append({"from": a, "kind": "standing_state", "path": f"standing_notice.{f}", "to": b})
    old = before or _NO_STANDING
    was = {r.source: r.observed_at for r in old.source_receipts}
    now = {r.source: r.observed_at for r in after.source_receipts}
    for src in sorted(set(was) | set(now)):
        x, y = was.get(src), now.get(src)
        if x == y:
            continue
        kind = "receipt_appeared" if x is None else "receipt_gone" if y is None else "receipt_moved"
        out.append({"from": x, "kind": kind, "source": src, "to": y})
        if y is not None:
            sources.add(src)
    old_n = {_notice_key(n): n for n in old.events}
    new_n = {_notice_key(n): n for n in after.events}
    for key in sorted(set(new_n) - set(old_n)):
        out.append({"kind": "notice_appeared", "notice": as_json(new_n[key])})
        sources.add(new_n[key].source)
    for key in sorted(set(old_n) - set(new_n)):
        out.append({"kind": "notice_gone", "notice": as_json(old_n[key])})
        src = old_n[key].source
        if src in now:
            sources.add(src)  # a newer check of that source no longer lists it
    return out, sources


def _work_changes(before: Observation, after: Observation) -> list[Change]:
    a, b = before.citation.cited_work, after.citation.cited_work
    if a is None and b is None:
        return []
    if a is None or b is None or a.work_id != b.work_id:
        return [
            {
                "from": as_json(a),
                "kind": "cited_work_rebound",
                "path": "citation.cited_work",
                "to": as_json(b),
            }
        ]
    return [{**c, "kind": "cited_work"} for c in field_changes(a, b, "citation.cited_work")]


def observation_changes(before: Observation | None, after: Observation) -> tuple[list[Change], set[str]]:
    """What differs in one observation: resolution, cited work, papers, citation fields, standing.

    An added observation (`before` None) lists only the notices it shows: the rest is all new.
    """
    was = None if before is None else before.standing_notice
    standing, sources = _standing_changes(was, after.standing_notice)
    if before is None:
        # nothing was shown before: every notice shown now appeared, each from its own source
        appeared = [c for c in standing if c["kind"] == "notice_appeared"]
        return appeared, {n.source for n in after.standing_notice.events}
    out = [
        {**c, "kind": "resolution"} for c in field_changes(before.resolution, after.resolution, "resolution")
    ]
    out += _work_changes(before, after)
    a, b = before.citation, after.citation
    out += [
        {**c, "kind": "cited_paper"}
        for c in field_changes(a.cited_paper, b.cited_paper, "citation.cited_paper")
    ]
    out += [
        {**c, "kind": "citing_paper"}
        for c in field_changes(a.citing_paper, b.citing_paper, "citation.citing_paper")
    ]
    rest = ("reference_index", "source", "source_observed_at")
    a_rest = {k: getattr(a, k) for k in rest}
    b_rest = {k: getattr(b, k) for k in rest}
    out += [{**c, "kind": "citation"} for c in field_changes(a_rest, b_rest, "citation")]
    return out + standing, sources


def _by_id(record: Record | None) -> dict[str, tuple[str, Observation]]:
    if record is None:
        return {}
    lanes = (("outbound", record.outbound), ("inbound", record.inbound))
    return {o.observation_id: (lane, o) for lane, items in lanes for o in items}


def _refs(facts: Iterable[Fact]) -> list[dict[str, Json]]:
    return [event_ref(f) for f in sorted({f.seq: f for f in facts}.values(), key=lambda f: f.seq)]


def _checks(facts: Sequence[Fact], source: str, at: str | None) -> list[Fact]:
    return [
        f for f in facts if f.type == "standing.checked" and f.data.source == source and f.observed_at == at
    ]


def _observation_entries(
    before: Record | None, after: Record, facts: Sequence[Fact]
) -> tuple[list[dict[str, Json]], dict[str, list[Fact]]]:
    """One entry per added, removed or changed observation, and the facts named per lane."""
    old_obs, new_obs = _by_id(before), _by_id(after)
    # each observation's and each paper's facts, found once (a record lists hundreds of observations)
    by_observation: dict[str, list[Fact]] = {}
    by_paper: dict[str, list[Fact]] = {}
    for f in facts:
        if f.type in ("citation.observed", "resolution.observed"):
            by_observation.setdefault(f.data.observation_id, []).append(f)
        elif f.type == "paper.observed":
            by_paper.setdefault(f.data.arxiv_id, []).append(f)
    entries: list[dict[str, Json]] = []
    lane_facts: dict[str, list[Fact]] = {"outbound": [], "inbound": []}
    for oid in sorted(set(old_obs) | set(new_obs), key=lambda i: _obs_order(i, old_obs, new_obs)):
        lane, obs = new_obs.get(oid) or old_obs[oid]
        prior = old_obs.get(oid)
        changes: list[Change] = []
        sources: set[str] = set()
        if oid not in new_obs:
            change = "removed"
        else:
            changes, sources = observation_changes(prior[1] if prior else None, obs)
            change = "added" if prior is None else "changed"
            if not changes and prior is not None:
                continue  # unchanged
        cit = obs.citation
        papers = {p.arxiv_id for p in (cit.cited_paper, cit.citing_paper) if p is not None}
        paper_moved = bool({c["kind"] for c in changes} & {"cited_paper", "citing_paper"})
        mine = list(by_observation.get(oid, ()))
        if paper_moved:
            moved = (f for p in papers for f in by_paper.get(p, ()))
            mine = sorted([*mine, *moved], key=lambda f: f.seq)
        now = {r.source: r.observed_at for r in obs.standing_notice.source_receipts}
        for src in sorted(sources):
            mine += _checks(facts, src, now.get(src))
        lane_facts[lane] += mine
        work = cit.cited_work
        entries.append(
            {
                "change": change,
                "changes": changes,
                "cited_work": None
                if work is None
                else {"doi": work.doi, "title": work.title, "work_id": work.work_id},
                "events": _refs(mine),
                "lane": lane,
                "observation_id": oid,
                "reference_index": cit.reference_index,
                "status": obs.resolution.status,
            }
        )
    return entries, lane_facts


def _source_changes(
    before: Record | None, after: Record, facts: Sequence[Fact]
) -> tuple[list[dict[str, Json]], list[Fact]]:
    """standing_sources entries whose latest check moved, with that check."""
    was = {r.source: r.observed_at for r in (before.standing_sources if before else [])}
    now = {r.source: r.observed_at for r in after.standing_sources}
    out: list[dict[str, Json]] = []
    used: list[Fact] = []
    for src in sorted(set(was) | set(now)):
        if was.get(src) != now.get(src):
            mine = _checks(facts, src, now.get(src))
            used += mine
            out.append({"events": _refs(mine), "from": was.get(src), "source": src, "to": now.get(src)})
    return out, used


def diff_records(before: Record | None, after: Record, facts: Sequence[Fact]) -> Changes:
    """The changes from `before` (None: no record yet) to `after`, naming the responsible facts."""
    observations, lane_facts = _observation_entries(before, after, facts)
    standing, standing_facts = _source_changes(before, after, facts)
    measurements, measure_facts = _measurement_changes(before, after, facts)
    paper_changes = field_changes(None if before is None else before.paper, after.paper, "paper")
    paper_facts = [f for f in facts if f.type == "paper.observed" and f.data.arxiv_id == after.paper.arxiv_id]
    # coverage is derived: each lane names the facts behind the part of the record it counts
    lane_events = {
        "reference_resolution": lane_facts["outbound"],
        "standing_notices": standing_facts,
        "inbound_itemization": lane_facts["inbound"],
        "external_citation_measurements": measure_facts,
    }
    coverage = []
    old_cov = {c.lane: c for c in (before.coverage if before else [])}
    for lane in after.coverage:
        changes = field_changes(old_cov.get(lane.lane, {}), lane)
        if changes:
            events = _refs(lane_events.get(lane.lane, []))
            coverage.append({"changes": changes, "events": events, "lane": lane.lane})
    was = None if before is None else before.reference_resolution
    resolution = field_changes(was, after.reference_resolution, "reference_resolution")
    responsible = [
        *paper_facts,
        *standing_facts,
        *measure_facts,
        *lane_facts["outbound"],
        *lane_facts["inbound"],
    ]
    changed = bool(observations or standing or measurements or paper_changes or coverage or resolution)
    return {
        "arxiv_id": after.paper.arxiv_id,
        "changed": changed,
        "counts": _counts(before, after),
        "coverage": coverage,
        "events": _refs(responsible),
        "external_citation_measurements": measurements,
        "from": None if before is None else {"as_of": before.as_of, "context_digest": before.context_digest},
        "observations": observations,
        "paper": {"changes": paper_changes, "events": _refs(paper_facts if paper_changes else [])},
        "reference_resolution": {
            "changes": resolution,
            "events": _refs(lane_facts["outbound"] if resolution else []),
        },
        "schema": SCHEMA,
        "standing_sources": standing,
        "to": {"as_of": after.as_of, "context_digest": after.context_digest},
    }


def _counts(before: Record | None, after: Record) -> dict[str, dict[str, int]]:
    """Each lane's count and how many it shows, FROM -> TO: a long lane lists only what it shows (the
    records' caps), so the counts say how much more moved."""

    def of(record: Record | None) -> dict[str, tuple[int, int]]:
        if record is None:
            return {"inbound": (0, 0), "outbound": (0, 0)}
        total_out = record.reference_resolution.total_outbound_references
        return {
            "inbound": (record.lane("inbound_itemization").denominator, len(record.inbound)),
            "outbound": (total_out, len(record.outbound)),
        }

    a, b = of(before), of(after)
    return {
        lane: {"from": a[lane][0], "shown_from": a[lane][1], "shown_to": b[lane][1], "to": b[lane][0]}
        for lane in ("inbound", "outbound")
    }


def _obs_order(
    oid: str, old: dict[str, tuple[str, Observation]], new: dict[str, tuple[str, Observation]]
) -> tuple[int, str, int, str]:
    lane, o = new.get(oid) or old[oid]
    citing = o.citation.citing_paper
    return (
        0 if lane == "outbound" else 1,
        citing.arxiv_id if citing else "",
        o.citation.reference_index,
        oid,
    )


def _measurement_changes(
    before: Record | None, after: Record, facts: Sequence[Fact]
) -> tuple[list[Change], list[Fact]]:
    def key(m: Measurement) -> tuple[str, str]:
        return (m.source, m.metric)

    old = {key(m): m for m in (before.external_citation_measurements if before else [])}
    new = {key(m): m for m in after.external_citation_measurements}
    out: list[Change] = []
    used: list[Fact] = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if a == b:
            continue
        mine = [
            f
            for f in facts
            if f.type == "measurement.observed"
            and (f.data.source, f.data.metric) == k
            and b is not None
            and f.observed_at == b.observed_at
        ]
        used += mine
        change = "added" if a is None else "removed" if b is None else "changed"
        out.append(
            {
                "change": change,
                "events": _refs(mine),
                "from": as_json(a),
                "metric": k[1],
                "source": k[0],
                "to": as_json(b),
            }
        )
    return out, used


class Snapshot(Protocol):
    """A consistent read of the ledger that gives the record's reads as of any instant."""

    def at(self, as_of_us: int, known_us: int | None = None) -> RecordSource: ...


def record_changes(reader: Snapshot, store: Store, arxiv_id: str, from_us: int, to_us: int) -> Changes:
    """The diff of the paper's record from FROM to TO, from one consistent read (`reader`, and the
    `store` reads made while it is open); the TO record's NotFound is raised."""
    if from_us > to_us:
        raise InvalidEvent("from", f"{format_as_of(from_us)} is after to ({format_as_of(to_us)})")
    built = build_record(reader.at(to_us), arxiv_id, to_us)
    after, after_seqs = built.record, built.seqs
    try:
        earlier = build_record(reader.at(from_us), arxiv_id, from_us)
        before, before_seqs = earlier.record, earlier.seqs
    except NotFound:
        before, before_seqs = None, []
    new = sorted(set(after_seqs) - set(before_seqs))
    facts: dict[int, Fact] = {}
    for e in store.envelopes(new):
        observed = parse_ts(e.observed_at)
        if observed > from_us:
            facts[e.seq] = Fact(e.seq, e.type, e.observed_at, observed, decode_data(e.type, e.data))
    # an observation that left the record (re-resolved elsewhere) has its events outside TO's set
    gone = sorted(set(_by_id(before)) - set(_by_id(after)))
    for f in observation_events(store, gone, from_us, to_us):
        facts.setdefault(f.seq, f)
    return diff_records(before, after, [facts[s] for s in sorted(facts)])

"""The Paper Citation Record as of T: a pure function of the events a RecordSource hands it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple, Protocol

import msgspec

from ledger.model.codec import canonical, context_digest, observation_digest
from ledger.model.errors import NotFound
from ledger.model.events import STATUSES, CitedWork
from ledger.model.facts import CheckRow, Fact, SourceHead
from ledger.model.instants import format_as_of, max_ts, parse_ts, to_datetime
from ledger.model.record_types import (
    Caps,
    Citation,
    CoverageLane,
    Measurement,
    NoticeEvent,
    Observation,
    ObservationLinks,
    PaperBlock,
    Receipt,
    Record,
    RecordLinks,
    ReferenceResolution,
    Resolution,
    SnapshotBlock,
    StandingNotice,
    StateCounts,
)

SCHEMA: Literal["pith.paper-citation-record.v1"] = "pith.paper-citation-record.v1"
CAPS = {"database_statements": 6, "inbound": 100, "outbound": 100}
REFUSAL = "A citation records a reference. It does not transfer a finding from one paper to another."
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_UNAVAILABLE_LINK = "canonical_work_link_unavailable"
_NOT_QUERIED = "not_yet_queried"


class RecordSource(Protocol):
    """The five reads one record needs, already filtered to observed <= T (and recorded <= K)."""

    def paper_stream(self, arxiv_id: str) -> list[Fact]: ...
    def inbound(self, arxiv_id: str, limit: int) -> tuple[int, list[Fact]]:
        """How many observations are inbound to the paper, and the latest citation and resolution of
        the first `limit` of them in the record's order (see `inbound_observations`), in seq order."""
        ...

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]: ...
    def source_heads(self) -> list[SourceHead]: ...
    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]: ...


class Built(NamedTuple):
    """A record, the seqs of the events it shows, and how many inbound observations it counts."""

    record: Record
    seqs: list[int]
    # the events of the inbound observations past the cap also built the record (its count): they are
    # read page by page where needed (integrity report, bundle), never with the record
    inbound_total: int


def _key(f: Fact) -> tuple[int, int]:
    return (f.observed_us, f.seq)


def _latest(facts: Iterable[Fact]) -> dict[tuple[str, ...], Fact]:
    """Group key -> latest fact (greatest observed_at, ties to the later seq)."""
    out: dict[tuple[str, ...], Fact] = {}
    for f in facts:
        k = _group(f)
        cur = out.get(k)
        if cur is None or _key(f) > _key(cur):
            out[k] = f
    return out


def _group(f: Fact) -> tuple[str, ...]:
    if f.type in ("citation.observed", "resolution.observed"):
        return (f.type, f.data.observation_id)
    if f.type == "measurement.observed":
        return (f.type, f.data.source, f.data.metric)
    return (f.type, f.data.arxiv_id)


def paper_block(snap: Fact) -> SnapshotBlock:
    """The cited_paper / citing_paper block of a paper.observed fact."""
    d = snap.data
    return SnapshotBlock(d.arxiv_id, d.last_updated, snap.observed_at, d.submitted_at, d.title, d.version)


def thesis_date(as_of_us: int) -> str:
    """D Month YYYY of T in UTC."""
    dt = to_datetime(as_of_us)
    return f"{dt.day} {_MONTHS[dt.month - 1]} {dt.year}"


class _Obs(NamedTuple):
    cit: Fact
    res: Fact | None

    @property
    def oid(self) -> str:
        return str(self.cit.data.observation_id)

    @property
    def citing(self) -> str:
        return str(self.cit.data.citing_arxiv_id)

    @property
    def cited(self) -> str | None:
        return None if self.res is None else self.res.data.cited_arxiv_id

    def cited_work(self) -> CitedWork | None:
        if self.res is not None and self.res.data.cited_work is not None:
            return self.res.data.cited_work
        return self.cit.data.cited_work


def observations(facts: Iterable[Fact]) -> dict[str, _Obs]:
    """Each observation among the citations and resolutions `facts`: its latest citation and its
    latest resolution (None before one), by observation id."""
    latest = _latest(f for f in facts if f.type in ("citation.observed", "resolution.observed"))
    out = {}
    for (kind, oid), f in latest.items():
        if kind == "citation.observed":
            out[oid] = _Obs(f, latest.get(("resolution.observed", oid)))
    return out


def inbound_observations(facts: Iterable[Fact], arxiv_id: str) -> list[_Obs]:
    """The observations inbound to `arxiv_id` among the citations and resolutions `facts` (their
    latest resolution names it, the citing paper is another), in the record's order."""
    return sorted(
        (o for o in observations(facts).values() if o.cited == arxiv_id and o.citing != arxiv_id),
        key=lambda o: (o.citing, o.cit.data.reference_index, o.oid),
    )


def inbound_facts(observations: Iterable[_Obs]) -> list[Fact]:
    """The citation and resolution facts of these observations, in seq order."""
    return sorted((f for o in observations for f in o if f is not None), key=lambda f: f.seq)


def build_record(src: RecordSource, arxiv_id: str, as_of_us: int) -> Built:
    """The record of `arxiv_id` as of T from the source's events; NotFound without a snapshot."""
    own = src.paper_stream(arxiv_id)
    snaps = [f for f in own if f.type == "paper.observed"]
    if not snaps:
        raise NotFound(f"arXiv:{arxiv_id} has no paper snapshot as of {format_as_of(as_of_us)}")
    used: set[int] = set()
    snap = max(snaps, key=_key)
    categorized = [f for f in snaps if f.data.primary_category is not None]
    category_snap = max(categorized, key=_key) if categorized else None
    used.update(f.seq for f in (snap, category_snap) if f is not None)

    outbound_all = sorted(observations(own).values(), key=lambda o: (o.cit.data.reference_index, o.oid))
    total_in, shown = src.inbound(arxiv_id, CAPS["inbound"])
    inbound = inbound_observations(shown, arxiv_id)[: CAPS["inbound"]]
    for o in (*outbound_all, *inbound):
        used.update(f.seq for f in o if f is not None)
    outbound = outbound_all[: CAPS["outbound"]]

    wanted = {o.cited for o in outbound if o.cited} | {o.citing for o in inbound}
    wanted.discard(arxiv_id)
    latest_snaps = {arxiv_id: snap}
    for (_, pid), f in _latest(src.snapshots(sorted(wanted))).items():
        latest_snaps[pid] = f

    works = sorted(
        {
            (w.work_id, parse_ts(w.snapshot_observed_at))
            for o in (*outbound, *inbound)
            if (w := o.cited_work()) is not None and w.work_id is not None
        }
    )
    checks: dict[tuple[str, int], list[CheckRow]] = {}
    for row in src.work_checks(works):
        checks.setdefault((row.work_id, row.since_us), []).append(row)

    def observation(o: _Obs) -> Observation:
        cited_snap = latest_snaps.get(o.cited) if o.cited else None
        citing_snap = latest_snaps.get(o.citing)
        work = o.cited_work()
        res = o.res
        if cited_snap:
            used.add(cited_snap.seq)
        if citing_snap:
            used.add(citing_snap.seq)
        d = o.cit.data
        obs = Observation(
            citation=Citation(
                paper_block(cited_snap) if cited_snap else None,
                work,
                paper_block(citing_snap) if citing_snap else None,
                d.reference_index,
                d.source,
                o.cit.observed_at,
            ),
            links=ObservationLinks(f"/paper/{o.citing}", f"/paper/{o.cited}" if cited_snap else None),
            observation_digest="",  # the digest of the rest, set below once the rest is built
            observation_id=o.oid,
            resolution=(
                _PENDING
                if res is None
                else Resolution(res.observed_at, res.data.resolver_source, res.data.status)
            ),
            standing_notice=standing_notice(work, checks, used),
        )
        return msgspec.structs.replace(obs, observation_digest=observation_digest(obs))

    out_objs = [observation(o) for o in outbound]
    in_objs = [observation(o) for o in inbound]
    heads = src.source_heads()
    used.update(h.seq for h in heads)
    measurements = _latest(f for f in own if f.type == "measurement.observed")
    used.update(f.seq for f in measurements.values())
    record = _assemble(
        arxiv_id,
        as_of_us,
        snap,
        category_snap,
        out_objs,
        len(outbound_all),
        in_objs,
        total_in,
        heads,
        [measurements[k] for k in sorted(measurements)],
    )
    return Built(record, sorted(used), total_in)


_PENDING = Resolution(None, None, "pending")


def standing_notice(
    work: CitedWork | None, checks: dict[tuple[str, int], list[CheckRow]], used: set[int]
) -> StandingNotice:
    if work is None or work.work_id is None:
        return StandingNotice([], _UNAVAILABLE_LINK, [], "unavailable")
    rows = sorted(checks.get((work.work_id, parse_ts(work.snapshot_observed_at)), []), key=lambda r: r.source)
    if not rows:
        return StandingNotice([], _NOT_QUERIED, [], "unavailable")
    events = []
    for r in rows:
        used.add(r.seq)
        for n in r.notices:
            if n["work_id"] == work.work_id:
                events.append(NoticeEvent(**n, observed_at=r.observed_at, source=r.source))
    events.sort(key=notice_order)
    latest = max_ts(r.observed_at for r in rows)
    n = len(events)
    found = "No event" if n == 0 else f"{n} event" if n == 1 else f"{n} events"
    return StandingNotice(
        events=events,
        reason=None,
        source_receipts=[Receipt(r.observed_at, r.source) for r in rows],
        state="measured",
        observation=f"{found} found in the named queried sources as of {latest}.",
    )


def notice_order(n: NoticeEvent) -> tuple[str, str, bool, str, bytes]:
    """(source, kind, notice_doi with null first, canonical JSON)."""
    doi = n.notice_doi
    return (n.source, n.kind, doi is not None, doi or "", canonical(n))


def _assemble(
    arxiv_id: str,
    as_of_us: int,
    snap: Fact,
    category_snap: Fact | None,
    outbound: list[Observation],
    total_out: int,
    inbound: list[Observation],
    total_in: int,
    heads: list[SourceHead],
    measurements: list[Fact],
) -> Record:
    counts = dict.fromkeys(STATUSES, 0)
    for o in outbound:
        status = o.resolution.status
        counts[status] = counts.get(status, 0) + 1
    d = snap.data
    listed = [
        Measurement(
            m.data.metric, m.observed_at, m.data.query_url, m.data.source, m.data.source_release, m.data.value
        )
        for m in measurements
    ]
    sources = [Receipt(h.observed_at, h.source) for h in sorted(heads)]
    cites = "paper_references, paper_reference_links"
    record = Record(
        as_of=format_as_of(as_of_us),
        caps=Caps(**CAPS),
        context_digest="",  # of the rest but as_of, set below
        coverage=[
            CoverageLane(
                total_out,
                "reference_resolution",
                "Typed states for the displayed outbound observations.",
                len(outbound),
                cites,
                max_ts(o.citation.source_observed_at for o in outbound),
                "measured",
            ),
            CoverageLane(
                len(outbound),
                "standing_notices",
                "One-hop event checks from named stored sources.",
                len(outbound),
                "scholarly_work_events, retraction_status_cache",
                max_ts(s.observed_at for s in sources),
                "measured",
            ),
            CoverageLane(
                total_in,
                "inbound_itemization",
                "Pith citing papers itemized under the disclosed page cap.",
                len(inbound),
                cites,
                max_ts(o.citation.source_observed_at for o in inbound),
                "measured",
            ),
            CoverageLane(
                max(1, len(listed)),
                "external_citation_measurements",
                "A source-named dated measurement, never combined with another source.",
                len(listed),
                "cited_works",
                max_ts(m.observed_at for m in listed),
                "measured",
            ),
        ],
        external_citation_measurements=listed,
        inbound=inbound,
        links=RecordLinks(
            evidence="/evidence",
            html=f"/paper/{arxiv_id}/citation-record",
            integrity=f"/paper/{arxiv_id}/integrity",
            json=f"/paper/{arxiv_id}/citation-record.json",
            paper=f"/paper/{arxiv_id}",
        ),
        outbound=outbound,
        paper=PaperBlock(
            arxiv_id=d.arxiv_id,
            last_updated=d.last_updated,
            latest_version=d.version,
            primary_category=category_snap.data.primary_category if category_snap else None,
            snapshot_observed_at=snap.observed_at,
            submitted_at=d.submitted_at,
            title=d.title,
        ),
        reference_resolution=ReferenceResolution(len(outbound), StateCounts(**counts), total_out),
        refusal=REFUSAL,
        schema=SCHEMA,
        standing_sources=sources,
        thesis=(
            f"As of {thesis_date(as_of_us)}, this Paper Citation Record lists {len(outbound)} of "
            f"{total_out} outbound references and {total_in} inbound Pith citation observations "
            f"for arXiv:{arxiv_id}."
        ),
    )
    return msgspec.structs.replace(record, context_digest=context_digest(record))

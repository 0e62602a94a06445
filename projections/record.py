"""The Paper Citation Record as of T: a pure function of the events a RecordSource hands it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

import msgspec

from ledger.codec import canonical, context_digest, observation_digest
from ledger.errors import NotFound
from ledger.events import STATUSES
from ledger.facts import CheckRow, Fact, SourceHead
from ledger.instants import format_as_of, max_ts, parse_ts, to_datetime

SCHEMA = "pith.paper-citation-record.v1"
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

    record: dict[str, Any]
    seqs: list[int]
    # the events of the inbound observations past the cap also built the record (its count): they are
    # read page by page where needed (integrity report, bundle), never with the record
    inbound_total: int


def _key(f: Fact) -> tuple[int, int]:
    return (f.observed_us, f.seq)


def _latest(facts: Iterable[Fact]) -> dict[Any, Fact]:
    """Group key -> latest fact (greatest observed_at, ties to the later seq)."""
    out: dict[Any, Fact] = {}
    for f in facts:
        k = _group(f)
        cur = out.get(k)
        if cur is None or _key(f) > _key(cur):
            out[k] = f
    return out


def _group(f: Fact) -> Any:
    if f.type in ("citation.observed", "resolution.observed"):
        return (f.type, f.data.observation_id)
    if f.type == "measurement.observed":
        return (f.type, f.data.source, f.data.metric)
    return (f.type, f.data.arxiv_id)


def paper_block(snap: Fact) -> dict[str, Any]:
    """The cited_paper / citing_paper block of a paper.observed fact."""
    d = snap.data
    return {
        "arxiv_id": d.arxiv_id,
        "last_updated": d.last_updated,
        "snapshot_observed_at": snap.observed_at,
        "submitted_at": d.submitted_at,
        "title": d.title,
        "version": d.version,
    }


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

    def cited_work(self) -> Any:
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

    def observation(o: _Obs) -> dict[str, Any]:
        cited_snap = latest_snaps.get(o.cited) if o.cited else None
        citing_snap = latest_snaps.get(o.citing)
        work = o.cited_work()
        res = o.res
        obs: dict[str, Any] = {
            "citation": {
                "cited_paper": paper_block(cited_snap) if cited_snap else None,
                "cited_work": msgspec.to_builtins(work),
                "citing_paper": paper_block(citing_snap) if citing_snap else None,
                "reference_index": o.cit.data.reference_index,
                "source": o.cit.data.source,
                "source_observed_at": o.cit.observed_at,
            },
            "links": {"citing_paper": f"/paper/{o.citing}"},
            "observation_id": o.oid,
            "resolution": (
                {"observed_at": None, "resolver_source": None, "status": "pending"}
                if res is None
                else {
                    "observed_at": res.observed_at,
                    "resolver_source": res.data.resolver_source,
                    "status": res.data.status,
                }
            ),
            "standing_notice": _standing(work, checks, used),
        }
        if cited_snap:
            obs["links"]["cited_paper"] = f"/paper/{o.cited}"
            used.add(cited_snap.seq)
        if citing_snap:
            used.add(citing_snap.seq)
        obs["observation_digest"] = observation_digest(obs)
        return obs

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


def _standing(work: Any, checks: dict[tuple[str, int], list[CheckRow]], used: set[int]) -> dict:
    if work is None or work.work_id is None:
        return {"events": [], "reason": _UNAVAILABLE_LINK, "source_receipts": [], "state": "unavailable"}
    rows = sorted(checks.get((work.work_id, parse_ts(work.snapshot_observed_at)), []), key=lambda r: r.source)
    if not rows:
        return {"events": [], "reason": _NOT_QUERIED, "source_receipts": [], "state": "unavailable"}
    events = []
    for r in rows:
        used.add(r.seq)
        for n in r.notices:
            if n["work_id"] == work.work_id:
                events.append({**n, "observed_at": r.observed_at, "source": r.source})
    events.sort(key=notice_order)
    latest = max_ts(r.observed_at for r in rows)
    n = len(events)
    found = "No event" if n == 0 else f"{n} event" if n == 1 else f"{n} events"
    return {
        "events": events,
        "observation": f"{found} found in the named queried sources as of {latest}.",
        "reason": None,
        "source_receipts": [{"observed_at": r.observed_at, "source": r.source} for r in rows],
        "state": "measured",
    }


def notice_order(n: dict[str, Any]) -> tuple[Any, ...]:
    """(source, kind, notice_doi with null first, canonical JSON)."""
    doi = n.get("notice_doi")
    return (n.get("source", ""), n["kind"], doi is not None, doi or "", canonical(n))


def _assemble(
    arxiv_id: str,
    as_of_us: int,
    snap: Fact,
    category_snap: Fact | None,
    outbound: list[dict[str, Any]],
    total_out: int,
    inbound: list[dict[str, Any]],
    total_in: int,
    heads: list[SourceHead],
    measurements: list[Fact],
) -> dict[str, Any]:
    counts = dict.fromkeys(STATUSES, 0)
    for o in outbound:
        status = o["resolution"]["status"]
        counts[status] = counts.get(status, 0) + 1
    if counts.get("pending") == 0:
        del counts["pending"]
    d = snap.data
    listed = [
        {
            "metric": m.data.metric,
            "observed_at": m.observed_at,
            "query_url": m.data.query_url,
            "source": m.data.source,
            "source_release": m.data.source_release,
            "value": m.data.value,
        }
        for m in measurements
    ]
    sources = [{"observed_at": h.observed_at, "source": h.source} for h in sorted(heads)]
    cites = "paper_references, paper_reference_links"
    record: dict[str, Any] = {
        "caps": dict(CAPS),
        "coverage": [
            _lane(
                "reference_resolution",
                total_out,
                len(outbound),
                cites,
                "Typed states for the displayed outbound observations.",
                max_ts(o["citation"]["source_observed_at"] for o in outbound),
            ),
            _lane(
                "standing_notices",
                len(outbound),
                len(outbound),
                "scholarly_work_events, retraction_status_cache",
                "One-hop event checks from named stored sources.",
                max_ts(s["observed_at"] for s in sources),
            ),
            _lane(
                "inbound_itemization",
                total_in,
                len(inbound),
                cites,
                "Pith citing papers itemized under the disclosed page cap.",
                max_ts(o["citation"]["source_observed_at"] for o in inbound),
            ),
            _lane(
                "external_citation_measurements",
                max(1, len(listed)),
                len(listed),
                "cited_works",
                "A source-named dated measurement, never combined with another source.",
                max_ts(m["observed_at"] for m in listed),
            ),
        ],
        "external_citation_measurements": listed,
        "inbound": inbound,
        "links": {
            "evidence": "/evidence",
            "html": f"/paper/{arxiv_id}/citation-record",
            "integrity": f"/paper/{arxiv_id}/integrity",
            "json": f"/paper/{arxiv_id}/citation-record.json",
            "paper": f"/paper/{arxiv_id}",
        },
        "outbound": outbound,
        "paper": {
            "arxiv_id": d.arxiv_id,
            "last_updated": d.last_updated,
            "latest_version": d.version,
            "primary_category": category_snap.data.primary_category if category_snap else None,
            "snapshot_observed_at": snap.observed_at,
            "submitted_at": d.submitted_at,
            "title": d.title,
        },
        "reference_resolution": {
            "displayed": len(outbound),
            "state_counts": counts,
            "total_outbound_references": total_out,
        },
        "refusal": REFUSAL,
        "schema": SCHEMA,
        "standing_sources": sources,
        "thesis": (
            f"As of {thesis_date(as_of_us)}, this Paper Citation Record lists {len(outbound)} of "
            f"{total_out} outbound references and {total_in} inbound Pith citation observations "
            f"for arXiv:{arxiv_id}."
        ),
    }
    record["context_digest"] = context_digest(record)
    record["as_of"] = format_as_of(as_of_us)
    return record


def _lane(
    lane: str, denominator: int, observed: int, source: str, note: str, at: str | None
) -> dict[str, Any]:
    return {
        "denominator": denominator,
        "lane": lane,
        "note": note,
        "records_observed": observed,
        "source": source,
        "source_observed_at": at,
        "state": "measured",
    }

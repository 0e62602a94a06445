"""How an observation was resolved, as a person or a client reads it: its latest resolution, the
evidence it carries, and the catalogue event it used, each with the links that prove it; and whether
that evidence names the work it resolved to: the catalogue event it points at must be a catalogue event
(a `work.observed`, or a `paper.observed` for an arXiv paper) appended before it, of the same DOI (or
arXiv id) as its `cited_work`. A resolution that points at an unrelated event passes the chain's checks
(its bytes are what was appended) and fails this one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import msgspec

from ledger.model.claims import RESOLVER_PREFIX
from ledger.model.codec import decode_data
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import NotFound
from ledger.model.events import StoredEvent
from ledger.model.instants import format_as_of
from ledger.model.jsonvalue import JsonObject
from projections.record import observations
from service.ledger import Ledger, WriterRow
from service.resolver.run import PERSON_PREFIX
from service.screen import event_links

WRITERS_NOTE = (
    "writer: the token (its sha256, as the token file holds it) or the CLI user the server recorded for "
    "the write that appended each event, kept beside the chain in the same transaction; it is not part "
    "of the hashed events and not proven by the chain or the proofs (an operator with access to the "
    "database can edit it); none: written before the ledger kept writers, or by a program that named none"
)


def resolution_view(
    ledger: Ledger, arxiv_id: str, observation_id: str, as_of_us: int | None = None
) -> JsonObject:
    """The latest resolution (as of T, default now) of one of this paper's outbound observations, with
    its evidence and catalogue event; NotFound when the paper has no such observation."""
    t = ledger.clock.now_us() if as_of_us is None else as_of_us
    with ledger.store.snapshot(t) as reader:
        obs = observations(reader.paper_stream(arxiv_id)).get(observation_id)
    if obs is None or obs.citing != arxiv_id:
        raise NotFound(
            f"paper {arxiv_id} has no outbound observation {observation_id!r} as of {format_as_of(t)}",
            details={"arxiv_id": arxiv_id, "observation_id": observation_id},
        )
    out: JsonObject = {
        "arxiv_id": arxiv_id,
        "observation_id": observation_id,
        "reference_index": obs.cit.data.reference_index,
        "as_of": format_as_of(t),
        "resolution": None,
        "evidence": None,
        "catalogue_event": None,
        "writer": None,
        "writers_note": WRITERS_NOTE,
        "evidence_check": None,
        "links": {"record": f"/paper/{arxiv_id}/citation-record?as_of={format_as_of(t)}"},
    }
    if obs.res is None:
        return out
    res = obs.res
    data = res.data
    source = data.resolver_source or ""
    seqs = [res.seq]
    evidence = data.evidence
    catalogue_seq = None if evidence is msgspec.UNSET else evidence.catalogue_seq
    if catalogue_seq is not None:
        seqs.append(catalogue_seq)
    envelopes = {e.seq: e for e in ledger.store.envelopes(sorted(set(seqs)))}
    own = envelopes.get(res.seq)
    out["resolution"] = {
        "seq": res.seq,
        "hash": None if own is None else own.hash,
        "observed_at": res.observed_at,
        "status": data.status,
        "resolver_source": data.resolver_source,
        "by_person": source.removeprefix(PERSON_PREFIX) if source.startswith(PERSON_PREFIX) else None,
        "cited_work": msgspec.to_builtins(data.cited_work),
        "cited_arxiv_id": data.cited_arxiv_id,
        "links": {**event_links(res.seq)},
    }
    if evidence is not msgspec.UNSET:
        out["evidence"] = msgspec.to_builtins(evidence)
    writers = ledger.store.writers.writers_of(envelopes.keys())
    out["writer"] = writer_json(writers.get(res.seq))
    if own is not None:
        out["evidence_check"] = check_resolution(own, envelopes).to_dict()
    used = envelopes.get(catalogue_seq) if catalogue_seq is not None else None
    if used is not None:
        out["catalogue_event"] = {
            "seq": used.seq,
            "type": used.type,
            "stream": used.stream,
            "observed_at": used.observed_at,
            "hash": used.hash,
            "links": {**event_links(used.seq)},
            "writer": writer_json(writers.get(used.seq)),
        }
    return out


def writer_json(row: WriterRow | None) -> JsonObject | None:
    """Who made the write that appended an event, as recorded outside the chain (None: not recorded)."""
    if row is None:
        return None
    return {
        "writer": row.writer,
        "via": row.via,
        "write": {"first_seq": row.first_seq, "last_seq": row.last_seq},
    }


def resolution_href(arxiv_id: str, observation_id: str) -> str:
    """Where an observation's resolution and its evidence are served."""
    return f"/paper/{arxiv_id}/observations/{observation_id}/resolution"


def catalogue_seqs(envelopes: Iterable[StoredEvent]) -> list[int]:
    """The catalogue events the resolutions among these envelopes used (their evidence's seq), sorted."""
    out: set[int] = set()
    for e in envelopes:
        if e.type == "resolution.observed" and b'"evidence"' in e.data:
            evidence = decode_data(e.type, e.data).evidence
            if evidence is not msgspec.UNSET and evidence.catalogue_seq is not None:
                out.add(evidence.catalogue_seq)
    return sorted(out)


RESOLUTION = "resolution.observed"
_CATALOGUE = ("work.observed", "paper.observed")
# the statuses for which the resolver always names the catalogue event it matched
_MATCHED = ("verified_exact", "verified_fuzzy", "metadata_mismatch")


class EvidenceCheck(NamedTuple):
    """One resolution checked: which catalogue event its evidence names, and the mismatch if any."""

    seq: int
    observation_id: str
    resolver_source: str | None
    catalogue_seq: int | None
    mismatch: str | None  # None: the evidence names the resolved work (or names no event, rightly)

    def to_dict(self) -> JsonObject:
        """As the integrity report and the resolution view give it."""
        return {**self._asdict(), "names_work": self.mismatch is None}


def check_resolution(resolution: StoredEvent, catalogue: Mapping[int, StoredEvent]) -> EvidenceCheck:
    """Check one stored resolution against the catalogue events it may name (by seq; an absent seq is
    one the ledger does not hold)."""
    data = decode_data(resolution.type, resolution.data)
    evidence = data.evidence
    at = None if evidence is msgspec.UNSET else evidence.catalogue_seq
    result = EvidenceCheck(resolution.seq, data.observation_id, data.resolver_source, at, None)
    if at is None:
        own = (data.resolver_source or "").startswith(RESOLVER_PREFIX)
        if own and data.status in _MATCHED:
            why = (
                f"it claims the ledger's resolver and status {data.status} but its evidence names no "
                "catalogue event"
            )
            return result._replace(mismatch=why)
        return result
    used = catalogue.get(at)
    if used is None:
        return result._replace(mismatch=f"its evidence names seq {at}, which this ledger does not hold")
    if used.seq >= resolution.seq:
        return result._replace(mismatch=f"its evidence names seq {at}, appended after the resolution")
    if used.type not in _CATALOGUE:
        return result._replace(mismatch=f"its evidence names seq {at}, a {used.type}, not a catalogue event")
    cited = data.cited_work
    if cited is None:
        return result._replace(mismatch=f"its evidence names seq {at} but it resolved to no work")
    return result._replace(mismatch=_differs(cited.doi, cited.arxiv_id, used))


def _differs(doi: str | None, arxiv_id: str | None, used: StoredEvent) -> str | None:
    """How the cited work's DOI or arXiv id differs from the catalogue event's, or None."""
    work = msgspec.json.decode(used.data)
    their_doi, their_arxiv = work.get("doi"), work.get("arxiv_id")
    at = f"seq {used.seq} ({used.type}"
    if used.type == "paper.observed":
        # an arXiv paper: named by its id, and by its DataCite DOI when the cited work gives a DOI
        if arxiv_key(arxiv_id) != arxiv_key(their_arxiv) or (
            doi is not None and doi_key(doi) != arxiv_key(their_arxiv)
        ):
            return (
                f"{at} of arXiv {their_arxiv}) does not name the resolved work (arXiv {arxiv_id}, DOI {doi})"
            )
        return None
    if doi is not None:
        if doi_key(doi) != doi_key(their_doi):
            return f"{at} of DOI {their_doi}) does not name the resolved work's DOI {doi}"
        return None
    if arxiv_id is None or arxiv_key(arxiv_id) != arxiv_key(their_arxiv):
        theirs = f"{at} of DOI {their_doi}, arXiv {their_arxiv})"
        return f"{theirs} does not name the resolved work (arXiv {arxiv_id})"
    return None


def check_resolutions(
    envelopes: list[StoredEvent], catalogue: Mapping[int, StoredEvent]
) -> list[EvidenceCheck]:
    """Each resolution among `envelopes`, checked against the catalogue events by seq."""
    return [check_resolution(e, catalogue) for e in envelopes if e.type == RESOLUTION]

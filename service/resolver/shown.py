"""How an observation was resolved, as a person or a client reads it: its latest resolution, the
evidence it carries, and the catalogue event it used, each with the links that prove it."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ledger.model.codec import decode_data
from ledger.model.errors import NotFound
from ledger.model.events import StoredEvent
from ledger.model.instants import format_as_of
from ledger.model.jsonvalue import JsonObject
from projections.record import observations
from service.ledger import Ledger, WriterRow
from service.resolver.evidence_check import check_resolution
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

"""The integrity report: what was verified for one record, recomputed from its own events, and no more."""

from __future__ import annotations

import base64
from typing import NotRequired, TypedDict
from urllib.parse import urlencode

from api.common import head_json
from ledger.model.codec import canonical
from ledger.model.errors import ChainBroken, NotFound
from ledger.model.events import StoredEvent
from ledger.model.facts import Head, ScrubPass
from ledger.model.instants import format_as_of
from ledger.model.jsonvalue import Json, JsonIn, JsonObject
from ledger.model.record_types import Record
from ledger.tlog.chain import GENESIS, envelope_body, link_hash
from ledger.tlog.checkpoint import CheckpointRefused, NotSigned, unsigned_checkpoint
from ledger.tlog.merkle import ProofError, leaf_hash, verify_inclusion
from ledger.tlog.merkle_store import BLOCK, STORED_LEVEL
from projections.diff import as_json
from projections.memory import MemoryReader
from projections.record import build_record, inbound_observations
from service.ledger import Chain, Ledger
from service.ops.scrub import PassLog
from service.proofs.bundle import prove_seqs
from service.resolver.shown import WRITERS_NOTE, catalogue_seqs, check_resolutions, writer_json

# hidden inbound observations proven per page past the first (2 events each: a page stays near 3 MB)
PAGE_OBSERVATIONS = 1000


class Problem(TypedDict):
    """A break this answer found, at the seq a walk from seq 1 would name."""

    seq: int
    reason: str


class ListedEvent(TypedDict):
    """One event behind the record, re-hashed for this answer, and who wrote it."""

    seq: int
    type: str
    stream: str
    event_id: str
    observed_at: str
    recorded_at: str
    prev_hash: str
    hash: str
    hash_ok: bool
    linked: bool
    proof_ok: bool | None  # None: no proof to check
    writer: NotRequired[JsonObject | None]


class Proof(TypedDict):
    """An event's inclusion proof, as service.proofs gives it."""

    seq: int
    leaf_index: int
    tree_size: int
    inclusion_path: list[str]


class Proven(TypedDict):
    """The proofs of the listed events against one signed checkpoint (none: no checkpoint)."""

    proofs: list[Proof]
    checkpoint: str | None
    key: str | None


class Page(TypedDict):
    page: int
    pages: int
    next: str | None
    proves: str


class DigestCheck(TypedDict):
    ledger: str
    recomputed: str
    match: bool


class ObservationCheck(TypedDict):
    path: str
    observation_id: str
    ledger: str
    recomputed: str | None
    match: bool


class Rebuilt(TypedDict):
    """Page 1: the record rebuilt from the listed events, its digests compared with the ledger's."""

    context_digest: DigestCheck
    observations_checked: int
    observations_matching: int
    observations: list[ObservationCheck]
    record_identical: bool


class InboundCheck(TypedDict):
    observation_id: str
    inbound: bool


class HiddenInbound(TypedDict):
    """Pages 2..: each listed observation recomputed as inbound to the paper, or not."""

    observations_expected: int
    observations_inbound: int
    observations: list[InboundCheck]


class RecordPart(TypedDict):
    """The record the report is about: the head it was read at, its digest, the events that built it."""

    head: JsonObject
    context_digest: str
    events_used: int
    links: JsonIn


class Resolutions(TypedDict):
    ok: bool
    checked: list[JsonObject]
    how: str


class IntegrityAnswer(TypedDict):
    """The integrity report of one record (docs.py's IntegrityReport documents it)."""

    arxiv_id: str
    as_of: str
    known_at: str | None
    ok: bool
    first_bad_seq: int | None
    problems: list[Problem]
    chain: JsonObject
    record: RecordPart
    page: Page
    counts: JsonObject
    events: list[ListedEvent]
    catalogue_events: list[ListedEvent]
    recomputed: Rebuilt | HiddenInbound
    resolutions: Resolutions
    writers_note: str
    checkpoint: str | None
    key: str | None
    proofs: list[Proof]
    proofs_note: str | None
    method: str


def integrity_report(
    ledger: Ledger,
    arxiv_id: str,
    as_of_us: int,
    known_us: int | None,
    *,
    page: int = 1,
    passes: PassLog,
    read_only: bool = False,
    banner: Chain | None = None,
) -> tuple[IntegrityAnswer, Head, ScrubPass | None]:
    """The chain status, the events behind the record, and its digests rebuilt from those events.

    Page 1 proves what the record shows; pages 2.. prove the inbound observations it counts but does
    not show, PAGE_OBSERVATIONS at a time. A read-only server writes nothing: no resume point, no pass
    (kept in memory), no key, no signed checkpoint, no Merkle node; its proofs are against the last
    signed checkpoint, if it covers them. `banner()` (the last full walk, when broken) is read with the
    record.
    """
    with ledger.evidence(arxiv_id, as_of_us, known_us, chain=banner) as ev:
        pages = 1 + -(-ev.hidden // PAGE_OBSERVATIONS)
        if page > pages:
            raise NotFound(
                f"page {page}: the integrity report of arXiv:{arxiv_id} as of {format_as_of(as_of_us)} "
                f"has {pages} page{'s' if pages > 1 else ''}",
                details={"page": page, "pages": pages},
            )
        offset = (page - 2) * PAGE_OBSERVATIONS
        seqs = ev.built.seqs if page == 1 else ev.hidden_seqs(offset, PAGE_OBSERVATIONS)
        envelopes = ledger.records.envelopes(seqs)  # in the same read as the record
        # the catalogue events the record's resolutions matched: proven too, though no part of the record
        used = [s for s in catalogue_seqs(envelopes) if s not in set(seqs)] if page == 1 else []
        catalogue = ledger.records.envelopes(used)
        # a seq the ledger does not hold (0, past the head) has nothing to prove: the evidence check
        # below names it as the resolution's mismatch
        used = [e.seq for e in catalogue]
        record, head, total, broken = ev.built.record, ev.head, ev.built.inbound_total, ev.broken
    shown = len(record.inbound)
    if page == 1:
        # Rebuild from exactly the listed envelopes, with no database: if the record depended on
        # anything not listed, or the projection disagreed with itself, a digest below would differ.
        # Only the count of inbound observations not shown is taken from the ledger (see "counts").
        reader = MemoryReader(envelopes, as_of_us, known_us, inbound_total=total if total > shown else None)
        rebuilt = _compare_digests(record, build_record(reader, arxiv_id, as_of_us).record)
        recomputed_ok = (
            rebuilt["context_digest"]["match"]
            and rebuilt["observations_matching"] == rebuilt["observations_checked"]
            and rebuilt["record_identical"]
        )
        recomputed: Rebuilt | HiddenInbound = rebuilt
    else:
        expected = min(PAGE_OBSERVATIONS, total - shown - offset)
        hidden = _hidden_inbound(envelopes, arxiv_id, as_of_us, known_us, expected)
        recomputed_ok = hidden["observations_inbound"] == hidden["observations_expected"]
        recomputed = hidden
    # Resume from the last verified point (a full re-walk per request would grow with the ledger);
    # what it does not re-hash is vouched for by the last recorded full walk, which it names.
    chain = ledger.ops.chain_status(passes, remember=not read_only)
    proven, proofs_note, proof_break = _proofs(ledger, sorted({*seqs, *used}), read_only)
    before = _hashes_before(ledger, envelopes)
    events = [_event(e, before, proven) for e in envelopes]
    before_used = _hashes_before(ledger, catalogue)
    catalogue_events = [_event(e, before_used, proven) for e in catalogue]
    listed = [*events, *catalogue_events]
    writers = ledger.records.writers_of(e["seq"] for e in listed)
    for e in listed:
        e["writer"] = writer_json(writers.get(e["seq"]))
    # each resolution's evidence names the work it resolved to (page 1: the catalogue events are read)
    by_seq = {e.seq: e for e in (*envelopes, *catalogue)}
    checks = check_resolutions(envelopes, by_seq) if page == 1 else []
    checked = [c.to_dict() for c in checks]
    for c, check in zip(checked, checks, strict=True):
        c["writer"] = writer_json(writers.get(check.seq))
    resolutions_ok = all(c["names_work"] for c in checked)
    problems = [Problem(seq=e["seq"], reason=_EVENT_BREAK) for e in listed if not e["hash_ok"]]
    problems += [
        Problem(seq=e["seq"], reason=_LINK_BREAK) for e in listed if e["hash_ok"] and not e["linked"]
    ]
    named = {p["seq"] for p in problems}
    located = _locate(ledger, [e["seq"] for e in listed if e["proof_ok"] is False], head)
    problems += [p for p in located if p["seq"] not in named]
    if proof_break is not None:  # the ledger refused to sign: it no longer extends its last checkpoint
        problems.append(Problem(seq=proof_break, reason=proofs_note or ""))
    bad = [p["seq"] for p in problems] + ([chain["first_bad_seq"]] if chain["first_bad_seq"] else [])
    report: IntegrityAnswer = {
        "arxiv_id": arxiv_id,
        "as_of": record.as_of,
        "known_at": None if known_us is None else format_as_of(known_us),
        "ok": chain["ok"] and not bad and recomputed_ok and resolutions_ok,
        "first_bad_seq": min(bad) if bad else None,
        # what this answer found beyond the chain walk, each at the seq a walk from seq 1 would name
        "problems": sorted(problems, key=lambda p: (p["seq"], p["reason"])),
        "chain": chain,
        "record": RecordPart(
            head=head_json(head),
            context_digest=record.context_digest,
            events_used=len(envelopes),
            links=as_json(record.links),
        ),
        "page": _page(record, known_us, page, pages),
        "counts": _counts(total, shown, pages),
        "events": events,
        "catalogue_events": catalogue_events,
        "recomputed": recomputed,
        # each resolution's evidence against the catalogue event it names, and who wrote it
        "resolutions": {"ok": resolutions_ok, "checked": checked, "how": _RESOLUTIONS_HOW},
        "writers_note": WRITERS_NOTE,
        "checkpoint": proven["checkpoint"],
        "key": proven["key"],
        "proofs": proven["proofs"],
        "proofs_note": proofs_note,
        "method": _method(chain, proven, proofs_note, page),
    }
    return report, head, broken


def _page(record: Record, known_us: int | None, page: int, pages: int) -> Page:
    """Which page this is, and the link to the next (same as_of and known_at: the same record)."""
    query = {"as_of": record.as_of} | ({} if known_us is None else {"known_at": format_as_of(known_us)})
    link = f"{record.links.integrity}?{urlencode(query)}&page="
    return {
        "page": page,
        "pages": pages,
        "next": f"{link}{page + 1}" if page < pages else None,
        "proves": "what the record shows (paper, outbound, the first inbound, checks, measurements)"
        if page == 1
        else f"inbound observations {(page - 2) * PAGE_OBSERVATIONS + 1}.. of those counted but not shown",
    }


def _counts(total: int, shown: int, pages: int) -> JsonObject:
    """How the record's inbound count was obtained, and where the rest of its evidence is."""
    if total == shown:
        how = "every inbound observation is shown: the count is recomputed from the listed events"
    else:
        how = (
            f"the {total} inbound observations were counted by the database over inbound_spans (when each "
            "observation pointed at which paper, by observed and by recorded time: kept by every append, "
            "rebuilt from the events and compared by ledger verify); page 1 rebuilds the record from its "
            f"listed events with that count; pages 2..{pages} prove the {total - shown} not shown, "
            f"{PAGE_OBSERVATIONS} per page, each recomputed as inbound as of T from its own events"
        )
    return {"inbound": {"total": total, "shown": shown, "not_shown": total - shown, "how": how}}


def _hidden_inbound(
    envelopes: list[StoredEvent], arxiv_id: str, as_of_us: int, known_us: int | None, expected: int
) -> HiddenInbound:
    """Each listed observation recomputed from its own events: inbound to the paper as of T and K."""
    reader = MemoryReader(envelopes, as_of_us, known_us)
    total, _ = reader.inbound(arxiv_id, 0)
    facts = [f for _, f, _ in reader.facts]
    found = {o.oid for o in inbound_observations(facts, arxiv_id)}
    listed = sorted({f.data.observation_id for f in facts if f.type == "citation.observed"})
    return {
        "observations_expected": expected,
        "observations_inbound": total,
        "observations": [InboundCheck(observation_id=o, inbound=o in found) for o in listed],
    }


def _proofs(ledger: Ledger, seqs: list[int], read_only: bool) -> tuple[Proven, str | None, int | None]:
    """The proofs, why there are none (if so), and the seq a refusal to sign names (a broken ledger)."""
    none = Proven(proofs=[], checkpoint=None, key=None)
    try:
        proven = prove_seqs(ledger, seqs, sign=not read_only, stored_above=True)
    except NotSigned as e:
        return none, e.message, None
    except ChainBroken as e:
        return none, e.message, e.seq
    except CheckpointRefused as e:
        return none, e.message, None
    return Proven(proofs=proven["proofs"], checkpoint=proven["checkpoint"], key=proven["key"]), None, None


_RECOMPUTED = (
    "the record rebuilt in memory from only the listed events and its digests compared with the ledger's "
    "answer",
    "each listed observation's latest citation and resolution as of T rebuilt in memory from the listed "
    "events and checked to point at this paper",
)
_RESOLUTIONS_HOW = (
    "each resolution whose evidence names a catalogue event: that event must be held by the ledger, "
    "appended before the resolution, a work.observed (or the paper.observed of an arXiv paper) of the "
    "same DOI (or arXiv id) as the resolution's cited_work; a resolution claiming the ledger's own "
    "resolver with a matched status must name one"
)
_EVENT_BREAK = "stored bytes do not match the stored hash (the event was altered)"
_LINK_BREAK = "prev_hash does not match the previous event's hash (reordered or removed events)"


def _hashes_before(ledger: Ledger, envelopes: list[StoredEvent]) -> dict[int, str | None]:
    """The stored hash of the event before each listed one (GENESIS before seq 1; None: no such row),
    in one read of the predecessors not listed themselves."""
    mine = {e.seq: e for e in envelopes}
    wanted = sorted({s - 1 for s in mine if s > 1} - set(mine))
    near = {**{e.seq: e for e in ledger.records.envelopes(wanted)}, **mine}
    return {s: GENESIS if s == 1 else (near[s - 1].hash if s - 1 in near else None) for s in mine}


def _locate(ledger: Ledger, failed: list[int], head: Head) -> list[Problem]:
    """Where the chain breaks near events whose inclusion proof failed: the lower levels of a proof are
    recomputed from the other events of its 16-leaf block, so re-hash those (and the link into the next
    block) in seq order and name the first break, as a walk from seq 1 would."""
    found = []
    for block in sorted({(s - 1) >> STORED_LEVEL for s in failed}):
        first, last = (block << STORED_LEVEL) + 1, min(((block + 1) << STORED_LEVEL) + 1, head.seq)
        rows = {e.seq: e for e in ledger.records.envelopes(list(range(max(first - 1, 1), last + 1)))}
        prev = GENESIS if first == 1 else rows[first - 1].hash if first - 1 in rows else None
        where = Problem(
            seq=first,
            reason=f"the events of seqs {first}..{min(last, first + BLOCK - 1)} no longer hash to the "
            "Merkle tree the checkpoint signed (a stored Merkle node or the whole block was rewritten)",
        )
        for seq in range(first, last + 1):
            e = rows.get(seq)
            if e is None:
                where = Problem(seq=seq, reason="the event is missing: the sequence has a gap")
                break
            if prev is not None and e.prev_hash != prev:
                where = Problem(seq=seq, reason=_LINK_BREAK)
                break
            if link_hash(e.prev_hash, envelope_body(e)) != e.hash:
                where = Problem(seq=seq, reason=_EVENT_BREAK)
                break
            prev = e.hash
        where["reason"] += " (found re-hashing the block of an event whose inclusion proof failed)"
        found.append(where)
    return found


def _event(e: StoredEvent, before: dict[int, str | None], proven: Proven) -> ListedEvent:
    # re-hashed from the envelope exactly as /evidence serves it, never taken from the stored hash
    body = envelope_body(e)
    return {
        "seq": e.seq,
        "type": e.type,
        "stream": e.stream,
        "event_id": e.event_id,
        "observed_at": e.observed_at,
        "recorded_at": e.recorded_at,
        "prev_hash": e.prev_hash,
        "hash": e.hash,
        "hash_ok": link_hash(e.prev_hash, body) == e.hash,
        "linked": e.prev_hash == before[e.seq],
        "proof_ok": _proof_ok(e.seq, leaf_hash(body), proven),
    }


def _proof_ok(seq: int, leaf: bytes, proven: Proven) -> bool | None:
    """Whether the event's inclusion proof leads from its served bytes to the checkpoint root (None:
    no proof to check)."""
    if proven["checkpoint"] is None:
        return None
    proof = next((p for p in proven["proofs"] if p["seq"] == seq), None)
    if proof is None:
        return False
    cp = unsigned_checkpoint(proven["checkpoint"])
    try:
        path = [base64.b64decode(h) for h in proof["inclusion_path"]]
        verify_inclusion(seq - 1, proof["tree_size"], leaf, path, cp.root)
    except ProofError:
        return False
    return True


def _method(chain: JsonObject, proven: Proven, proofs_note: str | None, page: int) -> str:
    """What was done for this answer, in words: no more than what the fields above show."""
    walked = _part(chain["walked"])
    now = "no event" if walked is None else f"seqs {walked['from']}..{walked['to']}"
    trusted = _part(chain["trusted"])
    last = _part(chain["last_full_walk"]) or {}
    prefix = (
        ""
        if trusted is None
        else f"; seqs 1..{trusted['to']} were not re-hashed for this answer: seq {trusted['to']} still "
        f"has the hash remembered at {trusted['point_saved_at']}, and the last full walk from seq 1 "
        f"({last['by']}, finished at {last['finished_at']}) found the chain "
        + ("whole" if last["ok"] else f"broken at seq {last['first_bad_seq']}")
    )
    if proven["checkpoint"] is None:
        proofs = f"proofs: none ({proofs_note})"
    else:
        size = unsigned_checkpoint(proven["checkpoint"]).size
        proofs = (
            "proofs: each listed event's leaf hash recomputed from the same bytes and its RFC 6962 "
            f"inclusion proof checked against the signed checkpoint of size {size} (C2SP signed note, "
            "Ed25519, key below)"
        )
    return (
        f"chain: {now} re-hashed in seq order for this answer (ledger verify"
        + (f", resumed after seq {chain['resumed_from']}" if chain["resumed_from"] else ", from seq 1")
        + f"){prefix}; events: each listed event re-hashed from its envelope as /evidence serves it, and "
        f"its prev_hash compared with the stored hash before it; recomputed: {_RECOMPUTED[page > 1]}; "
        f"{proofs}"
    )


def _part(value: Json) -> JsonObject | None:
    """A part of the chain status that is an object or null (a walk, the trusted prefix)."""
    return value if isinstance(value, dict) else None


def _compare_digests(ledger_record: Record, rebuilt: Record) -> Rebuilt:
    mine = {o.observation_id: o.observation_digest for o in (*rebuilt.outbound, *rebuilt.inbound)}
    observations = []
    for lane, items in (("outbound", ledger_record.outbound), ("inbound", ledger_record.inbound)):
        for i, o in enumerate(items):
            again = mine.get(o.observation_id)
            observations.append(
                ObservationCheck(
                    path=f"{lane}[{i}]",
                    observation_id=o.observation_id,
                    ledger=o.observation_digest,
                    recomputed=again,
                    match=again == o.observation_digest,
                )
            )
    return {
        "context_digest": {
            "ledger": ledger_record.context_digest,
            "recomputed": rebuilt.context_digest,
            "match": ledger_record.context_digest == rebuilt.context_digest,
        },
        "observations_checked": len(observations),
        "observations_matching": sum(o["match"] for o in observations),
        "observations": observations,
        "record_identical": canonical(ledger_record) == canonical(rebuilt),
    }

"""The in-memory bundle check as it was before bundles streamed (service/bundle.py at d809a76), kept as
the oracle the streamed check (service/bundle_check.py) must agree with, problem for problem; and the
whole bundle built as one value in memory, the oracle of the streamed writer (open_bundle)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from ledger.model.codec import canonical, decode_data, envelope_json
from ledger.model.errors import NotFound
from ledger.model.events import StoredEvent
from ledger.model.instants import format_as_of, parse_ts
from ledger.tlog import merkle_store
from ledger.tlog.chain import envelope_body, link_hash
from ledger.tlog.checkpoint import Checkpoint, NoteError, Verifier, open_checkpoint, unsigned_checkpoint
from ledger.tlog.merkle import ProofError, leaf_hash, verify_inclusion
from projections.memory import MemoryReader
from projections.record import build_record
from service.ledger import Ledger
from service.proofs.bundle import SCHEMA, prove_seqs
from service.proofs.bundle_check import BundleReport, _digests, compare_record  # the same rules, not a copy


def record_evidence(
    ledger: Ledger, arxiv_id: str, as_of_us: int | None = None, known_us: int | None = None
) -> dict[str, Any]:
    """The whole bundle as one value in memory (small records); open_bundle must stream the same bytes."""
    with ledger.evidence(arxiv_id, as_of_us, known_us) as ev:
        record, seqs = ev.built.record, ev.all_seqs()
    return {
        "schema": SCHEMA,
        "record": record,
        "known_at": None if known_us is None else format_as_of(known_us),
        "events": [envelope_json(e) for e in ledger.store.envelopes(seqs)],
        **prove_seqs(ledger, seqs),
    }


class _Proof(msgspec.Struct, forbid_unknown_fields=True):
    seq: int
    leaf_index: int
    tree_size: int
    inclusion_path: list[str]


class _Bundle(msgspec.Struct, forbid_unknown_fields=True):
    schema: str
    record: dict[str, Any]
    known_at: str | None
    events: list[StoredEvent[msgspec.Raw]]
    proofs: list[_Proof]
    checkpoint: str
    key: str


def check_bundle_in_memory(raw: bytes, pinned: Verifier) -> BundleReport:
    """Check an evidence bundle against a pinned key, with no database: names every failure."""
    try:
        bundle = msgspec.json.decode(raw, type=_Bundle)
    except msgspec.DecodeError as e:
        return BundleReport(False, [f"not an evidence bundle: {e}"], "", [])
    problems: list[str] = []
    notes: list[str] = []
    if bundle.schema != SCHEMA:
        problems.append(f"bundle schema is {bundle.schema!r}, expected {SCHEMA!r}")
    if bundle.key.strip() != pinned.vkey:
        notes.append(f"the bundle names the key {bundle.key.strip()!r}; checked with the pinned key instead")
    checkpoint = _checkpoint(bundle.checkpoint, pinned, problems)
    events, leaves = _events(bundle.events, problems)
    _proofs(bundle.proofs, leaves, checkpoint, problems)
    digests = _rebuild(bundle, events, problems)
    if problems:
        return BundleReport(False, problems, "", notes)
    assert checkpoint is not None
    record = bundle.record
    known = f" known at {bundle.known_at}" if bundle.known_at else ""
    summary = (
        f"OK: arXiv:{record['paper']['arxiv_id']} as of {record['as_of']}{known}: the record was rebuilt "
        f"byte for byte from its {len(events)} events; each event's hash was recomputed and its inclusion "
        f"proof leads to checkpoint {checkpoint.origin} of size {checkpoint.size} (root "
        f"{merkle_store.b64(checkpoint.root)}), signed by {pinned.name}+{pinned.hash.hex()}; "
        f"{digests} observation digests and the context digest recomputed."
    )
    return BundleReport(True, [], summary, notes)


def _checkpoint(note: str, pinned: Verifier, problems: list[str]) -> Checkpoint | None:
    try:
        return open_checkpoint(note, pinned).checkpoint
    except NoteError as e:
        problems.append(f"checkpoint: {e.message}")
    # Keep checking the proofs against the unsigned checkpoint, to name every failure at once.
    try:
        return unsigned_checkpoint(note)
    except NoteError:
        return None


def _events(
    raw_events: list[StoredEvent[msgspec.Raw]], problems: list[str]
) -> tuple[list[StoredEvent], dict[int, bytes]]:
    """Each event's hash from its envelope fields, its leaf hash, and the chain between neighbours."""
    events: dict[int, StoredEvent] = {}
    leaves: dict[int, bytes] = {}
    for e in raw_events:
        where = f"event seq {e.seq}"
        if e.seq in leaves:
            problems.append(f"{where}: listed twice")
            continue
        try:
            # the ledger hashes canonical data bytes: a re-indented bundle still checks
            data = canonical(msgspec.json.decode(e.data))
            stored = StoredEvent(**{**msgspec.structs.asdict(e), "data": data})
            body = envelope_body(stored)
            if link_hash(e.prev_hash, body) != e.hash:
                problems.append(f"{where}: its hash does not match its envelope (the event was altered)")
        except (msgspec.DecodeError, ValueError) as err:
            problems.append(f"{where}: unreadable envelope ({err})")
            continue
        leaves[e.seq] = leaf_hash(body)
        try:
            decode_data(e.type, data)
        except (KeyError, msgspec.ValidationError) as err:
            problems.append(f"{where}: its data is not a valid {e.type!r} ({err})")
            continue
        events[e.seq] = stored
    for seq, ev in events.items():
        before = events.get(seq - 1)
        if before is not None and ev.prev_hash != before.hash:
            problems.append(f"event seq {seq}: prev_hash is not the hash of event seq {seq - 1}")
    return [events[s] for s in sorted(events)], leaves


def _proofs(
    proofs: list[_Proof], leaves: dict[int, bytes], cp: Checkpoint | None, problems: list[str]
) -> None:
    by_seq: dict[int, _Proof] = {}
    for p in proofs:
        if p.seq in by_seq:
            problems.append(f"proof for seq {p.seq}: listed twice")
        by_seq[p.seq] = p
    for seq in sorted(leaves):
        where = f"event seq {seq}"
        found = by_seq.get(seq)
        if found is None:
            problems.append(f"{where}: no inclusion proof")
            continue
        p = found
        if cp is None:
            continue
        if seq > cp.size:
            problems.append(f"{where}: beyond the checkpoint's tree size {cp.size}")
        elif p.tree_size != cp.size:
            problems.append(
                f"{where}: its proof is for tree size {p.tree_size}, the checkpoint's is {cp.size}"
            )
        elif p.leaf_index != seq - 1:
            problems.append(f"{where}: its proof is for leaf index {p.leaf_index}, not {seq - 1}")
        else:
            try:
                path = [base64.b64decode(h, validate=True) for h in p.inclusion_path]
                verify_inclusion(seq - 1, cp.size, leaves[seq], path, cp.root)
            except binascii.Error:
                problems.append(f"{where}: its inclusion proof holds a hash that is not base64")
            except ProofError as e:
                if "does not lead" in str(e):
                    problems.append(f"{where}: inclusion proof does not lead to the checkpoint root")
                else:
                    problems.append(f"{where}: inclusion proof: {e}")
    for seq in sorted(set(by_seq) - set(leaves)):
        problems.append(f"proof for seq {seq}: no such event in the bundle")


def _rebuild(bundle: _Bundle, events: list[StoredEvent], problems: list[str]) -> int:
    """Rebuild the record from the bundled events and compare; recompute its digests. Returns #digests."""
    record = bundle.record
    try:
        arxiv_id = str(record["paper"]["arxiv_id"])
        as_of_us = parse_ts(record["as_of"])
        known_us = None if bundle.known_at is None else parse_ts(bundle.known_at)
    except (KeyError, TypeError, ValueError) as e:
        problems.append(f"record: no readable paper.arxiv_id, as_of or known_at ({e!r})")
        return 0
    digests = _digests(record, problems)
    try:
        rebuilt = build_record(MemoryReader(events, as_of_us, known_us), arxiv_id, as_of_us).record
    except NotFound as e:
        problems.append(f"the bundled events give no record: {e.message}")
        return digests
    compare_record(record, rebuilt, problems)
    return digests

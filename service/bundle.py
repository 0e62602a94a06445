"""Proof-carrying records: an offline evidence bundle, written as it is read.

A bundle is one JSON object: the record, the stored envelopes of every event that built it (the
events it shows and those of the inbound observations past its cap, which it counts), an inclusion
proof of each in one signed checkpoint, the checkpoint and the public key; one line of canonical JSON
(sorted keys, event data embedded verbatim). Checking it rebuilds the record from those envelopes with
the ledger's own projection code and recomputes every hash, leaf, proof, digest and the checkpoint
signature.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from ledger import merkle_store
from ledger.chain import envelope_body, link_hash
from ledger.checkpoint import (
    Checkpoint,
    Checkpointer,
    NoteError,
    Verifier,
    open_checkpoint,
    unsigned_checkpoint,
)
from ledger.codec import canonical, context_digest, decode_data, envelope_json, observation_digest
from ledger.errors import NotFound
from ledger.events import StoredEvent
from ledger.instants import format_as_of, parse_ts
from ledger.merkle import ProofError, leaf_hash, verify_inclusion
from projections.diff import MISSING, json_diff
from projections.memory import MemoryReader
from projections.record import build_record
from service.ledger import Ledger
from service.proofs import Leaves, Signed, prove, prove_seqs, sign_covering

__all__ = [
    "SCHEMA",
    "BundleReport",
    "BundleStream",
    "check_bundle",
    "encode_bundle",
    "open_bundle",
    "prove_seqs",
    "record_evidence",
]

SCHEMA = "citation-ledger.evidence-bundle.v1"
CHUNK = 1000  # seqs per read of envelopes and per chunk of proofs
_MAX_DIFFS = 10


def record_evidence(
    ledger: Ledger,
    arxiv_id: str,
    as_of_us: int | None = None,
    known_us: int | None = None,
    checkpointer: Checkpointer | None = None,
) -> dict[str, Any]:
    """The whole bundle as one value in memory (small records, tests); open_bundle streams the same."""
    with ledger.evidence(arxiv_id, as_of_us, known_us) as ev:
        record, seqs = ev.built.record, ev.all_seqs()
    return {
        "schema": SCHEMA,
        "record": record,
        "known_at": None if known_us is None else format_as_of(known_us),
        "events": [envelope_json(e) for e in ledger.store.envelopes(seqs)],
        **prove_seqs(ledger, seqs, checkpointer),
    }


def encode_bundle(bundle: dict[str, Any]) -> bytes:
    """The bundle as one line of canonical JSON (event data embedded verbatim)."""
    return canonical(bundle) + b"\n"


class BundleStream:
    """A bundle ready to be written: what it holds, and its bytes chunk by chunk in bounded memory."""

    def __init__(
        self, ledger: Ledger, record: dict[str, Any], known_at: str | None, seqs: list[int], signed: Signed
    ) -> None:
        self.ledger = ledger
        self.record = record
        self.known_at = known_at
        self.seqs = seqs
        self.signed = signed
        self._leaves = Leaves()

    @property
    def tree_size(self) -> int:
        """The size of the checkpoint its proofs lead to (0 for a bundle with no events)."""
        return self.signed.size if self.seqs else 0

    def chunks(self, chunk: int = CHUNK) -> Iterator[bytes]:
        """The bytes of encode_bundle(record_evidence(...)), written by hand in canonical key order, each
        piece by the same encoder: the events and proofs `chunk` seqs at a time."""
        members = {
            "checkpoint": [canonical(self.signed.note)],
            "events": self._array(self._events(chunk)),
            "key": [canonical(self.signed.key)],
            "known_at": [canonical(self.known_at)],
            "proofs": self._array(self._proofs(chunk)),
            "record": [canonical(self.record)],
            "schema": [canonical(SCHEMA)],
        }
        sep = b"{"
        for name in sorted(members):  # canonical JSON sorts keys
            yield sep + canonical(name) + b":"
            yield from members[name]
            sep = b","
        yield b"}\n"

    def _events(self, chunk: int) -> Iterator[list[bytes]]:
        # each leaf hash is kept (40 bytes an event read): the proofs need not read the events again
        self._leaves = Leaves()
        for i in range(0, len(self.seqs), chunk):
            seqs = self.seqs[i : i + chunk]
            if seqs[-1] - seqs[0] < 2 * len(seqs):
                # dense (a much-cited paper): one range of rows is read faster than a list of seqs, and
                # its other events are the proofs' block neighbours
                rows = self.ledger.store.read_log(after=seqs[0] - 1, limit=seqs[-1] - seqs[0] + 1)
                wanted = set(seqs)
            else:
                rows, wanted = self.ledger.store.envelopes(seqs), None
            for e in rows:
                self._leaves.add(e.seq, leaf_hash(envelope_body(e)))
            yield [canonical(envelope_json(e)) for e in rows if wanted is None or e.seq in wanted]

    def _proofs(self, chunk: int) -> Iterator[list[bytes]]:
        for i in range(0, len(self.seqs), chunk):
            yield [
                canonical(p) for p in prove(self.ledger, self.seqs[i : i + chunk], self.signed, self._leaves)
            ]

    @staticmethod
    def _array(parts: Iterator[list[bytes]]) -> Iterator[bytes]:
        sep = b"["
        for items in parts:
            if items:
                yield sep + b",".join(items)
                sep = b","
        yield b"[]" if sep == b"[" else b"]"


def open_bundle(
    ledger: Ledger,
    arxiv_id: str,
    as_of_us: int | None = None,
    known_us: int | None = None,
    checkpointer: Checkpointer | None = None,
    *,
    sign: bool = True,
) -> BundleStream:
    """Read the record and the seqs of every event that built it, then sign one checkpoint covering
    them: what can refuse a bundle (NotFound, NotSigned) is raised here, before its first byte."""
    with ledger.evidence(arxiv_id, as_of_us, known_us) as ev:
        record, seqs = ev.built.record, ev.all_seqs()
    # Signed after that read (the checkpoint covers every seq it found) and outside it: signing writes,
    # which the read transaction of this thread's connection cannot hold. The envelopes are read after
    # it too: a seq's event never changes, and a long write-out holds no read open.
    signed = sign_covering(ledger, max(seqs, default=0), checkpointer, sign=sign)
    return BundleStream(ledger, record, None if known_us is None else format_as_of(known_us), seqs, signed)


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


class BundleReport(NamedTuple):
    """What check_bundle found: every problem, in order, and a summary."""

    ok: bool
    problems: list[str]
    summary: str
    notes: list[str]


def check_bundle(raw: bytes, pinned: Verifier) -> BundleReport:
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
    if canonical(rebuilt) != canonical(record):
        diffs = [(p or "$", a, b) for p, a, b in json_diff(record, json.loads(canonical(rebuilt)))]
        # a changed digest only echoes the content difference: name the content, if any
        content = [d for d in diffs if not d[0].endswith(("observation_digest", "context_digest"))]
        diffs = content or diffs
        for path, mine, theirs in diffs[:_MAX_DIFFS]:
            problems.append(
                f"record differs from the events at {path}: the bundle says {_short(mine)}, "
                f"the events give {_short(theirs)}"
            )
        if len(diffs) > _MAX_DIFFS:
            problems.append(f"... and {len(diffs) - _MAX_DIFFS} more differences")
    return digests


def _digests(record: dict[str, Any], problems: list[str]) -> int:
    """Each observation_digest and the context_digest recomputed from the record's own content."""
    n = 0
    for lane in ("outbound", "inbound"):
        for i, o in enumerate(record.get(lane) or []):
            n += 1
            if o.get("observation_digest") != observation_digest(o):
                problems.append(f"record: {lane}[{i}].observation_digest does not match its content")
    if record.get("context_digest") != context_digest(record):
        problems.append("record: context_digest does not match its content")
    return n


def _short(value: Any) -> str:
    if value is MISSING:
        return "nothing"
    text = canonical(value).decode()
    return text if len(text) <= 80 else text[:77] + "..."

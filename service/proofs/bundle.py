"""Proof-carrying records: an offline evidence bundle, written as it is read.

A bundle is one JSON object: the record, the stored envelopes of every event that built it (the
events it shows and those of the inbound observations past its cap, which it counts), an inclusion
proof of each in one signed checkpoint, the checkpoint and the public key; one line of canonical JSON
(sorted keys, event data embedded verbatim). service/proofs/bundle_check.py checks one with no database.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ledger.model.codec import canonical, envelope_json
from ledger.model.instants import format_as_of
from ledger.model.jsonvalue import JsonInObject
from ledger.model.record_types import Record
from ledger.tlog.chain import envelope_body
from ledger.tlog.checkpoint import Checkpointer
from ledger.tlog.merkle import leaf_hash
from service.ledger import Ledger
from service.proofs.proofs import Leaves, Signed, prove, prove_seqs, sign_covering

__all__ = ["SCHEMA", "BundleStream", "encode_bundle", "open_bundle", "prove_seqs"]

SCHEMA = "citation-ledger.evidence-bundle.v1"
CHUNK = 1000  # seqs per read of envelopes and per chunk of proofs


def encode_bundle(bundle: JsonInObject) -> bytes:
    """The bundle as one line of canonical JSON (event data embedded verbatim)."""
    return canonical(bundle) + b"\n"


@dataclass
class BundleStream:
    """A bundle ready to be written: what it holds, and its bytes chunk by chunk in bounded memory."""

    ledger: Ledger
    record: Record
    known_at: str | None
    seqs: list[int]
    signed: Signed
    _leaves: Leaves = field(default_factory=Leaves, init=False, repr=False)

    @property
    def tree_size(self) -> int:
        """The size of the checkpoint its proofs lead to (0 for a bundle with no events)."""
        return self.signed.size if self.seqs else 0

    def chunks(self, chunk: int = CHUNK) -> Iterator[bytes]:
        """The bytes encode_bundle gives the whole bundle as one value, written by hand in canonical key
        order, each piece by the same encoder: the events and proofs `chunk` seqs at a time."""
        members = {
            "checkpoint": [canonical(self.signed.note)],
            "events": json_array(self._events(chunk)),
            "key": [canonical(self.signed.key)],
            "known_at": [canonical(self.known_at)],
            "proofs": json_array(self._proofs(chunk)),
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
        return proof_chunks(self.ledger, self.seqs, self.signed, self._leaves, chunk)


def proof_chunks(
    ledger: Ledger, seqs: list[int], signed: Signed, leaves: Leaves, chunk: int
) -> Iterator[list[bytes]]:
    """The inclusion proofs of `seqs` against `signed`, as canonical JSON, `chunk` seqs at a time."""
    for i in range(0, len(seqs), chunk):
        yield [canonical(p) for p in prove(ledger, seqs[i : i + chunk], signed, leaves)]


def json_array(parts: Iterator[list[bytes]]) -> Iterator[bytes]:
    """A JSON array written a chunk of encoded items at a time."""
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

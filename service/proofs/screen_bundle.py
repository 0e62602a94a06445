"""A screen's offline bundle: its rows as claims, the events they name and an inclusion proof of each
in the signed checkpoint of the head the screen was computed at.

One line of canonical JSON, written a member at a time as the record's bundle is (service/proofs/
bundle.py): checkpoint, claims, events, key, proofs, schema, screen. service/proofs/screen_check.py
checks one with no database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.model.codec import canonical, envelope_json
from ledger.model.errors import InvalidEvent
from ledger.tlog.chain import envelope_body
from ledger.tlog.checkpoint import Checkpointer, NotSigned
from ledger.tlog.merkle import leaf_hash
from service.ledger import Ledger
from service.proofs.bundle import json_array, proof_chunks
from service.proofs.proofs import Leaves, Signed, checkpoint_at
from service.proofs.screen_claims import (
    SCREEN_SCHEMA,
    Claim,
    Facts,
    ScreenHead,
    claim_key,
    claim_of,
    claim_problems,
    facts_of,
)

__all__ = ["SCREEN_SCHEMA", "ScreenBundle", "bundle_of_page", "open_screen_bundle", "screen_checkpoint"]

CHUNK = 1000  # seqs per read of envelopes and per chunk of proofs


@dataclass
class ScreenBundle:
    """A screen's bundle ready to be written: its bytes chunk by chunk, events read a chunk at a time."""

    ledger: Ledger
    head: ScreenHead
    claims: list[Claim]
    seqs: list[int]
    signed: Signed
    _leaves: Leaves = field(default_factory=Leaves, init=False, repr=False)

    def chunks(self, chunk: int = CHUNK) -> Iterator[bytes]:
        """The bundle's bytes: canonical JSON, each member by the same encoder, in canonical key order."""
        members = {
            "checkpoint": [canonical(self.signed.note)],
            "claims": json_array(iter([[canonical(c) for c in self.claims]])),
            "events": json_array(self._events(chunk)),
            "key": [canonical(self.signed.key)],
            "proofs": json_array(self._proofs(chunk)),
            "schema": [canonical(SCREEN_SCHEMA)],
            "screen": [canonical(self.head)],
        }
        sep = b"{"
        for name in sorted(members):
            yield sep + canonical(name) + b":"
            yield from members[name]
            sep = b","
        yield b"}\n"

    def _events(self, chunk: int) -> Iterator[list[bytes]]:
        self._leaves = Leaves()
        for i in range(0, len(self.seqs), chunk):
            rows = self.ledger.store.envelopes(self.seqs[i : i + chunk])
            for e in rows:
                self._leaves.add(e.seq, leaf_hash(envelope_body(e)))
            yield [canonical(envelope_json(e)) for e in rows]

    def _proofs(self, chunk: int) -> Iterator[list[bytes]]:
        return proof_chunks(self.ledger, self.seqs, self.signed, self._leaves, chunk)


def open_screen_bundle(
    ledger: Ledger,
    head: ScreenHead,
    claims: Iterable[Claim],
    checkpointer: Checkpointer | None = None,
    *,
    sign: bool = True,
) -> ScreenBundle:
    """Hold each claim to its events as the checker will, then take the signed checkpoint of the head
    the screen was computed at: what can refuse a bundle is raised here, before its first byte.

    InvalidEvent("claims") when a row is not what its events say (a screen that disagrees with its own
    events is a bug to fix, not a bundle to sign); NotSigned on a read-only server without a
    checkpoint of that size; NotFound when the head is past the ledger's."""
    rows = list(claims)  # in the screen's order
    seqs = sorted({s for c in rows for s in c.seqs()})
    if seqs and seqs[-1] > head.tree_size:
        raise InvalidEvent(
            "claims", f"a row names event seq {seqs[-1]}, past the screen's tree size {head.tree_size}"
        )
    facts = _facts(ledger, seqs, {c.work_id for c in rows})
    problems: list[str] = []
    keys: set[tuple[str, int, str, int]] = set()
    for i, c in enumerate(rows):
        if claim_key(c) in keys:
            problems.append(f"claims[{i}]: the same row twice")
        keys.add(claim_key(c))
        problems += claim_problems(f"claims[{i}]", c, facts, head)
    if problems:
        raise InvalidEvent("claims", "; ".join(problems[:5]), details={"problems": len(problems)})
    signed = checkpoint_at(ledger, head.tree_size, checkpointer, sign=sign)
    return ScreenBundle(ledger, head, rows, seqs, signed)


def _facts(ledger: Ledger, seqs: list[int], works: set[str]) -> dict[int, Facts]:
    out: dict[int, Facts] = {}
    for i in range(0, len(seqs), CHUNK):
        for e in ledger.store.envelopes(seqs[i : i + CHUNK]):
            out[e.seq] = facts_of(e.seq, e.type, e.stream, e.observed_at, e.recorded_at, bytes(e.data), works)
    return out


def bundle_of_page(ledger: Ledger, body: Mapping[str, Any], *, sign: bool = True) -> ScreenBundle:
    """The offline bundle of one page of a screen, as `service.screen.page_json` gives it: its rows as
    claims, against the signed checkpoint of the head it was computed at."""
    if "from" in body:
        raise InvalidEvent(
            "bundle", "a bundle proves a screen, not its changes (a cleared line has no event)"
        )
    head = ScreenHead(
        body["as_of"], body["known_at"], tree_size=body["head"]["tree_size"], query=body["filters"]
    )
    return open_screen_bundle(ledger, head, [claim_of(i) for i in body["items"]], sign=sign)


def screen_checkpoint(ledger: Ledger, tree_size: int, *, sign: bool = True) -> str | None:
    """The signed checkpoint (its note) of the head a screen was computed at, signed now when the last
    one is of another size; None on a read-only ledger that kept none of that size."""
    try:
        return checkpoint_at(ledger, tree_size, sign=sign).note
    except NotSigned:
        return None

"""Checking a screen's bundle with no database: every event's hash and inclusion proof in the signed
checkpoint (the record bundle's passes, service/proofs/bundle_check.py), then every claim held to the
proven events it names (service/proofs/screen_claims.py).

The claims are streamed twice from where their array starts (once for the works they name, once to
check them), so memory holds the facts of the bundle's events, not its claims.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from ledger.model.events import StoredEvent
from ledger.tlog import merkle_store
from service.proofs.bundle_check import BundleReport, Opener, cosigned_by, key_notes
from service.proofs.bundle_json import JsonReader
from service.proofs.screen_claims import (
    SCREEN_SCHEMA,
    Claim,
    Facts,
    claim_key,
    claim_problems,
    facts_of,
)

if TYPE_CHECKING:
    from service.proofs.bundle_check import _Pass1

_CLAIMS = msgspec.json.Decoder(Claim)
_EVENT = msgspec.json.Decoder(StoredEvent[msgspec.Raw])
_READ = 1 << 20
_MAX_CLAIM_PROBLEMS = 50  # a bundle of forged rows names the first ones and counts the rest


def finish_screen(opener: Opener, seen: _Pass1) -> BundleReport:
    """The report on a screen's bundle whose first pass (bundle_check._Pass1) has read it."""
    head, schema = seen.screen(), seen.text("schema")
    notes = key_notes(seen.text("key"), seen.pinned)
    problems: list[str] = []
    if schema != SCREEN_SCHEMA:
        problems.append(f"bundle schema is {schema!r}, expected {SCREEN_SCHEMA!r}")
    problems += seen.checkpoint_problems + seen.events.problems + seen.proofs.problems()
    cp = seen.checkpoint
    if cp is not None and cp.size != head.tree_size:
        problems.append(
            f"the checkpoint is of tree size {cp.size}, but the screen says it was computed at tree size "
            f"{head.tree_size}"
        )
    offset = seen.arrays["claims"]
    works = {c.work_id for _, c in _claims(opener, offset)}
    facts = _proven_facts(opener, seen, works)
    named: set[int] = set()
    keys: set[tuple[str, int, str, int]] = set()
    found: list[str] = []
    rows = 0
    for i, c in _claims(opener, offset):
        rows += 1
        where = f"claims[{i}]"
        if claim_key(c) in keys:
            found.append(f"{where}: the same row twice")
        keys.add(claim_key(c))
        named.update(c.seqs())
        found += claim_problems(where, c, facts, head)
    problems += found[:_MAX_CLAIM_PROBLEMS]
    if len(found) > _MAX_CLAIM_PROBLEMS:
        problems.append(f"... and {len(found) - _MAX_CLAIM_PROBLEMS} more problems with claims")
    if problems:
        return BundleReport(False, problems, "", notes)
    unnamed = len(seen.events) - len(named)
    if unnamed:
        notes.append(f"{unnamed} proven event(s) in the bundle are named by no claim (rows left out)")
    assert cp is not None
    known = f" known at {head.known_at}" if head.known_at else ""
    summary = (
        f"OK: a screen as of {head.as_of}{known}, computed at tree size {head.tree_size}: each of its "
        f"{rows} row(s) is what its citation, resolution and notice events say; the {len(seen.events)} "
        f"events' hashes were recomputed and each inclusion proof leads to checkpoint {cp.origin} of size "
        f"{cp.size} (root {merkle_store.b64(cp.root)}), signed by {seen.pinned.name}+{seen.pinned.hash.hex()}"
        f"{cosigned_by(seen.cosigned)}. It does not prove the screen complete (see docs/screen-proof.md)."
    )
    return BundleReport(True, [], summary, notes)


def _claims(opener: Opener, offset: int) -> Iterator[tuple[int, Claim]]:
    with opener() as f:
        f.seek(offset)
        for i, (_, _, c) in enumerate(JsonReader(f).elements(_CLAIMS, "$.claims")):
            yield i, c


def _proven_facts(opener: Opener, seen: _Pass1, works: set[str]) -> dict[int, Facts]:
    """The facts of each event whose data is valid and whose inclusion proof leads to the root (an
    altered event's does not: its leaf changed)."""
    events, state = seen.events, seen.proofs.state
    proven = [i for i in range(len(events)) if events.valid[i] and i < len(state) and state[i] == 1]
    out: dict[int, Facts] = {}
    for _, raw in events.read(opener, proven, _READ):
        e = _EVENT.decode(raw)
        out[e.seq] = facts_of(e.seq, e.type, e.stream, e.observed_at, e.recorded_at, bytes(e.data), works)
    return out

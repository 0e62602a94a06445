"""A transparency-log witness: C2SP tlog-witness `add-checkpoint`, as a function of bytes (no HTTP).

The witness keeps, per known log, the latest checkpoint it cosigned, and cosigns a new one only with a
consistency proof from it: so it never cosigns two checkpoints of one log that contradict each other,
and anyone holding one of its cosignatures catches a rewrite. See https://c2sp.org/tlog-witness.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import NamedTuple

from ledger.tlog.checkpoint import Verifier, open_checkpoint
from ledger.tlog.checkpoint_notes import MAX_TREE_SIZE, Checkpoint, NoteError, parse_checkpoint
from ledger.tlog.cosign import WitnessSigner, add_cosignatures, parse_signature_line, split_note
from ledger.tlog.merkle import EMPTY_ROOT, HASH_SIZE, ProofError, verify_consistency
from ledger.tlog.witness_state import MAX_SIZE, WitnessState

MAX_PROOF_LINES = 63  # tlog-witness: "The client MUST NOT send more than 63 consistency proof lines"
# tlog-witness sets no byte limit. 63 proof lines are under 3 KiB; the rest leaves room for a checkpoint
# with extension lines and many signatures, and still bounds what one request makes the witness read.
MAX_BODY_BYTES = 64 * 1024
SIZE_CONTENT_TYPE = "text/x.tlog.size"  # the 409 body: the latest cosigned size, per tlog-witness
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
OLD_PREFIX = "old "


class WitnessAnswer(NamedTuple):
    """An add-checkpoint answer: HTTP status, body, content type."""

    status: int
    body: bytes
    content_type: str


def _text(status: int, message: str) -> WitnessAnswer:
    return WitnessAnswer(status, (message + "\n").encode(), TEXT_CONTENT_TYPE)


def _size(size: int) -> WitnessAnswer:
    return WitnessAnswer(409, f"{size}\n".encode(), SIZE_CONTENT_TYPE)


class Malformed(ValueError):
    """An add-checkpoint body that does not follow the tlog-witness grammar (400)."""


class Request(NamedTuple):
    """A parsed add-checkpoint body: old size, proof hashes, the signed checkpoint note."""

    old: int
    proof: list[bytes]
    note: str
    checkpoint: Checkpoint


def _decimal(text: str, what: str) -> int:
    # ASCII decimal, no leading zeroes unless the number is 0 (tlog-witness, tlog-checkpoint)
    if not (text.isascii() and text.isdigit()) or (text != "0" and text.startswith("0")):
        raise Malformed(f"{what} {text[:40]!r} is not a decimal number without leading zeroes")
    if len(text) > len(str(MAX_TREE_SIZE)) or int(text) > MAX_TREE_SIZE:
        raise Malformed(f"{what} {text[:40]!r} is above 2^64-1")
    return int(text)


def parse_request(body: bytes) -> Request:
    """The tlog-witness add-checkpoint body -> Request; Malformed says what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("the body is not UTF-8") from None
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise Malformed("no empty line between the old size and proof lines and the checkpoint")
    lines = head.split("\n")
    if not lines[0].startswith(OLD_PREFIX):
        raise Malformed("the first line is not `old <size>`")
    old = _decimal(lines[0][len(OLD_PREFIX) :], "old size")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise Malformed(f"{len(lines) - 1} consistency proof lines, more than {MAX_PROOF_LINES}")
    proof: list[bytes] = []
    for i, line in enumerate(lines[1:]):
        try:
            h = base64.b64decode(line, validate=True)
        except binascii.Error:
            raise Malformed(f"proof line {i + 1} is not base64") from None
        if len(h) != HASH_SIZE:
            raise Malformed(f"proof line {i + 1} is {len(h)} bytes, not a {HASH_SIZE}-byte hash")
        proof.append(h)
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise Malformed("the checkpoint holds control characters")
    try:
        checkpoint_text, signatures = split_note(note)
        _decimal(checkpoint_text.split("\n")[1] if checkpoint_text.count("\n") > 1 else "", "checkpoint size")
        checkpoint = parse_checkpoint(checkpoint_text)
    except NoteError as e:
        raise Malformed(f"not a signed checkpoint: {e.message}") from None
    for line in signatures:
        if parse_signature_line(line) is None:
            raise Malformed(f"malformed signature line {line!r}")
    return Request(old, proof, note, checkpoint)


class Witness:
    """Cosigns checkpoints of known logs, each consistent with the last it cosigned for that log."""

    def __init__(self, state: WitnessState, signer: WitnessSigner, logs: Mapping[str, Verifier]) -> None:
        for origin, verifier in logs.items():
            if verifier.name != origin:
                raise ValueError(f"the key for origin {origin!r} is named {verifier.name!r}")
        self.state = state
        self.signer = signer
        self.logs = dict(logs)

    def add_checkpoint(self, body: bytes, now: int) -> WitnessAnswer:
        """Answer a tlog-witness add-checkpoint request; cosign (at `now`, unix seconds) only on 200."""
        if len(body) > MAX_BODY_BYTES:
            return _text(413, f"the body is over {MAX_BODY_BYTES} bytes")
        try:
            req = parse_request(body)
        except Malformed as e:
            return _text(400, str(e))
        cp = req.checkpoint
        verifier = self.logs.get(cp.origin)
        if verifier is None:
            return _text(404, f"unknown log origin {cp.origin!r}")
        try:
            open_checkpoint(req.note, verifier)
        except NoteError as e:
            return _text(403, f"no valid signature by the log's key: {e.message}")
        if req.old > cp.size:
            return _text(400, f"old size {req.old} is above the checkpoint size {cp.size}")
        if cp.size > MAX_SIZE:
            return _text(400, f"checkpoint size {cp.size} is above 2^63-1, the largest this witness keeps")
        latest = self.state.latest(cp.origin)
        size, root = (0, EMPTY_ROOT) if latest is None else (latest.size, latest.root)
        if req.old != size:
            return _size(size)
        if req.old == cp.size and latest is not None and cp.root != root:
            # the same size with another root: two views of one log; cosigning both is what a witness
            # exists to refuse (tlog-witness: 409)
            return _size(size)
        try:
            verify_consistency(size, cp.size, root, cp.root, req.proof)
        except ProofError as e:
            return _text(422, f"the consistency proof from size {size} does not verify: {e}")
        text, _ = split_note(req.note)
        line = self.signer.cosign(text, now)
        kept = add_cosignatures(req.note, [line])
        # compare-and-set on the size and root the proof was checked from: a concurrent request that
        # moved the log meanwhile wins, and this one is answered as stale
        if not self.state.advance(cp.origin, size, cp.size, cp.root, kept, old_root=root, updated=now):
            now_latest = self.state.latest(cp.origin)
            return _size(0 if now_latest is None else now_latest.size)
        return WitnessAnswer(200, line.encode(), TEXT_CONTENT_TYPE)

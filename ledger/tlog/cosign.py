"""Witness cosignatures: C2SP tlog-cosignature `cosignature/v1` (Ed25519) over checkpoint notes.

A cosignature is a signed-note signature line whose blob is key hash || u64 timestamp || Ed25519
signature, and whose signed message is "cosignature/v1\\ntime <t>\\n" followed by the note text: the
witness states when it saw the checkpoint, and the two cannot be separated.
See https://c2sp.org/tlog-cosignature and https://c2sp.org/signed-note.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.tlog.checkpoint import SIG_PREFIX, NamedKey, split_vkey
from ledger.tlog.checkpoint_notes import NoteError, b64

COSIGNATURE_V1 = 0x04  # the signature type byte of an Ed25519 cosignature/v1 key (tlog-cosignature)
COSIGNATURE_HEADER = "cosignature/v1"  # the first line of the signed message: domain separation
KEY_HASH_SIZE = 4
TIMESTAMP_SIZE = 8  # u64, big-endian (RFC 8446 section 3.3 serialization)
ED25519_SIGNATURE_SIZE = 64
BLOB_SIZE = KEY_HASH_SIZE + TIMESTAMP_SIZE + ED25519_SIGNATURE_SIZE
MAX_TIMESTAMP = 2**63 - 1  # "It MUST NOT exceed 2^63 - 1"
ENV_WITNESS_NAME = "LEDGER_WITNESS_NAME"
_RAW = serialization.Encoding.Raw


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise NoteError(f"bad witness name {name!r}: non-empty, without spaces or '+'")


def witness_key_hash(name: str, public: bytes) -> bytes:
    """First 4 bytes of SHA-256(name || 0x0A || 0x04 || public key): the cosignature/v1 key ID."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([COSIGNATURE_V1]) + public).digest()[:KEY_HASH_SIZE]


def signed_message(text: str, timestamp: int) -> bytes:
    """The bytes a cosignature/v1 signs: header line, time line, then the whole note text."""
    _check_text(text)
    _check_timestamp(timestamp)
    return f"{COSIGNATURE_HEADER}\ntime {timestamp}\n{text}".encode()


def _check_text(text: str) -> None:
    if not text.endswith("\n") or "\n\n" in text:
        raise NoteError("a note text ends with a newline and has no blank line")


def _check_timestamp(timestamp: int) -> None:
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise NoteError(f"cosignature timestamp {timestamp} is not in 0..2^63-1")


class WitnessVerifier(NamedTuple):
    """A witness's public key: name, 4-byte cosignature/v1 key hash, Ed25519 public key."""

    name: str
    hash: bytes
    public: bytes

    @property
    def vkey(self) -> str:
        """<name>+<hex key hash>+<base64(0x04 || public key)>."""
        encoded = base64.b64encode(bytes([COSIGNATURE_V1]) + self.public).decode()
        return f"{self.name}+{self.hash.hex()}+{encoded}"

    def verify(self, text: str, timestamp: int, signature: bytes) -> bool:
        """True if `signature` is this witness's cosignature/v1 of `text` at `timestamp`."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, signed_message(text, timestamp))
        except (InvalidSignature, NoteError):
            return False
        return True


def parse_witness_vkey(text: str) -> WitnessVerifier:
    """A cosignature/v1 vkey string -> WitnessVerifier; NoteError says what is wrong."""
    kind = "a cosignature/v1 key (0x04 || 32-byte Ed25519 key)"
    parts = split_vkey(text, "witness key", COSIGNATURE_V1, kind, witness_key_hash, _check_name)
    return WitnessVerifier(*parts)


class WitnessSigner(NamedKey[WitnessVerifier]):
    """A witness's Ed25519 private key under its name; makes cosignature/v1 signature lines."""

    KEY_TYPE = COSIGNATURE_V1
    LABEL = "witness signer key"
    SEED = "a cosignature/v1 Ed25519 seed (0x04 || 32 bytes)"
    OTHER_NAME = (
        "the witness key at {path} is named {found!r}, not {asked!r}: "
        "a new witness name needs a new key file",
        "key_name",
        "asked_name",
    )

    @staticmethod
    def _check(name: str) -> None:
        _check_name(name)

    def _verifier(self, name: str, public: bytes) -> WitnessVerifier:
        return WitnessVerifier(name, witness_key_hash(name, public), public)

    @property
    def vkey(self) -> str:
        """The witness's verifier key (C2SP vkey, type 0x04)."""
        return self.verifier.vkey

    def cosign(self, text: str, timestamp: int) -> str:
        """The cosignature/v1 signature line (with its newline) on note `text` at `timestamp`."""
        signature = self.private.sign(signed_message(text, timestamp))
        blob = self.verifier.hash + timestamp.to_bytes(TIMESTAMP_SIZE, "big") + signature
        return f"{SIG_PREFIX}{self.name} {base64.b64encode(blob).decode()}\n"


def default_witness_name() -> str:
    """$LEDGER_WITNESS_NAME, else citation-ledger-witness/<hostname>."""
    host = socket.gethostname() or "localhost"
    return os.environ.get(ENV_WITNESS_NAME) or f"citation-ledger-witness/{host}"


def load_or_create_witness_key(path: Path, name: str | None = None) -> WitnessSigner:
    """The witness key at `path`, created (mode 600) on first use for `name` (default_witness_name())."""
    return WitnessSigner.load_or_create(path, name, default_witness_name)


class Cosignature(NamedTuple):
    """A signature line's blob read as cosignature/v1: key hash, timestamp, Ed25519 signature."""

    hash: bytes
    timestamp: int
    signature: bytes


def parse_cosignature(blob_b64: str) -> Cosignature:
    """A signature line's base64 blob -> Cosignature; NoteError when it is not 76 bytes of one."""
    blob = b64(blob_b64, "cosignature: bad base64")
    if len(blob) != BLOB_SIZE:
        raise NoteError(f"cosignature: {len(blob)} bytes, not {BLOB_SIZE} (key hash, time, signature)")
    timestamp = int.from_bytes(blob[KEY_HASH_SIZE : KEY_HASH_SIZE + TIMESTAMP_SIZE], "big")
    if timestamp > MAX_TIMESTAMP:
        raise NoteError(f"cosignature: timestamp {timestamp} exceeds 2^63-1")
    return Cosignature(blob[:KEY_HASH_SIZE], timestamp, blob[KEY_HASH_SIZE + TIMESTAMP_SIZE :])


def split_note(note: str) -> tuple[str, list[str]]:
    """A signed note -> (text, signature lines without their newlines); NoteError if it is not one."""
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise NoteError("not a signed note: no blank line before signature lines")
    return note[: split + 1], note[split + 2 : -1].split("\n")


def parse_signature_line(line: str) -> tuple[str, str] | None:
    """(name, base64 blob) of a well-formed signature line (without its newline), else None."""
    if not line.startswith(SIG_PREFIX) or line.count(" ") != 2:
        return None
    name, blob = line[len(SIG_PREFIX) :].split(" ")
    return (name, blob) if name and blob else None


def cosignatures(note: str, witnesses: Sequence[WitnessVerifier]) -> dict[str, int]:
    """vkey -> timestamp of each witness whose cosignature on the note's text verifies.

    Lines of unknown keys are ignored (signed-note says a verifier must), and so is a line of a known
    witness that does not verify: it is simply not counted.
    """
    text, lines = split_note(note)
    by_id = {(w.name, w.hash): w for w in witnesses}
    found: dict[str, int] = {}
    for line in lines:
        parsed = parse_signature_line(line)
        if parsed is None:
            continue
        name, blob_b64 = parsed
        try:
            cosig = parse_cosignature(blob_b64)
        except NoteError:
            continue
        witness = by_id.get((name, cosig.hash))
        if witness is not None and witness.verify(text, cosig.timestamp, cosig.signature):
            found[witness.vkey] = cosig.timestamp
    return found


def add_cosignatures(note: str, lines: Iterable[str]) -> str:
    """The signed note with signature `lines` appended, each once (NoteError for a malformed line)."""
    split_note(note)
    have = set(note[note.rfind("\n\n") + 2 :].split("\n"))
    added: list[str] = []
    for raw in lines:
        line = raw.removesuffix("\n")
        if "\n" in line or parse_signature_line(line) is None:
            raise NoteError(f"not a signature line: {raw!r}")
        if line not in have:
            have.add(line)
            added.append(line + "\n")
    return note + "".join(added)


def require_cosignatures(note: str, witnesses: Sequence[WitnessVerifier], quorum: int) -> dict[str, int]:
    """The valid cosignatures of the note by `witnesses`; NoteError when fewer than `quorum` verify."""
    found = cosignatures(note, witnesses)
    if len(found) < quorum:
        names = ", ".join(sorted(w.name for w in witnesses)) or "none given"
        raise NoteError(
            f"{len(found)} valid witness cosignature(s) where {quorum} are required (witnesses: {names}): "
            "a checkpoint the witnesses did not cosign may be a view shown to you alone"
        )
    return found


class Quorum(NamedTuple):
    """The witnesses a checkpoint must be cosigned by, `required` of them at least (0: none asked)."""

    witnesses: Sequence[WitnessVerifier] = ()
    required: int = 0

    def check(self, note: str) -> dict[str, int]:
        """The note's valid cosignatures; NoteError when fewer than `required` (nothing asked: {})."""
        return require_cosignatures(note, self.witnesses, self.required) if self.required else {}


NO_QUORUM = Quorum()

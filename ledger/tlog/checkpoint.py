"""Signed checkpoints: C2SP signed notes (Ed25519) over C2SP tlog-checkpoint bodies, and the ledger's key.

A checkpoint is the note text "<origin>\\n<tree size>\\n<base64 root hash>\\n", signed as in
https://c2sp.org/signed-note. The ledger keeps the last one it signed (in a file next to a SQLite
database, in the signed_checkpoint table of a PostgreSQL one) and signs a new one only after verifying
a consistency proof from it, so it never signs two checkpoints that contradict each other (a truncated
or rolled-back database is refused).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, NamedTuple, Protocol, Self, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.model.errors import ChainBroken, InvalidEvent, LedgerError
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint_notes import Checkpoint, NoteError, b64, parse_checkpoint, unsigned_checkpoint
from ledger.tlog.merkle import ProofError, verify_consistency

if TYPE_CHECKING:
    from ledger.tlog.stored import LogStore

ED25519 = 0x01  # the signature type byte of C2SP signed-note
SIG_PREFIX = "\u2014 "  # em dash, space
ENV_ORIGIN = "LEDGER_ORIGIN"
# the signing key file, for nodes that share one key (default: next to a SQLite file, see side_path)
ENV_KEY_FILE = "LEDGER_KEY_FILE"
_RAW = serialization.Encoding.Raw


class NotSigned(LedgerError):
    """A read-only server asked for a checkpoint or key it does not have: it signs and creates nothing."""

    code = "not_signed"


class CheckpointRefused(LedgerError):
    """The ledger's own checkpoint state (key or last signed checkpoint) is unusable: nothing is signed."""

    code = "checkpoint_refused"


def key_hash(name: str, public: bytes) -> bytes:
    """First 4 bytes of SHA-256(key name || 0x0A || 0x01 || public key)."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public).digest()[:4]


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise NoteError(f"bad key name {name!r}: non-empty, without spaces or '+'")


class Verifier(NamedTuple):
    """A public key as C2SP vkey: name, 4-byte key hash, Ed25519 public key."""

    name: str
    hash: bytes
    public: bytes

    @property
    def vkey(self) -> str:
        """<name>+<hex key hash>+<base64(0x01 || public key)>."""
        return f"{self.name}+{self.hash.hex()}+{base64.b64encode(bytes([ED25519]) + self.public).decode()}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True if signature is this key's Ed25519 signature of message."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except InvalidSignature:
            return False
        return True


def split_vkey(
    text: str,
    label: str,
    key_type: int,
    kind: str,
    hash_of: Callable[[str, bytes], bytes],
    check_name: Callable[[str], None] = _check_name,
) -> tuple[str, bytes, bytes]:
    """A C2SP vkey string -> (name, key hash, public key); NoteError names the `label` and what is wrong."""
    shown = text.strip()
    parts = shown.split("+", 2)  # the base64 part may itself hold '+'
    if len(parts) != 3:
        raise NoteError(f"a {label} is <name>+<hex key hash>+<base64 key>")
    name, hash_hex, key_b64 = parts
    check_name(name)
    try:
        raw = base64.b64decode(key_b64, validate=True)
        hash_ = bytes.fromhex(hash_hex)
    except (binascii.Error, ValueError):
        raise NoteError(f"{label} {shown!r}: bad hex or base64") from None
    if len(hash_) != 4 or hash_hex != hash_.hex():
        raise NoteError(f"{label} {shown!r}: the key hash must be 8 lowercase hex digits")
    if len(raw) != 33 or raw[0] != key_type:
        raise NoteError(f"{label} {shown!r}: not {kind}")
    if hash_of(name, raw[1:]) != hash_:
        raise NoteError(f"{label} {shown!r}: the key hash does not match the name and key")
    return name, hash_, raw[1:]


def parse_vkey(text: str) -> Verifier:
    """A vkey string -> Verifier; NoteError says what is wrong."""
    return Verifier(*split_vkey(text, "verifier key", ED25519, "an Ed25519 key (0x01 || 32 bytes)", key_hash))


class _PublicKey(Protocol):
    @property
    def hash(self) -> bytes: ...


V = TypeVar("V", bound=_PublicKey)


class NamedKey(Generic[V]):
    """An Ed25519 private key under a name, kept as PRIVATE+KEY+<name>+<hex key hash>+<base64 key>.

    Subclasses name the key type byte before the seed and how the public key is published.
    """

    KEY_TYPE: ClassVar[int]
    LABEL: ClassVar[str]  # what the key is called in errors
    SEED: ClassVar[str]  # what its key bytes must be, in errors
    # the error for a key file under another name: the message ({path}, {found}, {asked}), and the
    # names of the found and asked names in its details
    OTHER_NAME: ClassVar[tuple[str, str, str]]

    def __init__(self, name: str, private: Ed25519PrivateKey) -> None:
        self._check(name)
        self.name = name
        self.private = private
        self.verifier = self._verifier(
            name, private.public_key().public_bytes(_RAW, serialization.PublicFormat.Raw)
        )

    @staticmethod
    def _check(name: str) -> None:
        _check_name(name)

    def _verifier(self, name: str, public: bytes) -> V:
        raise NotImplementedError

    @property
    def key_hash(self) -> bytes:
        """The 4-byte key hash of the published key."""
        return self.verifier.hash

    @classmethod
    def load_or_create(cls, path: Path, name: str | None, default: Callable[[], str]) -> Self:
        """The key at `path`, made (mode 600) on first use under `name` (else `default()`)."""
        if not path.exists():
            create_key_file(path, cls(name or default(), Ed25519PrivateKey.generate()).skey)
        signer = cls.parse(path.read_text())
        if name is not None and name != signer.name:
            message, found, asked = cls.OTHER_NAME
            raise NoteError(
                message.format(path=path, found=signer.name, asked=name),
                details={found: signer.name, asked: name},
            )
        return signer

    @classmethod
    def parse(cls, skey: str) -> Self:
        """The key from its PRIVATE+KEY+... line; NoteError says what is wrong with it."""
        parts = skey.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise NoteError(f"a {cls.LABEL} is PRIVATE+KEY+<name>+<hex key hash>+<base64 key>")
        raw = b64(parts[4], f"{cls.LABEL}: bad base64")
        if len(raw) != 33 or raw[0] != cls.KEY_TYPE:
            raise NoteError(f"{cls.LABEL}: not {cls.SEED}")
        signer = cls(parts[2], Ed25519PrivateKey.from_private_bytes(raw[1:]))
        if signer.key_hash.hex() != parts[3]:
            raise NoteError(f"{cls.LABEL}: the key hash does not match the name and key")
        return signer

    @property
    def skey(self) -> str:
        """The private key as its PRIVATE+KEY+... line."""
        seed = self.private.private_bytes(_RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption())
        encoded = base64.b64encode(bytes([self.KEY_TYPE]) + seed).decode()
        return f"PRIVATE+KEY+{self.name}+{self.key_hash.hex()}+{encoded}"


class Signer(NamedKey[Verifier]):
    """An Ed25519 private key under a name (the checkpoint origin), in the Go note signer key format."""

    KEY_TYPE = ED25519
    LABEL = "signer key"
    SEED = "an Ed25519 seed (0x01 || 32 bytes)"
    OTHER_NAME = (
        "the key at {path} signs for origin {found!r}, not {asked!r}: a new origin needs a new key file",
        "key_origin",
        "asked_origin",
    )

    def _verifier(self, name: str, public: bytes) -> Verifier:
        return Verifier(name, key_hash(name, public), public)

    def sign_note(self, text: str) -> str:
        """The signed note: text, a blank line, one signature line."""
        if not text.endswith("\n") or "\n\n" in text:
            raise NoteError("a note text ends with a newline and has no blank line")
        signature = self.private.sign(text.encode())
        blob = base64.b64encode(self.verifier.hash + signature).decode()
        return f"{text}\n{SIG_PREFIX}{self.name} {blob}\n"


def open_note(note: str, verifier: Verifier) -> str:
    """The text of a note signed by `verifier`; NoteError says exactly why not."""
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise NoteError("the note holds control characters")
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise NoteError("not a signed note: no blank line before signature lines")
    text, signatures = note[: split + 1], note[split + 2 :]
    found: list[str] = []
    for line in signatures[:-1].split("\n"):
        if not line.startswith(SIG_PREFIX) or line.count(" ") != 2:
            raise NoteError(f"malformed signature line {line!r}")
        name, blob_b64 = line[len(SIG_PREFIX) :].split(" ")
        blob = b64(blob_b64, f"signature line of {name}: bad base64")
        if len(blob) < 5:
            raise NoteError(f"signature line of {name}: too short")
        found.append(f"{name}+{blob[:4].hex()}")
        if name == verifier.name and blob[:4] == verifier.hash:
            if not verifier.verify(text.encode(), blob[4:]):
                raise NoteError(
                    f"the signature by {name}+{verifier.hash.hex()} does not verify: "
                    "the note text or the signature was altered"
                )
            return text
    raise NoteError(
        f"no signature by the key {verifier.name}+{verifier.hash.hex()} (signed by: {', '.join(found)})"
    )


class SignedCheckpoint(NamedTuple):
    """A checkpoint and its signed note."""

    checkpoint: Checkpoint
    note: str


def open_checkpoint(note: str, verifier: Verifier) -> SignedCheckpoint:
    """Verify the signature, then parse the checkpoint; its origin must be the key's name."""
    cp = parse_checkpoint(open_note(note, verifier))
    if cp.origin != verifier.name:
        raise NoteError(f"the checkpoint's origin {cp.origin!r} is not the key's name {verifier.name!r}")
    return SignedCheckpoint(cp, note)


def default_origin() -> str:
    """$LEDGER_ORIGIN, else citation-ledger/<hostname>."""
    return os.environ.get(ENV_ORIGIN) or f"citation-ledger/{socket.gethostname() or 'localhost'}"


def create_key_file(path: Path, skey: str) -> None:
    """Write a new private key file (mode 600) unless one appeared meanwhile: the first writer wins."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")  # mode 600
    tmp = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write(skey + "\n")
        f.flush()
        os.fsync(f.fileno())
    # link, not rename: when two processes race to create the key, the first one wins for both
    with contextlib.suppress(FileExistsError):
        os.link(tmp, path)
    tmp.unlink()


def load_or_create_key(path: Path, origin: str | None = None) -> Signer:
    """The key at `path`, created (mode 600) on first use for `origin` (default: default_origin())."""
    return Signer.load_or_create(path, origin, default_origin)


@dataclass
class Checkpointer:
    """Signs checkpoints of one store's tree with its key, never two inconsistent ones."""

    store: LogStore
    key_path: Path
    origin: str | None = None

    @classmethod
    def for_db(cls, store: LogStore, origin: str | None = None) -> Checkpointer:
        """Key at $LEDGER_KEY_FILE or interface.side_path(db, ".key"); origin from arg or $LEDGER_ORIGIN.

        The last signed checkpoint is kept by store.tree (<db>.checkpoint on SQLite, a table on
        PostgreSQL, so every node signs after the same one).
        """
        key = os.environ.get(ENV_KEY_FILE)
        return cls(store, Path(key) if key else store.tree.side_file(".key"), origin)

    def signer(self) -> Signer:
        """The key, created on first use."""
        return load_or_create_key(self.key_path, self.origin or os.environ.get(ENV_ORIGIN) or None)

    def verifier(self) -> Verifier:
        """The public key."""
        return self.signer().verifier

    def existing_verifier(self) -> Verifier | None:
        """The public key when the key file exists (never created here: a read-only server)."""
        if not self.key_path.exists():
            return None
        return self.verifier()  # the file exists: nothing is created

    def held(self) -> SignedCheckpoint:
        """The last signed checkpoint as kept, signing nothing and creating no key (a read-only server);
        checked against the key when its file is here. NotSigned when none was ever signed."""
        note = self.store.tree.last_checkpoint()
        if note is None:
            raise NotSigned(
                "no checkpoint has been signed for this ledger, and this server is read-only: it signs "
                "nothing (ask a server that accepts writes, or run `ledger checkpoint`)"
            )
        if self.existing_verifier() is None:
            # no key here to check it with (another node's, on PostgreSQL): the signature is the client's
            # to check against the key it pinned
            try:
                return SignedCheckpoint(unsigned_checkpoint(note), note)
            except NoteError as e:
                raise CheckpointRefused(f"the last signed checkpoint does not parse: {e.message}") from None
        signed = self.last_signed()
        assert signed is not None
        return signed

    def last_signed(self) -> SignedCheckpoint | None:
        """The last checkpoint this ledger signed, checked against its own key."""
        note = self.store.tree.last_checkpoint()
        if note is None:
            return None
        try:
            return open_checkpoint(note, self.verifier())
        except NoteError as e:
            raise CheckpointRefused(
                f"the last signed checkpoint does not verify with the ledger's key ({self.key_path}): "
                f"{e.message}; refusing to sign until an operator looks at it",
                details={"key": str(self.key_path)},
            ) from None

    def latest(self) -> SignedCheckpoint:
        """A checkpoint of the current head: the last one if the head has not moved, else a new one."""
        signer = self.signer()
        with self.store.tree.signing():
            last = self.last_signed()
            size = self.store.head().seq
            root = merkle_store.tree_root(self.store, size)
            if last is not None:
                self._check_consistent(last.checkpoint, size, root)
                if last.checkpoint.size == size:
                    return last
            note = signer.sign_note(Checkpoint(signer.name, size, root).text())
            self.store.tree.save_checkpoint(note)
            return open_checkpoint(note, signer.verifier)

    def at(self, size: int) -> SignedCheckpoint:
        """A checkpoint of exactly `size` events: the last signed one when it is that size, else one
        signed now. A larger one becomes the last signed; a smaller one is signed only once proven a
        prefix of the last, and is not kept (the last signed never goes back)."""
        signer = self.signer()
        with self.store.tree.signing():
            last = self.last_signed()
            if last is not None and last.checkpoint.size == size:
                return last
            root = merkle_store.tree_root(self.store, size)  # NotFound past the head
            if last is not None and last.checkpoint.size > size:
                self._check_prefix(last.checkpoint, size, root)
            elif last is not None:
                self._check_consistent(last.checkpoint, size, root)
            note = signer.sign_note(Checkpoint(signer.name, size, root).text())
            if last is None or last.checkpoint.size < size:
                self.store.tree.save_checkpoint(note)
            return open_checkpoint(note, signer.verifier)

    def _check_prefix(self, last: Checkpoint, size: int, root: bytes) -> None:
        """Refuse to sign `size` unless the tree of that size is a prefix of the last signed one."""
        self._check_last(last, self.store.head().seq)
        try:
            proof = merkle_store.consistency(self.store, size, last.size)
            verify_consistency(size, last.size, root, last.root, proof)
        except ProofError as e:
            raise ChainBroken(
                size,
                f"the tree of size {size} is not a prefix of the checkpoint signed at size {last.size} "
                f"({e}); refusing to sign",
            ) from None

    def _check_last(self, last: Checkpoint, head: int) -> None:
        """Refuse to sign if the events the last signed checkpoint covers are gone or changed."""
        if last.size > head:
            raise ChainBroken(
                head + 1,
                f"a checkpoint of {last.size} events was signed, but the ledger now holds {head}: "
                "it was cut off or rolled back; refusing to sign",
            )
        if merkle_store.tree_root(self.store, last.size) != last.root:
            raise ChainBroken(
                last.size,
                f"events 1..{last.size} no longer hash to the root signed for that size: the ledger "
                "was rewritten or replaced; refusing to sign",
            )

    def _check_consistent(self, last: Checkpoint, size: int, root: bytes) -> None:
        """Refuse to sign if the tree of `size` is not an extension of the last signed one."""
        self._check_last(last, size)
        try:
            proof = merkle_store.consistency(self.store, last.size, size)
            verify_consistency(last.size, size, last.root, root, proof)
        except ProofError as e:
            raise ChainBroken(
                last.size,
                f"the tree of size {size} is not consistent with the checkpoint signed at size "
                f"{last.size} ({e}); refusing to sign",
            ) from None


def read_vkey_arg(value: str) -> Verifier:
    """A --key argument: the vkey string itself, or a file holding it."""
    text = value
    if not (value.count("+") >= 2 and "\n" not in value.strip()):
        try:
            text = Path(value).read_text()
        except OSError as e:
            raise InvalidEvent("--key", f"neither a verifier key nor a readable file: {e}") from None
    try:
        return parse_vkey(text)
    except NoteError as e:
        raise InvalidEvent("--key", e.message) from None

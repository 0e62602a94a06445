"""Witness cosignatures (ledger/cosign.py): C2SP tlog-cosignature cosignature/v1 keys, lines and checks.

No published vector signs a known message with a known cosignature/v1 key: C2SP's examples give
signature lines without the witness's key, and transparency-dev/formats' note_cosigv1_test.go signs
with keys generated at test time. What is published is checked here (a native 0x04 vkey, and the
timestamps inside two published blobs); the signing itself is pinned by a vector built from the spec's
byte layout (fixed seed, fixed time), assembled by hand next to the implementation's answer.
"""

from __future__ import annotations

import base64
import hashlib
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from ledger.tlog.checkpoint import Checkpoint, Signer
from ledger.tlog.checkpoint_notes import NoteError
from ledger.tlog.cosign import (
    BLOB_SIZE,
    COSIGNATURE_V1,
    MAX_TIMESTAMP,
    WitnessSigner,
    WitnessVerifier,
    add_cosignatures,
    cosignatures,
    load_or_create_witness_key,
    parse_cosignature,
    parse_witness_vkey,
    signed_message,
)

SEED = bytes(range(32))
NAME = "witness.example/w1"
TIME = 1679315147  # the time of tlog-cosignature's example message
# tlog-cosignature's example checkpoint text
TEXT = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
VKEY = "witness.example/w1+e75f6532+BAOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
LINE = (
    "\u2014 witness.example/w1 519lMgAAAABkGFDLBuRDazBLVac2NE+Y+IjbjQOcXLfF9CSDZVUIoS83rE1nFZsVE8YiWV6N"
    "gr7lV8H6bdoBQGP/l73euDMQ9k+bBQ==\n"
)
# transparency-dev/formats note_cosigv1_test.go: a native cosignature/v1 (0x04) verifier key
REMORA_VKEY = "remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2"
# ...and a cosignature blob whose timestamp it reads as 1727964367
FORMATS_BLOB = (
    "ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA=="
)
# tlog-cosignature's example cosignature line, whose time is that of its example message
SPEC_BLOB = (
    "jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA=="
)
# a plain Ed25519 (0x01) signature blob from the same Go test: 68 bytes, no timestamp
PLAIN_BLOB = "eQjRQm6eSKzFoiYalgwCPXu2y3ijtg68is9M46JKxuZB+dRfTmeQeDBoXnvxZx2ugnkyV+MUMLXpWs1hPb/W/4xkNQY="


def key(seed: bytes) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(seed)


def signer() -> WitnessSigner:
    return WitnessSigner(NAME, Ed25519PrivateKey.from_private_bytes(SEED))


def log_note(text: str = TEXT) -> str:
    """TEXT signed by the log (the origin's own key), as a witness receives it."""
    return Signer("example.com/behind-the-sofa", key(bytes(32))).sign_note(text)


def test_the_vector_built_from_the_spec_layout_is_reproduced_byte_for_byte() -> None:
    private = Ed25519PrivateKey.from_private_bytes(SEED)
    public = private.public_key().public_bytes_raw()
    # by hand, from tlog-cosignature: key ID, u64 big-endian time, Ed25519 over header + time + text
    key_id = hashlib.sha256(NAME.encode() + b"\n\x04" + public).digest()[:4]
    message = b"cosignature/v1\ntime 1679315147\n" + TEXT.encode()
    blob = key_id + TIME.to_bytes(8, "big") + private.sign(message)
    assert signed_message(TEXT, TIME) == message
    assert f"\u2014 {NAME} {base64.b64encode(blob).decode()}\n" == LINE
    assert signer().cosign(TEXT, TIME) == LINE  # Ed25519 is deterministic
    typed_key = base64.b64encode(bytes([0x04]) + public).decode()
    assert signer().vkey == VKEY == f"{NAME}+{key_id.hex()}+{typed_key}"
    assert parse_witness_vkey(VKEY) == signer().verifier
    assert cosignatures(log_note() + LINE, [signer().verifier]) == {VKEY: TIME}


def test_the_published_native_vkey_parses() -> None:
    v = parse_witness_vkey(REMORA_VKEY)
    assert (v.name, v.hash.hex(), len(v.public)) == ("remora.n621.de", "da77ade7", 32)
    assert v.vkey == REMORA_VKEY


@pytest.mark.parametrize(
    ("blob", "timestamp"),
    [pytest.param(FORMATS_BLOB, 1727964367, id="transparency-dev"), pytest.param(SPEC_BLOB, TIME, id="c2sp")],
)
def test_published_blobs_carry_their_timestamps(blob: str, timestamp: int) -> None:
    assert parse_cosignature(blob).timestamp == timestamp


def test_a_plain_ed25519_blob_is_not_a_cosignature() -> None:
    with pytest.raises(NoteError, match=f"68 bytes, not {BLOB_SIZE}"):
        parse_cosignature(PLAIN_BLOB)


def _blob(line: str) -> bytes:
    return base64.b64decode(line.split(" ")[2])


LATER = (TIME + 1).to_bytes(8, "big")


def _with_blob(blob: bytes) -> str:
    return f"\u2014 {NAME} {base64.b64encode(blob).decode()}\n"


TAMPERS: list[Any] = [
    pytest.param(lambda note, line: note.replace("20852163", "20852164") + line, id="text-altered"),
    pytest.param(
        lambda note, line: note + _with_blob(_blob(line)[:4] + LATER + _blob(line)[12:]),
        id="timestamp-altered",
    ),
    pytest.param(lambda note, line: note + _with_blob(b"\0\0\0\0" + _blob(line)[4:]), id="wrong-key-hash"),
    pytest.param(lambda note, line: note + _with_blob(_blob(line)[:-1]), id="truncated-blob"),
    pytest.param(lambda note, line: note + _with_blob(_blob(line)[:-1] + b"\0"), id="signature-altered"),
    pytest.param(lambda note, line: note + line.replace(NAME, "witness.example/w2"), id="other-name"),
    pytest.param(lambda note, line: note + line.replace(" 519l", " !19l"), id="bad-base64"),
]


@pytest.mark.parametrize("damage", TAMPERS)
def test_a_damaged_cosignature_is_not_counted(damage: Any) -> None:
    note = damage(log_note(), LINE)
    assert cosignatures(note, [signer().verifier]) == {}


def test_unknown_lines_are_ignored_and_every_known_witness_counted() -> None:
    other = WitnessSigner("witness.example/w2", Ed25519PrivateKey.from_private_bytes(bytes(32)))
    stranger = WitnessSigner("stranger", Ed25519PrivateKey.generate())
    note = log_note() + LINE + stranger.cosign(TEXT, 5) + other.cosign(TEXT, 7) + "\u2014 junk\n"
    assert cosignatures(note, [signer().verifier, other.verifier]) == {VKEY: TIME, other.vkey: 7}


def test_the_log_signature_is_not_a_cosignature_even_with_the_same_key() -> None:
    # the same Ed25519 key as a 0x01 note signer: a different key ID, a different message
    plain = Signer(NAME, Ed25519PrivateKey.from_private_bytes(SEED)).sign_note(TEXT)
    assert cosignatures(plain, [signer().verifier]) == {}
    assert plain.split("\n")[-2].split(" ")[2][:8] != LINE.split(" ")[2][:8]


@given(text_size=st.integers(0, 2**40), timestamp=st.integers(0, MAX_TIMESTAMP))
def test_cosign_then_verify_round_trips(text_size: int, timestamp: int) -> None:
    text = Checkpoint("log.example/a", text_size, bytes(32)).text()
    note = Signer("log.example/a", Ed25519PrivateKey.from_private_bytes(bytes(32))).sign_note(text)
    assert cosignatures(note + signer().cosign(text, timestamp), [signer().verifier]) == {VKEY: timestamp}


@pytest.mark.parametrize("timestamp", [-1, MAX_TIMESTAMP + 1])
def test_a_timestamp_outside_u63_is_refused(timestamp: int) -> None:
    with pytest.raises(NoteError, match="not in 0..2\\^63-1"):
        signer().cosign(TEXT, timestamp)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param(TEXT.rstrip("\n"), "ends with a newline", id="no-final-newline"),
        pytest.param(TEXT + "\nextra\n", "no blank line", id="blank-line"),
    ],
)
def test_cosign_refuses_what_is_not_a_note_text(text: str, reason: str) -> None:
    with pytest.raises(NoteError, match=reason):
        signer().cosign(text, TIME)


BAD_VKEYS: list[Any] = [
    pytest.param("witness+e75f6532", "is <name>\\+<hex key hash>\\+<base64 key>", id="two-parts"),
    pytest.param(VKEY.replace("+BAOh", "+!AOh"), "bad hex or base64", id="bad-base64"),
    pytest.param(VKEY.replace("e75f6532", "E75F6532"), "8 lowercase hex digits", id="uppercase-hash"),
    pytest.param(VKEY.replace("e75f6532", "e75f65"), "8 lowercase hex digits", id="short-hash"),
    pytest.param(VKEY.replace("e75f6532", "00000000"), "does not match", id="wrong-hash"),
    pytest.param("witness.example/w2" + VKEY[len(NAME) :], "does not match", id="other-name"),
    pytest.param(Signer(NAME, key(SEED)).verifier.vkey, "0x04", id="type-0x01"),
    pytest.param("bad name+e75f6532+BAOh", "bad witness name", id="space-in-name"),
]


@pytest.mark.parametrize(("vkey", "reason"), BAD_VKEYS)
def test_a_bad_vkey_says_why(vkey: str, reason: str) -> None:
    with pytest.raises(NoteError, match=reason):
        parse_witness_vkey(vkey)


def test_the_key_file_is_made_once_private_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "witness.key"
    first = load_or_create_witness_key(path, NAME)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith(f"PRIVATE+KEY+{NAME}+{first.verifier.hash.hex()}+")
    assert base64.b64decode(path.read_text().strip().split("+", 4)[4])[0] == COSIGNATURE_V1
    assert load_or_create_witness_key(path).vkey == first.vkey
    assert WitnessSigner.parse(first.skey).vkey == first.vkey
    with pytest.raises(NoteError, match="a new witness name needs a new key file"):
        load_or_create_witness_key(path, "witness.example/other")


def test_a_ledger_key_file_is_not_a_witness_key(tmp_path: Path) -> None:
    path = tmp_path / "ledger.key"
    path.write_text(Signer(NAME, Ed25519PrivateKey.generate()).skey + "\n")
    with pytest.raises(NoteError, match="not a cosignature/v1 Ed25519 seed"):
        load_or_create_witness_key(path)


def test_add_cosignatures_appends_each_line_once() -> None:
    other = WitnessSigner("witness.example/w2", key(bytes(32))).cosign(TEXT, 9)
    note = add_cosignatures(log_note(), [LINE, LINE.rstrip("\n"), other])
    assert note == log_note() + LINE + other
    assert add_cosignatures(note, [LINE, other]) == note


@pytest.mark.parametrize(
    ("note", "lines", "reason"),
    [
        pytest.param(TEXT, [LINE], "not a signed note", id="unsigned-note"),
        pytest.param(log_note(), ["- witness x\n"], "not a signature line", id="no-em-dash"),
        pytest.param(log_note(), [LINE + LINE], "not a signature line", id="two-lines-in-one"),
    ],
)
def test_add_cosignatures_refuses_a_bad_line(note: str, lines: list[str], reason: str) -> None:
    with pytest.raises(NoteError, match=reason):
        add_cosignatures(note, lines)


def test_a_verifier_tuple_is_its_parts() -> None:
    v = signer().verifier
    assert isinstance(v, WitnessVerifier) and WitnessVerifier(*v) == v

"""The hash chain: blake3 over the previous hash and the canonical event body."""

from __future__ import annotations

import msgspec
from blake3 import blake3

GENESIS = "0" * 64


class Body(msgspec.Struct, frozen=True):
    """body(e) of ledger-v1.md; fields in code-point order so the encoding is canonical."""

    data: msgspec.Raw
    event_id: str
    observed_at: str
    recorded_at: str
    seq: int
    stream: str
    stream_version: int
    type: str


_ENCODER = msgspec.json.Encoder()


def body_bytes(
    *,
    data: bytes,
    event_id: str,
    observed_at: str,
    recorded_at: str,
    seq: int,
    stream: str,
    stream_version: int,
    type: str,
) -> bytes:
    """canonical({data, event_id, observed_at, recorded_at, seq, stream, stream_version, type})."""
    return _ENCODER.encode(
        Body(msgspec.Raw(data), event_id, observed_at, recorded_at, seq, stream, stream_version, type)
    )


def link_hash(prev_hash: str, body: bytes) -> str:
    """hash(e) = blake3(bytes.fromhex(prev_hash) || body(e)).hexdigest()."""
    return blake3(bytes.fromhex(prev_hash) + body).hexdigest()

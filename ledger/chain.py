"""The hash chain: blake3 over the previous hash and the canonical event body."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from blake3 import blake3

from .instants import parse_ts

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


def row_body(row: Sequence[Any]) -> bytes:
    """body(e) of a stored row (the column order of SQLiteStore.iter_chain)."""
    seq, event_id, stream, version, type_, observed_at, recorded_at, data = row[:8]
    return body_bytes(
        data=data.encode(),
        event_id=event_id,
        observed_at=observed_at,
        recorded_at=recorded_at,
        seq=seq,
        stream=stream,
        stream_version=version,
        type=type_,
    )


def row_break(
    row: Sequence[Any], *, prev: str, last_seq: int, last_recorded: int, version_before: int
) -> tuple[str | None, bytes]:
    """Why a stored row does not follow (prev, last_seq, last_recorded) in the chain, and its body."""
    seq, _, stream, version, _, observed_at, recorded_at, _, prev_hash, h, o_us, r_us = row
    body = row_body(row)
    if seq != last_seq + 1:
        return f"seq {seq} follows {last_seq}: the sequence has a gap or is reordered", body
    if prev_hash != prev:
        return "prev_hash does not match the previous event's hash (reordered or removed events)", body
    if version != version_before + 1:
        return f"stream_version {version} of {stream} does not follow {version_before}", body
    if link_hash(prev, body) != h:
        return "stored bytes do not match the stored hash (the event was altered)", body
    if r_us < last_recorded or parse_ts(recorded_at) != r_us:
        return "recorded_at goes backwards or does not match its index column", body
    if parse_ts(observed_at) != o_us:
        return "observed_us index column does not match observed_at", body
    return None, body

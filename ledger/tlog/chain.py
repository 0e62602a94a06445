"""The hash chain: blake3 over the previous hash and the canonical event body."""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec
from blake3 import blake3

from ledger.model.events import ChainLink, StoredEvent
from ledger.model.instants import parse_ts

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


# Canonical JSON escapes only '"', '\\' and the control characters in a string: a string without them
# encodes as itself between quotes, so a body can be joined from the stored columns as they are.
_VERBATIM = re.compile(r'[^"\\\x00-\x1f]*')


def envelope_body(e: StoredEvent) -> bytes:
    """body(e) of ledger-v1.md from a stored envelope: the bytes both the chain and the tree hash."""
    text = f"{e.event_id}{e.observed_at}{e.recorded_at}{e.stream}{e.type}"
    if type(e.seq) is int and type(e.stream_version) is int and _VERBATIM.fullmatch(text):
        # the same bytes as body_bytes (tests/ledger/tlog/test_chain.py holds them equal), joined without
        # an encoder
        tail = (
            f',"event_id":"{e.event_id}","observed_at":"{e.observed_at}","recorded_at":"{e.recorded_at}",'
            f'"seq":{e.seq},"stream":"{e.stream}","stream_version":{e.stream_version},"type":"{e.type}"}}'
        )
        return b'{"data":' + e.data + tail.encode()
    return body_bytes(
        e.data, e.event_id, e.observed_at, e.recorded_at, e.seq, e.stream, e.stream_version, e.type
    )


def link_hash(prev_hash: str, body: bytes) -> str:
    """hash(e) = blake3(bytes.fromhex(prev_hash) || body(e)).hexdigest()."""
    return blake3(bytes.fromhex(prev_hash) + body).hexdigest()


class Follower:
    """The chain as walked so far: checks that each next stored event follows it."""

    def __init__(
        self,
        prev: str = GENESIS,
        last_seq: int = 0,
        last_recorded: int = -1,
        version_before: Callable[[str], int] | None = None,
    ) -> None:
        self.prev, self.last_seq, self.last_recorded = prev, last_seq, last_recorded
        self.versions: dict[str, int] = {}
        # a walk that starts mid-chain asks where a stream stood before it
        self._version_before = version_before

    def version(self, stream: str) -> int:
        """The stream's version at the end of the chain walked so far."""
        if stream not in self.versions:
            self.versions[stream] = self._version_before(stream) if self._version_before else 0
        return self.versions[stream]

    def check(self, link: ChainLink) -> tuple[str | None, bytes]:
        """Why `link` does not follow the chain walked so far (None when it does), and its body."""
        e = link.event
        body = envelope_body(e)
        if e.seq != self.last_seq + 1:
            return f"seq {e.seq} follows {self.last_seq}: the sequence has a gap or is reordered", body
        if e.prev_hash != self.prev:
            return "prev_hash does not match the previous event's hash (reordered or removed events)", body
        version_before = self.version(e.stream)
        if e.stream_version != version_before + 1:
            return f"stream_version {e.stream_version} of {e.stream} does not follow {version_before}", body
        if link_hash(self.prev, body) != e.hash:
            return "stored bytes do not match the stored hash (the event was altered)", body
        if link.recorded_us < self.last_recorded or parse_ts(e.recorded_at) != link.recorded_us:
            return "recorded_at goes backwards or does not match its index column", body
        if parse_ts(e.observed_at) != link.observed_us:
            return "observed_us index column does not match observed_at", body
        return None, body

    def take(self, link: ChainLink) -> None:
        """Make `link` (checked) the end of the chain walked."""
        e = link.event
        self.versions[e.stream] = e.stream_version
        self.prev, self.last_seq, self.last_recorded = e.hash, e.seq, link.recorded_us

"""Compressed streams (gzip, zstandard) decompressed a small piece at a time, within caps.

A few kilobytes of gzip or zstandard can stand for gigabytes: what a file decompresses to is capped in
bytes and in times its compressed size (`Inflation`), and the refusal names the setting that says so.
Whatever the file, what is held decompressed at once stays a few MiB: gzip is asked for a chunk at a
time, and zstandard is fed a small piece of its input at a time, since one of its blocks of 4 bytes
may stand for 128 KiB.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, BinaryIO

import zstandard

from ledger.model.errors import InvalidEvent

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 16
# zstandard input fed at once: no block expands past 32,768 times its size, so one piece gives at
# most 8 MiB
ZSTD_PIECE = 256
# under this many decompressed bytes a stream is never refused for its ratio: a small file's ratio
# says nothing (a 100-byte header may stand for kilobytes)
RATIO_FLOOR = 1 << 20

# what a body sent to the server may decompress to (LEDGER_MAX_DECOMPRESSED, LEDGER_MAX_EXPANSION):
# no more than a plain body may hold (LEDGER_MAX_INGEST_BODY), since reading costs per byte and per
# line decompressed (a CSV of blank rows costs about 0.3 s of CPU a MiB), not per byte sent
SERVED_MAX_BYTES = 512 << 20
SERVED_MAX_RATIO = 100
# what a file the operator names on the command line may (ledger import, ledger ingest): a bulk load is
# tens of gigabytes; the ratio stays, real text compresses 3 to 30 times
LOCAL_MAX_BYTES = 64 << 30
LOCAL_MAX_RATIO = 100


@dataclass(frozen=True)
class Inflation:
    """How far a compressed stream may expand, and the names of the settings that say so."""

    max_bytes: int = SERVED_MAX_BYTES
    max_ratio: float = SERVED_MAX_RATIO
    bytes_setting: str = "LEDGER_MAX_DECOMPRESSED"
    ratio_setting: str = "LEDGER_MAX_EXPANSION"


SERVED = Inflation()
LOCAL = Inflation(
    LOCAL_MAX_BYTES, LOCAL_MAX_RATIO, "--max-decompressed, LEDGER_IMPORT_MAX_DECOMPRESSED",
    "--max-expansion, LEDGER_IMPORT_MAX_EXPANSION",
)  # fmt: skip


def compression(head: bytes) -> str | None:
    """ "gzip", "zstd" or None (plain), by a file's first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


class _Zstd(io.RawIOBase):
    """A zstandard stream of one or more frames, decompressed as read; a stream that ends inside a
    frame raises ZstdError (zstandard's own readers end there quietly, a cut file read as whole)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._codec = zstandard.ZstdDecompressor()
        self._frame = self._codec.decompressobj()
        self._input = b""  # compressed bytes read and not yet fed
        self._pending = b""  # decompressed bytes, handed out from `_at` on
        self._at = 0
        self._started = False  # the current frame has had input

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._at == len(self._pending):
            if not self._input:
                self._input = self._raw.read(CHUNK)
                if not self._input:
                    if self._started and not self._frame.eof:
                        raise zstandard.ZstdError("the stream ends inside a frame (cut off)")
                    return 0
            if self._frame.eof:  # the next frame of a multi-frame file
                self._frame = self._codec.decompressobj()
            self._started = True
            piece, self._input = self._input[:ZSTD_PIECE], self._input[ZSTD_PIECE:]
            self._pending, self._at = self._frame.decompress(piece), 0
            if self._frame.eof:
                self._input = self._frame.unused_data + self._input
        n = min(len(b), len(self._pending) - self._at)
        b[:n] = memoryview(self._pending)[self._at : self._at + n]
        self._at += n
        return n


class _Capped(io.RawIOBase):
    """A decompressed stream refused, as InvalidEvent on "file", once it passes its caps: in bytes,
    or in times the compressed bytes read so far (`stored()`)."""

    def __init__(self, inner: IO[bytes], kind: str, stored: Callable[[], int], caps: Inflation) -> None:
        self._inner = inner
        self._kind = kind
        self._stored = stored
        self._caps = caps
        self.out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = self._inner.readinto(b)  # type: ignore[attr-defined]
        self.out += n or 0
        caps = self._caps
        if self.out > caps.max_bytes:
            raise InvalidEvent(
                "file",
                f"a {self._kind} stream that decompresses to more than {caps.max_bytes:,} bytes "
                f"(the limit {caps.bytes_setting})",
            )
        stored = self._stored()
        if self.out > RATIO_FLOOR and self.out > caps.max_ratio * stored:
            raise InvalidEvent(
                "file",
                f"a {self._kind} stream that expands more than {caps.max_ratio:g} times its size "
                f"({self.out:,} bytes from {stored:,} so far; the limit {caps.ratio_setting})",
            )
        return int(n or 0)


def decompressed(stored: IO[bytes], kind: str, counted: Callable[[], int], caps: Inflation) -> BinaryIO:
    """The decompressed bytes of `stored` (a buffered stream of a `kind` file), read a chunk at a time
    within `caps`; `counted()` tells how many bytes of `stored` were read so far."""
    inner: IO[bytes]
    if kind == "gzip":
        inner = gzip.GzipFile(fileobj=stored, mode="rb")  # type: ignore[assignment]
    elif kind == "zstd":
        inner = _Zstd(stored)  # type: ignore[assignment]
    else:
        raise ValueError(f"not a compression: {kind!r}")
    return io.BufferedReader(_Capped(inner, kind, counted, caps), buffer_size=CHUNK)  # type: ignore[return-value]

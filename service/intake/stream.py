"""A file as a stream of bytes and of lines: gzip and zstandard read as they are published, memory flat.

`open_stream(path)` gives the file's bytes, decompressed when its first bytes are gzip's or zstandard's
magic (a `.gz` or `.zst` file); `iter_lines(stream)` its lines one at a time, numbered as
`bytes.splitlines` numbers them, none longer than a bound. A damaged stream is an `InvalidEvent` on
"file", raised where it is read.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, BinaryIO

import zstandard

from ledger.model.errors import InvalidEvent

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# A line longer than this is refused rather than held: one envelope is a few kB
MAX_LINE = 64 * 1024 * 1024
_CHUNK = 1 << 16
_DAMAGED = (EOFError, gzip.BadGzipFile, zlib.error, zstandard.ZstdError)


class _Counting(io.RawIOBase):
    """The file's bytes as stored (compressed, for a compressed file), counted for progress."""

    def __init__(self, raw: IO[bytes], counted: Callable[[int], None] | None) -> None:
        self._raw = raw
        self._counted = counted

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = self._raw.readinto(b)  # type: ignore[attr-defined]
        if n and self._counted is not None:
            self._counted(n)
        return int(n or 0)


class _Zstd(io.RawIOBase):
    """A zstandard stream of one or more frames; one cut off before its frame ends is damaged (the
    library's own reader ends such a stream quietly)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._codec = zstandard.ZstdDecompressor()
        self._frame = self._codec.decompressobj()
        self._in_frame = False
        self._out = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._pos >= len(self._out):
            data = self._raw.read(_CHUNK)
            if not data:
                if self._in_frame:
                    raise zstandard.ZstdError("the stream ends inside a frame (cut off)")
                return 0
            self._out, self._pos = self._feed(data), 0
        n = min(len(b), len(self._out) - self._pos)
        b[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n

    def _feed(self, data: bytes) -> bytes:
        out = []
        while data:
            self._in_frame = True
            out.append(self._frame.decompress(data))
            if not self._frame.eof:
                break
            # a frame ended: what follows it is the next frame
            data, self._in_frame = self._frame.unused_data, False
            self._frame = self._codec.decompressobj()
        return b"".join(out)


def compression(head: bytes) -> str | None:
    """ "gzip", "zstd" or None (plain), by a file's first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


@contextmanager
def open_stream(
    path: str | os.PathLike[str], counted: Callable[[int], None] | None = None, at: int = 0
) -> Iterator[BinaryIO]:
    """The file's bytes from offset `at` of its content, decompressed when it is gzip or zstandard
    (known by its magic, not its name); `counted(n)` is told of every n bytes read from the file itself
    (compressed bytes, when it is; a plain file's first `at` bytes are skipped unread)."""
    with open(path, "rb") as f:
        kind = compression(f.read(4))
        f.seek(at if kind is None else 0)
        if kind is None and counted is not None:
            counted(at)
        stored = io.BufferedReader(_Counting(f, counted), buffer_size=_CHUNK)
        stream: BinaryIO
        if kind == "gzip":
            stream = gzip.GzipFile(fileobj=stored, mode="rb")  # type: ignore[assignment]
        elif kind == "zstd":
            stream = io.BufferedReader(_Zstd(stored), buffer_size=_CHUNK)  # type: ignore[assignment]
        else:
            yield stored  # type: ignore[misc]
            return
        if read_exactly(stream, at, lambda _: None) < at:
            raise InvalidEvent("file", f"holds fewer than {at} bytes")
        yield stream


def read_exactly(stream: IO[bytes], n: int, take: Callable[[bytes], object]) -> int:
    """Read the next `n` bytes of `stream` a chunk at a time, each handed to `take`; how many there were
    (fewer at the end of the stream)."""
    done = 0
    while done < n:
        data = _read(stream, min(_CHUNK, n - done))
        if not data:
            break
        take(data)
        done += len(data)
    return done


def _read(stream: IO[bytes], n: int) -> bytes:
    try:
        return stream.read(n)
    except _DAMAGED as e:
        raise InvalidEvent("file", f"a damaged compressed stream ({e or type(e).__name__})") from None


def iter_lines(stream: IO[bytes], first: int = 1, max_line: int = MAX_LINE) -> Iterator[tuple[int, bytes]]:
    """(number, line with its line break) for each line of `stream`, numbered from `first`; lines end at
    LF, CR or CRLF, as `bytes.splitlines` ends them. A line longer than `max_line` is refused."""
    n = first
    readline = stream.readline
    while True:
        try:
            line = readline(max_line + 1)
        except _DAMAGED as e:
            raise InvalidEvent(
                "file", f"a damaged compressed stream at line {n} ({e or type(e).__name__})"
            ) from None
        if not line:
            return
        if len(line) > max_line:
            raise InvalidEvent(f"line {n}", f"longer than {max_line} bytes")
        if b"\r" in line:  # rare: a CR alone also ends a line
            for part in line.splitlines(keepends=True):
                yield n, part
                n += 1
            continue
        yield n, line
        n += 1

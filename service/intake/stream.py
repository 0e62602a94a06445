"""A file as a stream of bytes and of lines: gzip and zstandard read as they are published, memory flat.

`open_stream(path)` gives the file's bytes, decompressed when its first bytes are gzip's or zstandard's
magic (a `.gz` or `.zst` file) within caps (inflate.py); `iter_lines(stream)` its lines one at a time,
numbered as `bytes.splitlines` numbers them, none longer than a bound, a run of blank lines at once. A
damaged stream, or one past its caps, is an `InvalidEvent` on "file", raised where it is read.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, BinaryIO

import zstandard

from ledger.model.errors import InvalidEvent
from service.intake.inflate import CHUNK, LOCAL, Inflation, compression, decompressed

# A line longer than this is refused rather than held: one envelope is a few kB
MAX_LINE = 64 * 1024 * 1024
_CHUNK = CHUNK
_DAMAGED = (EOFError, gzip.BadGzipFile, zlib.error, zstandard.ZstdError)
# what a blank line is made of (bytes.isspace's whitespace)
_BLANK = b" \t\n\r\x0b\x0c"
# the lines of what a readline gave that holds a CR: a run of up to 4,096 blank lines, or one line
_PARTS = re.compile(rb"(?:[ \t\x0b\x0c]*(?:\r\n|\r|\n)){1,4096}|[^\r\n]*(?:\r\n|\r|\n)?")


class _Counting(io.RawIOBase):
    """The file's bytes as stored (compressed, for a compressed file), counted for progress and for
    the expansion ratio."""

    def __init__(self, raw: IO[bytes], counted: Callable[[int], None] | None) -> None:
        self._raw = raw
        self._counted = counted
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = int(self._raw.readinto(b) or 0)  # type: ignore[attr-defined]
        self.total += n
        if n and self._counted is not None:
            self._counted(n)
        return n


@contextmanager
def open_stream(
    path: str | os.PathLike[str],
    counted: Callable[[int], None] | None = None,
    at: int = 0,
    caps: Inflation = LOCAL,
) -> Iterator[BinaryIO]:
    """The file's bytes from offset `at` of its content, decompressed when it is gzip or zstandard
    (known by its magic, not its name) within `caps`; `counted(n)` is told of every n bytes read from
    the file itself (compressed bytes, when it is; a plain file's first `at` bytes are skipped unread)."""
    with open(path, "rb") as f:
        kind = compression(f.read(4))
        f.seek(at if kind is None else 0)
        if kind is None and counted is not None:
            counted(at)
        counting = _Counting(f, counted)
        stored = io.BufferedReader(counting, buffer_size=_CHUNK)
        if kind is None:
            yield stored  # type: ignore[misc]
            return
        stream = decompressed(stored, kind, lambda: counting.total, caps)
        if read_exactly(stream, at, lambda _: None) < at:
            raise InvalidEvent("file", f"holds fewer than {at} bytes")
        yield stream


def read_exactly(stream: IO[bytes], n: int, take: Callable[[bytes], None]) -> int:
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
    LF, CR or CRLF, as `bytes.splitlines` ends them. A line longer than `max_line` is refused. Blank
    lines (nothing but whitespace) may come several at once, as one item numbered as the last of
    them: a file of many blank lines costs a few operations per buffer read, not per line."""
    n = first
    readline = stream.readline
    peek = getattr(stream, "peek", None)
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
        if peek is not None and line.isspace():
            line += _blank_run(stream, peek, n)
            count = _line_count(line)
            yield n + count - 1, line
            n += count
            continue
        if b"\r" in line:  # rare: a CR alone also ends a line
            for part in _PARTS.finditer(line):
                got = part.group()
                count = _line_count(got) if got.isspace() else 1
                if got:
                    yield n + count - 1, got
                    n += count
            continue
        yield n, line
        n += 1


def _blank_run(stream: IO[bytes], peek: Callable[[int], bytes], n: int) -> bytes:
    """The whole blank lines that follow in what `stream` holds buffered (up to one buffer's worth),
    read off it; a CR at the buffer's end is left, as an LF may follow it."""
    try:
        ahead = peek(_CHUNK)[:_CHUNK]
    except _DAMAGED as e:
        raise InvalidEvent(
            "file", f"a damaged compressed stream at line {n} ({e or type(e).__name__})"
        ) from None
    blank = len(ahead) - len(ahead.lstrip(_BLANK))
    if blank == len(ahead) and ahead.endswith(b"\r"):
        blank -= 1
    end = max(ahead.rfind(b"\n", 0, blank), ahead.rfind(b"\r", 0, blank)) + 1
    return _read(stream, end) if end else b""


def _line_count(blank: bytes) -> int:
    """How many lines `bytes.splitlines` makes of `blank` (the last one may lack its line break)."""
    breaks = blank.count(b"\n") + blank.count(b"\r") - blank.count(b"\r\n")
    return breaks + (not blank.endswith((b"\n", b"\r")))

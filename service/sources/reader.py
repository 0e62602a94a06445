"""Opening a source file for streaming: bytes counted for a progress bar, gzip by its magic, UTF-8."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, BinaryIO

Progress = Callable[[int], None]
Input = str | os.PathLike[str] | bytes | IO[bytes]
_BUFFER = 1 << 16


class Digest:
    """The sha256 and size of a file's bytes as given (compressed, for gzip): what a receipt names."""

    def __init__(self) -> None:
        self._sha256 = hashlib.sha256()
        self.size = 0

    def update(self, data: bytes) -> None:
        """Take the next bytes of the file."""
        self._sha256.update(data)
        self.size += len(data)

    @property
    def sha256(self) -> str:
        """The hex digest of the bytes taken so far."""
        return self._sha256.hexdigest()


class _Counting(io.RawIOBase):
    """Reports how many bytes of the underlying file have been read (compressed bytes for gzip)."""

    def __init__(self, raw: IO[bytes], progress: Progress | None, digest: Digest | None = None) -> None:
        self._raw = raw
        self._progress = progress
        self._digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        if n and self._progress is not None:
            self._progress(n)
        if n and self._digest is not None:
            self._digest.update(data)
        return n


def input_size(source: Input) -> int | None:
    """The byte size of a path or bytes input (None for a stream)."""
    if isinstance(source, bytes):
        return len(source)
    if isinstance(source, str | os.PathLike):
        return os.path.getsize(source)
    return None


@contextmanager
def open_text(
    source: Input, progress: Progress | None = None, errors: str = "strict", digest: Digest | None = None
) -> Iterator[IO[str]]:
    """The input as text read incrementally (a BOM is dropped, newlines kept as in the file); `digest`
    takes every byte of it, those the reader left unread too once the block ends."""
    with ExitStack() as stack:
        raw: IO[bytes]
        if isinstance(source, bytes):
            raw = io.BytesIO(source)
        elif isinstance(source, str | os.PathLike):
            raw = stack.enter_context(open(source, "rb"))  # noqa: SIM115 - closed by the stack
        else:
            raw = source  # the caller's stream: read, never closed here
        counting = _Counting(raw, progress, digest)
        buffered = io.BufferedReader(counting, buffer_size=_BUFFER)
        binary: BinaryIO = buffered  # type: ignore[assignment]
        # a Crossref or OpenAlex dump is often .gz: read it as it is published
        if buffered.peek(2)[:2] == b"\x1f\x8b":
            binary = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors=errors, newline="")
        try:
            yield text
            # a parser may stop at the end of its JSON value: the bytes after it are the file's too
            while digest is not None and counting.read(_BUFFER):
                pass
        finally:
            text.detach()

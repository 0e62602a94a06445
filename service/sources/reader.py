"""Opening a source file for streaming: bytes counted for a progress bar, gzip by its magic, UTF-8."""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, BinaryIO

Progress = Callable[[int], None]
Input = str | os.PathLike[str] | bytes | IO[bytes]
_BUFFER = 1 << 16


class _Counting(io.RawIOBase):
    """Reports how many bytes of the underlying file have been read (compressed bytes for gzip)."""

    def __init__(self, raw: IO[bytes], progress: Progress | None) -> None:
        self._raw = raw
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        if n and self._progress is not None:
            self._progress(n)
        return n


def input_size(source: Input) -> int | None:
    """The byte size of a path or bytes input (None for a stream)."""
    if isinstance(source, bytes):
        return len(source)
    if isinstance(source, str | os.PathLike):
        return os.path.getsize(source)
    return None


@contextmanager
def open_text(source: Input, progress: Progress | None = None, errors: str = "strict") -> Iterator[IO[str]]:
    """The input as text read incrementally (a BOM is dropped, newlines kept as in the file)."""
    with ExitStack() as stack:
        raw: IO[bytes]
        if isinstance(source, bytes):
            raw = io.BytesIO(source)
        elif isinstance(source, str | os.PathLike):
            raw = stack.enter_context(open(source, "rb"))  # noqa: SIM115 - closed by the stack
        else:
            raw = source  # the caller's stream: read, never closed here
        buffered = io.BufferedReader(_Counting(raw, progress), buffer_size=_BUFFER)
        binary: BinaryIO = buffered  # type: ignore[assignment]
        # a Crossref or OpenAlex dump is often .gz: read it as it is published
        if buffered.peek(2)[:2] == b"\x1f\x8b":
            binary = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors=errors, newline="")
        try:
            yield text
        finally:
            text.detach()

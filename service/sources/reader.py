"""Opening a source file for streaming: bytes counted for a progress bar, gzip and zstd by their magic
numbers, UTF-8, a damaged file refused."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, BinaryIO

import zstandard

from ledger.model.errors import InvalidEvent
from service.intake.inflate import SERVED, Inflation, compression, decompressed

Progress = Callable[[int], None]
Input = str | os.PathLike[str] | bytes | IO[bytes]
_BUFFER = 1 << 16
# what a damaged zstd stream raises while it is read
ZstdError = zstandard.ZstdError


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
        self.total = 0  # bytes read so far: what the expansion ratio is taken over

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        self.total += n
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
    source: Input,
    progress: Progress | None = None,
    errors: str = "strict",
    digest: Digest | None = None,
    caps: Inflation = SERVED,
) -> Iterator[IO[str]]:
    """The input as text read incrementally (a BOM is dropped, newlines kept as in the file); `digest`
    takes every byte of it, those the reader left unread too once the block ends. A gzip or zstd
    stream is decompressed within `caps`. A damaged gzip or zstd stream read in the block, one past
    `caps`, or JSON too deep for its parser, is refused as InvalidEvent on file."""
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
        kind = compression(buffered.peek(4)[:4])
        if kind is not None:
            binary = decompressed(buffered, kind, lambda: counting.total, caps)
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors=errors, newline="")
        try:
            yield text
            # a parser may stop at the end of its JSON value: the bytes after it are the file's too
            while digest is not None and counting.read(_BUFFER):
                pass
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            # a .gz file cut short or damaged: what there is of it may parse, but it is not the file
            raise InvalidEvent(
                "file", f"a damaged gzip stream ({e or type(e).__name__}); nothing written"
            ) from None
        except ZstdError as e:
            raise InvalidEvent("file", f"a damaged zstd stream ({e}); nothing written") from None
        except RecursionError:  # the JSON parsers reading the text recurse per level of nesting
            raise InvalidEvent("file", "JSON nested too deeply to read; nothing written") from None
        finally:
            text.detach()

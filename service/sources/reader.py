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

Progress = Callable[[int], None]
Input = str | os.PathLike[str] | bytes | IO[bytes]
_BUFFER = 1 << 16
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_PIECE = 256
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


class _Zstd(io.RawIOBase):
    """A zstd stream of one or more frames, decompressed as read; a stream that ends inside a frame
    raises ZstdError (zstandard's own readers end there quietly, a truncated file read as whole). The
    input is fed 256 bytes at a time: no zstd block expands past 32,768 times its size, so what is
    held decompressed stays near 8 MiB however the file was made."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._input = b""  # compressed bytes read and not yet fed
        self._pending = b""  # decompressed bytes, handed out from `_at` on
        self._at = 0
        self._started = False  # the current frame has had input

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._at == len(self._pending):
            if not self._input:
                self._input = self._raw.read(_BUFFER)
                if not self._input:
                    if self._started and not self._frame.eof:
                        raise ZstdError("the stream ends inside a frame")
                    return 0
            if self._frame.eof:  # the next frame of a multi-frame file
                self._frame = zstandard.ZstdDecompressor().decompressobj()
            self._started = True
            piece, self._input = self._input[:_ZSTD_PIECE], self._input[_ZSTD_PIECE:]
            self._pending, self._at = self._frame.decompress(piece), 0
            if self._frame.eof:
                self._input = self._frame.unused_data + self._input
        n = min(len(b), len(self._pending) - self._at)
        b[:n] = memoryview(self._pending)[self._at : self._at + n]
        self._at += n
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
    takes every byte of it, those the reader left unread too once the block ends. A damaged gzip or
    zstd stream read in the block, or JSON too deep for its parser, is refused as InvalidEvent on file."""
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
        elif buffered.peek(4)[:4] == ZSTD_MAGIC:
            binary = io.BufferedReader(_Zstd(buffered), buffer_size=_BUFFER)  # type: ignore[assignment]
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

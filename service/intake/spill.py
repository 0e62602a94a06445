"""What a file's check proved, kept for its append: each checked line's event, in order, in a
temporary file.

The check writes the events of each chunk it passed as one frame (msgpack of (line number, event)
pairs, compressed by zstandard); the append reads them back a frame at a time. So a file is decoded and
checked once, the append appends exactly the events the check passed (a file changed after its check is
never read again), and memory holds one frame whatever the file's size. The temporary file has no name
(it is gone when closed, or when the process is killed).
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator, Sequence

import msgspec
import zstandard

from ledger.model.events import Event

_LENGTH = struct.Struct("<I")
# zstandard's fastest level: the frames shrink several times for a fraction of a microsecond an event
_LEVEL = 1
_DECODE = msgspec.msgpack.Decoder(list[tuple[int, Event]]).decode
_ENCODE = msgspec.msgpack.Encoder().encode


class Spill:
    """The checked events of one file, appended to as checked, read back from the first."""

    def __init__(self, scratch_dir: str | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=scratch_dir, prefix="ledger-import-")  # noqa: SIM115
        self._compress = zstandard.ZstdCompressor(level=_LEVEL).compress
        self.events = 0  # events written
        self.bytes = 0  # bytes written (compressed)

    def write(self, numbered: Sequence[tuple[int, Event]]) -> None:
        """Keep these (line number, event) pairs after the ones kept before."""
        if not numbered:
            return
        frame = self._compress(_ENCODE(numbered))
        self._file.write(_LENGTH.pack(len(frame)))
        self._file.write(frame)
        self.events += len(numbered)
        self.bytes += _LENGTH.size + len(frame)

    def read(self) -> Iterator[list[tuple[int, Event]]]:
        """The kept pairs from the first, a frame (a chunk of the check) at a time."""
        self._file.flush()
        self._file.seek(0)
        decompress = zstandard.ZstdDecompressor().decompress
        read = self._file.read
        while head := read(_LENGTH.size):
            (size,) = _LENGTH.unpack(head)
            yield _DECODE(decompress(read(size)))

    def close(self) -> None:
        """Remove the temporary file."""
        self._file.close()

"""What a file's check proved, kept for its append: each checked line's event, in order, in a
temporary file.

The check writes the events of each chunk it passed as one frame (msgpack of (line number, event,
encoded) triples, compressed by zstandard: `encoded` is what the check made of the event, its data's
canonical bytes, its id and its instant, which the append takes instead of making them again); the
append reads them back a frame at a time. So a file is decoded and checked once, the append appends
exactly the events the check passed (a file changed after its check is never read again), and memory
holds one frame whatever the file's size. The temporary file has no name (it is gone when closed, or
when the process is killed).
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator, Sequence

import msgspec
import zstandard

from ledger.model.events import Event
from ledger.storage.append import Encoded

_LENGTH = struct.Struct("<I")
# zstandard's fastest level: the frames shrink several times for a fraction of a microsecond an event
_LEVEL = 1
# (line number, event, what the check made of it): read back as an `Encoded`, written from any triple
Spilled = tuple[int, Event, Encoded]
Checked = tuple[int, Event, tuple[bytes, str, int]]
_DECODE = msgspec.msgpack.Decoder(list[Spilled]).decode
_ENCODE = msgspec.msgpack.Encoder().encode


class Spill:
    """The checked events of one file, appended to as checked, read back from the first."""

    def __init__(self, scratch_dir: str | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=scratch_dir, prefix="ledger-import-")  # noqa: SIM115
        self._compress = zstandard.ZstdCompressor(level=_LEVEL).compress
        self.events = 0  # events written
        self.bytes = 0  # bytes written (compressed)

    def write(self, numbered: Sequence[Checked]) -> None:
        """Keep these (line number, event, encoded) triples after the ones kept before."""
        if not numbered:
            return
        frame = self._compress(_ENCODE(numbered))
        self._file.write(_LENGTH.pack(len(frame)))
        self._file.write(frame)
        self.events += len(numbered)
        self.bytes += _LENGTH.size + len(frame)

    def read(self) -> Iterator[list[Spilled]]:
        """The kept triples from the first, a frame (a chunk of the check) at a time."""
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

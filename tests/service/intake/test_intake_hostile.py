"""`import_file` against hostile files: a decompression bomb refused by its caps with nothing written, a
file of many blank lines read with its lines numbered right, and a stream (a FIFO) read once into a
scratch file, within the caps too."""

from __future__ import annotations

import gzip
import os
import threading
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zstandard

from ledger.model.errors import InvalidEvent
from service.intake.inflate import Inflation
from service.intake.load import import_file
from service.ledger import Ledger

from .test_intake_load import history, line

MIB = 1 << 20


@pytest.mark.parametrize(
    "packed",
    [
        zstandard.ZstdCompressor(level=3).compress(b" " * (64 * MIB)),
        gzip.compress(b"\n" * (64 * MIB)),
        gzip.compress(line(history(1)[0]) + b"\n" * (64 * MIB)),  # NDJSON, then a bomb of blank lines
    ],
    ids=["zstd-spaces", "gzip-newlines", "gzip-ndjson-newlines"],
)
def test_a_bomb_is_refused_by_its_ratio_and_nothing_is_written(
    fresh_ledger: Ledger, tmp_path: Path, packed: bytes
) -> None:
    path = tmp_path / "bomb"
    path.write_bytes(packed)
    with pytest.raises(InvalidEvent, match=r"expands more than 100 times .*--max-expansion"):
        import_file(fresh_ledger, path)
    assert fresh_ledger.head().seq == 0


def test_a_file_past_the_byte_cap_is_refused(fresh_ledger: Ledger, tmp_path: Path) -> None:
    data = b"".join(line(e) for e in history(30))
    path = tmp_path / "f.ndjson.gz"
    path.write_bytes(gzip.compress(data))
    caps = Inflation(len(data) - 1, 1e9, "--max-decompressed", "--max-expansion")
    with pytest.raises(
        InvalidEvent, match=r"decompresses to more than .* bytes \(the limit --max-decompressed\)"
    ):
        import_file(fresh_ledger, path, caps=caps)
    assert fresh_ledger.head().seq == 0
    got = import_file(fresh_ledger, path, caps=Inflation(len(data), 1e9))
    assert got.appended == len(history(30))


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"\r", b"  \t\n"])
def test_blank_lines_between_events_keep_every_line_number(
    fresh_ledger: Ledger, tmp_path: Path, blank: bytes
) -> None:
    """200,000 blank lines between batches: appended in batches of 10, and a bad line after them named
    by its number in the file."""
    events = [line(e) for e in history(8)]  # 22 lines
    gap = blank * 200_000
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(events[:15]) + gap + b"".join(events[15:]))
    got = import_file(fresh_ledger, path, batch_size=10)
    assert (got.appended, got.batches) == (22, 3)
    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(b"".join(events[:15]) + gap + b'{"type": "paper.observed"}\n')
    with pytest.raises(InvalidEvent, match=rf"^line {15 + 200_000 + 1}\b"):
        import_file(fresh_ledger, bad, batch_size=10)


@contextmanager
def _fifo(tmp_path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO that a thread fills with `data` once a reader opens it."""
    path = tmp_path / "fifo"
    os.mkfifo(path)

    def feed() -> None:
        with path.open("wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        writer.join(timeout=10)


@pytest.mark.parametrize("encode", [lambda b: b, gzip.compress], ids=["plain", "gzip"])
def test_a_fifo_is_read_once_and_imported(fresh_ledger: Ledger, tmp_path: Path, encode: object) -> None:
    events = history(12)
    data = encode(b"".join(line(e) for e in events))  # type: ignore[operator]
    with _fifo(tmp_path, data) as fifo:
        got = import_file(fresh_ledger, fifo, batch_size=10)
    assert (got.name, got.appended, got.batches) == (str(fifo), len(events), 4)
    assert fresh_ledger.verify().ok


def test_a_stream_past_the_byte_cap_is_refused(fresh_ledger: Ledger, tmp_path: Path) -> None:
    data = b"".join(line(e) for e in history(12))
    caps = Inflation(len(data) // 2, 100, "--max-decompressed", "--max-expansion")
    with (
        _fifo(tmp_path, data) as fifo,
        pytest.raises(InvalidEvent, match="a stream of more than .* --max-decompressed"),
    ):
        import_file(fresh_ledger, fifo, caps=caps)
    assert fresh_ledger.head().seq == 0


def test_blank_lines_are_not_held_while_a_file_is_checked(fresh_ledger: Ledger, tmp_path: Path) -> None:
    """64 MiB of blank lines among a few events: the check holds none of them (they come in runs of up to
    64 KiB each, and a chunk of 5,000 such runs would be 320 MiB)."""
    events = [line(e) for e in history(4)]
    path = tmp_path / "f.ndjson"
    with path.open("wb") as f:
        f.write(events[0])
        for _ in range(64):
            f.write(b"\n" * MIB)
        f.write(b"".join(events[1:]))
    tracemalloc.start()
    try:
        got = import_file(fresh_ledger, path, walk=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.appended == len(events)
    assert peak < 16 * MIB


def test_a_path_that_cannot_be_opened_is_refused_in_one_line(fresh_ledger: Ledger, tmp_path: Path) -> None:
    import socket

    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(InvalidEvent, match="^file: cannot be read: "):
            import_file(fresh_ledger, path)


def test_a_file_read_whole_is_held_up_to_a_bound(fresh_ledger: Ledger, tmp_path: Path) -> None:
    """A file that is not NDJSON is read whole: one of 64 MiB (here let through the ratio) is refused
    once past 32 MiB, having held about twice that, never the whole."""
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"\n" + b" " * (64 * MIB)))
    tracemalloc.start()
    try:
        with pytest.raises(InvalidEvent, match=r"nor a JSON value of at most 33,554,432 bytes"):
            import_file(fresh_ledger, path, caps=Inflation(max_ratio=1e9), walk=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * MIB
    assert fresh_ledger.head().seq == 0

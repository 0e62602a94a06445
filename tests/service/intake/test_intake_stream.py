"""service/intake/stream.py: gzip and zstandard by their magic, lines numbered as splitlines numbers them,
damaged streams and overlong lines refused, offsets skipped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from ledger.model.errors import InvalidEvent
from service.intake.inflate import Inflation
from service.intake.stream import iter_lines, open_stream

TEXT = b'{"a": 1}\n\n{"b": 2}\r\n{"c": 3}\r{"d": 4}'


def _zstd_frames(data: bytes, cut: int = 2) -> bytes:
    """`data` as two zstandard frames one after the other (what pzstd and concatenated files hold)."""
    c = zstandard.ZstdCompressor()
    return c.compress(data[:cut]) + c.compress(data[cut:])


@pytest.mark.parametrize(
    "encode",
    [lambda b: b, gzip.compress, lambda b: zstandard.ZstdCompressor().compress(b), _zstd_frames],
    ids=["plain", "gzip", "zstd", "zstd-two-frames"],
)
def test_each_form_gives_the_same_lines(tmp_path: Path, encode: object) -> None:
    path = tmp_path / "f"
    path.write_bytes(encode(TEXT))  # type: ignore[operator]
    counted: list[int] = []
    with open_stream(path, counted.append) as s:
        lines = list(iter_lines(s))
    assert lines == list(enumerate(TEXT.splitlines(keepends=True), start=1))
    assert sum(counted) == path.stat().st_size  # the stored bytes, compressed when they are


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=5))
def test_numbering_is_splitlines(data: bytes, first: int) -> None:
    import io

    got = list(iter_lines(io.BytesIO(data), first))
    assert got == list(enumerate(data.splitlines(keepends=True), start=first))
    assert b"".join(line for _, line in got) == data


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: gzip.compress(b)[:-12],  # cut before its end
        lambda b: gzip.compress(b)[:-8] + b"\x00" * 8,  # a wrong CRC
        lambda b: zstandard.ZstdCompressor().compress(b)[:-5],  # cut inside its frame
        lambda b: zstandard.ZstdCompressor().compress(b) + b"\x28\xb5\x2f\xfd\x00",  # a broken 2nd frame
    ],
    ids=["gzip-cut", "gzip-crc", "zstd-cut", "zstd-bad-frame"],
)
def test_a_damaged_stream_is_refused(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "f"
    path.write_bytes(damage(TEXT * 100))  # type: ignore[operator]
    with pytest.raises(InvalidEvent, match="damaged compressed stream"), open_stream(path) as s:
        list(iter_lines(s))


def test_a_line_longer_than_the_bound_is_refused_by_number(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"short\n" + b"x" * 100 + b"\n")
    with pytest.raises(InvalidEvent, match=r"line 2: longer than 50 bytes"), open_stream(path) as s:
        list(iter_lines(s, max_line=50))


@pytest.mark.parametrize("encode", [lambda b: b, gzip.compress], ids=["plain", "gzip"])
@pytest.mark.parametrize("at", [0, 9, 10, len(TEXT)])
def test_a_stream_opened_at_an_offset_starts_there(tmp_path: Path, encode: object, at: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(encode(TEXT))  # type: ignore[operator]
    with open_stream(path, at=at) as s:
        assert s.read() == TEXT[at:]


def test_a_compressed_stream_shorter_than_the_offset_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(TEXT))
    with pytest.raises(InvalidEvent, match="fewer than"), open_stream(path, at=len(TEXT) + 1):
        pass


# -- blank lines, decompression bombs ----------------------------------------------------------------

_PIECES = [b"\n", b"\r", b"\r\n", b" ", b"\t", b"\x0b", b"{}", b"x", b" \n", b"\n\n\n"]
_LINEISH = st.lists(st.sampled_from(_PIECES), max_size=80).map(b"".join)


def _expanded(items: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Each item's lines, numbered: a blank item stands for its lines, the last of them numbered."""
    out: list[tuple[int, bytes]] = []
    for n, item in items:
        parts = item.splitlines(keepends=True)
        assert len(parts) == 1 or item.isspace(), "only blank lines come several at once"
        out += [(n - len(parts) + 1 + i, p) for i, p in enumerate(parts)]
    return out


@given(st.one_of(st.binary(max_size=300), _LINEISH), st.integers(min_value=1, max_value=5))
@pytest.mark.parametrize("buffer", [1, 3, 8, 1 << 16])
def test_numbering_is_splitlines_with_blank_runs_together(buffer: int, data: bytes, first: int) -> None:
    import io

    stream = io.BufferedReader(io.BytesIO(data), buffer_size=buffer)  # type: ignore[arg-type]
    got = list(iter_lines(stream, first))
    assert b"".join(line for _, line in got) == data
    assert _expanded(got) == list(enumerate(data.splitlines(keepends=True), start=first))


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"\r", b" \t\n"])
def test_a_file_of_blank_lines_costs_per_buffer_not_per_line(tmp_path: Path, blank: bytes) -> None:
    """A million blank lines (a few MiB) come as a few dozen items, their numbers right."""
    path = tmp_path / "f.gz"
    data = b'{"a": 1}\n' + blank * 1_000_000 + b'{"b": 2}\n'
    path.write_bytes(gzip.compress(data))
    with open_stream(path, caps=Inflation(max_ratio=1e9)) as s:
        got = list(iter_lines(s))
    assert len(got) < 1000  # not a million
    assert got[0] == (1, b'{"a": 1}\n') and got[-1] == (1_000_002, b'{"b": 2}\n')
    assert b"".join(line for _, line in got) == data


@given(st.one_of(st.binary(max_size=2000), _LINEISH), st.sampled_from(["gzip", "zstd", "zstd-two-frames"]))
def test_compressed_lines_number_as_splitlines(data: bytes, form: str) -> None:
    import tempfile

    packed = {
        "gzip": gzip.compress,
        "zstd": zstandard.ZstdCompressor().compress,
        "zstd-two-frames": lambda b: _zstd_frames(b, len(b) // 2),
    }[form](data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        path.write_bytes(packed)
        with open_stream(path, caps=Inflation(max_ratio=1e9)) as s:
            got = list(iter_lines(s))
    assert b"".join(line for _, line in got) == data
    assert _expanded(got) == list(enumerate(data.splitlines(keepends=True), start=1))

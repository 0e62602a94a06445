"""service/intake/inflate.py: a gzip or zstd stream is refused once it decompresses past its caps in
bytes or in times its size, naming the setting; what it holds at once stays small; real files pass."""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from cli.common import LOCAL_MAX_DECOMPRESSED, LOCAL_MAX_EXPANSION
from ledger.model.errors import InvalidEvent
from service.intake.inflate import LOCAL, RATIO_FLOOR, SERVED, Inflation
from service.intake.stream import iter_lines, open_stream
from service.sources.reader import open_text

MIB = 1 << 20
Compress = Callable[[bytes], bytes]
KINDS: dict[str, Compress] = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor(level=3).compress}
CAPS = Inflation(8 * MIB, 50, "LEDGER_MAX_DECOMPRESSED", "LEDGER_MAX_EXPANSION")


@pytest.fixture(params=["stream", "text"])
def read(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[bytes, Inflation], int]:
    """Read bytes whole through `open_stream` (import) or `open_text` (ingest); how much came out."""

    def through_stream(data: bytes, caps: Inflation) -> int:
        path = tmp_path / "f"
        path.write_bytes(data)
        with open_stream(path, caps=caps) as s:
            return sum(len(chunk) for chunk in iter(lambda: s.read(MIB), b""))

    def through_text(data: bytes, caps: Inflation) -> int:
        with open_text(data, caps=caps) as text:
            return sum(len(chunk) for chunk in iter(lambda: text.read(MIB), ""))

    return through_stream if request.param == "stream" else through_text


@pytest.mark.parametrize("kind", KINDS)
def test_a_bomb_past_the_ratio_is_refused_naming_the_setting(
    read: Callable[[bytes, Inflation], int], kind: str
) -> None:
    bomb = KINDS[kind](b" " * (64 * MIB))
    assert len(bomb) * CAPS.max_ratio < 64 * MIB
    with pytest.raises(
        InvalidEvent,
        match=rf"a {kind} stream that expands more than 50 times its size .*LEDGER_MAX_EXPANSION",
    ):
        read(bomb, CAPS)


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_past_the_bytes_is_refused_naming_the_setting(
    read: Callable[[bytes, Inflation], int], kind: str
) -> None:
    body = KINDS[kind](b" " * (3 * MIB))
    caps = Inflation(2 * MIB, 1e9, "LEDGER_MAX_DECOMPRESSED", "LEDGER_MAX_EXPANSION")
    match = rf"a {kind} stream that decompresses to more than 2,097,152 bytes "
    match += r"\(the limit LEDGER_MAX_DECOMPRESSED\)"
    with pytest.raises(InvalidEvent, match=match):
        read(body, caps)
    assert read(body, Inflation(3 * MIB, 1e9)) == 3 * MIB  # at the cap: read whole


@pytest.mark.parametrize("kind", KINDS)
def test_a_small_file_is_never_refused_for_its_ratio(
    read: Callable[[bytes, Inflation], int], kind: str
) -> None:
    """Under the floor (1 MiB out) a file's ratio says nothing: 1 MiB of one byte passes."""
    assert read(KINDS[kind](b"\n" * RATIO_FLOOR), CAPS) == RATIO_FLOOR


@given(st.lists(st.binary(min_size=1, max_size=200), max_size=40), st.sampled_from(sorted(KINDS)))
def test_real_text_passes_whole(parts: list[bytes], kind: str) -> None:
    data = b"\n".join(parts)
    with open_text(KINDS[kind](data), caps=SERVED, errors="replace") as text:
        assert text.read() == data.decode("utf-8-sig", errors="replace")


def test_a_zstd_bomb_is_read_holding_a_few_mib(read: Callable[[bytes, Inflation], int]) -> None:
    """4 bytes of zstd may stand for 128 KiB: the input is fed a small piece at a time, so a 1 GiB bomb
    read with caps that let it through holds a few MiB, never a whole frame's worth."""
    bomb = zstandard.ZstdCompressor(level=1).compress(b" " * (1 << 30))
    assert len(bomb) < 64 * 1024
    tracemalloc.start()
    try:
        got = read(bomb, Inflation(max_bytes=1 << 31, max_ratio=1e9))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == 1 << 30
    assert peak < 48 * MIB


def test_a_bomb_of_lines_is_refused_by_import_lines(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"\n" * (64 * MIB)))
    with (
        pytest.raises(InvalidEvent, match="--max-expansion, LEDGER_IMPORT_MAX_EXPANSION"),
        open_stream(path) as s,
    ):
        list(iter_lines(s))


def test_the_cli_defaults_are_the_local_caps() -> None:
    assert (LOCAL.max_bytes, LOCAL.max_ratio) == (LOCAL_MAX_DECOMPRESSED, LOCAL_MAX_EXPANSION)
    assert LOCAL.max_bytes > SERVED.max_bytes  # an operator's own file may be a bulk load

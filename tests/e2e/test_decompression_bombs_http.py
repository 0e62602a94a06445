"""Decompression bombs posted over a real socket to a real `ledger serve` (POST /ingest/works and
/ingest/{source}): each refused with 422 naming LEDGER_MAX_EXPANSION or LEDGER_MAX_DECOMPRESSED (set
low here, so the bombs are small), nothing written; a real compressed file still goes in."""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable

import httpx
import pytest
import zstandard

from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST

from ..service.test_works_ingest import DATA

TOKEN = "bomb-test-token"
MIB = 1 << 20
ENV = {"LEDGER_TOKENS": TOKEN, "LEDGER_MAX_DECOMPRESSED": str(4 * MIB), "LEDGER_MAX_EXPANSION": "20"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RW_HEADER = (SOURCES_DIR / "retraction_watch.csv").read_bytes().splitlines(keepends=True)[0]
_zstd: Callable[[bytes], bytes] = zstandard.ZstdCompressor(level=3).compress


def _random_whitespace(size: int) -> bytes:
    """Whitespace in random order: compresses about 4 times, so it passes the byte cap long before the
    ratio, and a JSON reader skips all of it looking for a value."""
    table = bytes(b" \t\n\r"[i % 4] for i in range(256))
    return random.Random(0).randbytes(size).translate(table)


# (route, body, what the refusal names)
BOMBS = [
    ("works", _zstd(b" " * (16 * MIB)), "expands more than 20 times its size"),
    ("works", gzip.compress(b"\n" * (16 * MIB)), "expands more than 20 times its size"),
    ("crossref", _zstd(b'{"message": ' + b" " * (16 * MIB)), "expands more than 20 times its size"),
    (
        "retraction-watch",
        gzip.compress(RW_HEADER + b"\r\n" * (8 * MIB)),
        "expands more than 20 times its size",
    ),
    ("works", gzip.compress(_random_whitespace(5 * MIB)), "decompresses to more than 4,194,304 bytes"),
]


@pytest.mark.process
def test_bombs_are_refused_naming_the_setting_and_real_files_pass(new_db: NewDb) -> None:
    db = new_db()
    with running_server(db, env=ENV, args=["--no-samples"]) as server, httpx.Client(timeout=60) as client:
        for route, body, named in BOMBS:
            r = client.post(
                f"{server.base}/ingest/{route}", params={"observed_at": T_INGEST}, content=body, headers=AUTH
            )
            assert r.status_code == 422, (route, named, r.text)
            error = r.json()["error"]
            assert error["details"]["where"] == "file"
            assert named in error["message"], error["message"]
            setting = "LEDGER_MAX_EXPANSION" if "times" in named else "LEDGER_MAX_DECOMPRESSED"
            assert setting in error["message"]
        ledger = Ledger(db)
        try:
            assert ledger.head().seq == 0  # nothing written
        finally:
            ledger.close()
        real = (DATA / "crossref-works.json").read_bytes()
        for packed in (gzip.compress(real), _zstd(real)):
            r = client.post(
                f"{server.base}/ingest/works", params={"observed_at": T_INGEST}, content=packed, headers=AUTH
            )
            assert r.status_code in (200, 201), r.text
            assert r.json()["works"] >= 1

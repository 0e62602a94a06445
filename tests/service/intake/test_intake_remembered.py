"""service/intake/check.py: what the check remembers of earlier lines is held in memory up to a bound,
then in the scratch file; either way every rule that spans lines refuses the same line, named alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.model.errors import LedgerError
from service.intake import check
from service.intake.load import import_file
from service.ledger import Ledger
from tests.service.intake.test_intake_load import _refusals, history, line, refused_whole

# (ids and observations held in memory, lines a chunk): all in memory; spilled to the scratch file at
# once; spilled after a few chunks
_TIERS = [(150_000, 5000), (0, 4), (7, 4)]
# (bits of the filter in front of the scratch file, held, chunk): the tiers above at the real size, then
# a saturated filter (no bits: every key may be there), a few bits (false hits and misses mixed), and
# the real size spilled across uneven chunks
_FILTERED = [
    *((check.FILTER_BITS, held, chunk) for held, chunk in _TIERS),
    (0, 0, 4),
    (4, 7, 4),
    (check.FILTER_BITS, 7, 3),
]


@pytest.mark.parametrize(("bits", "held", "chunk"), _FILTERED)
@pytest.mark.parametrize(("at", "bad", "error", "match"), _refusals())
def test_a_rule_across_lines_refuses_alike_in_memory_spilled_and_filtered(
    fresh_ledger: Ledger,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bits: int,
    held: int,
    chunk: int,
    at: int,
    bad: bytes,
    error: type[LedgerError],
    match: str,
) -> None:
    monkeypatch.setattr(check, "FILTER_BITS", bits)
    monkeypatch.setattr(check, "HELD", held)
    monkeypatch.setattr(check, "CHUNK", chunk)
    refused_whole(fresh_ledger, tmp_path, at, bad, error, match)


@pytest.mark.parametrize(("held", "chunk"), _TIERS)
def test_repeated_lines_are_duplicates_in_memory_and_spilled(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int, chunk: int
) -> None:
    monkeypatch.setattr(check, "HELD", held)
    monkeypatch.setattr(check, "CHUNK", chunk)
    events = history(8)  # 22 events, then the first 10 again
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(line(e) for e in [*events, *events[:10]]))
    got = import_file(fresh_ledger, path, batch_size=6)
    assert (got.appended, got.duplicates) == (22, 10)
    assert fresh_ledger.verify().ok

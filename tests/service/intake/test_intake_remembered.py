"""service/intake/check.py: what the check remembers of earlier lines is held in memory up to a bound,
then in the scratch file; either way every rule that spans lines refuses the same line, named alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.model.codec import event_to_dict
from ledger.model.errors import LedgerError
from service.intake import check
from service.intake.load import file_key, import_file
from service.ledger import Ledger
from tests import factories as fx
from tests.service.intake.test_intake_load import _refusals, history, line

# (ids and observations held in memory, lines a chunk): all in memory; spilled to the scratch file at
# once; spilled after a few chunks
_TIERS = [(150_000, 5000), (0, 4), (7, 4)]


@pytest.mark.parametrize(("held", "chunk"), _TIERS)
@pytest.mark.parametrize(("at", "bad", "error", "match"), _refusals())
def test_a_rule_across_lines_refuses_alike_in_memory_and_spilled(
    fresh_ledger: Ledger,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    held: int,
    chunk: int,
    at: int,
    bad: bytes,
    error: type[LedgerError],
    match: str,
) -> None:
    monkeypatch.setattr(check, "HELD", held)
    monkeypatch.setattr(check, "CHUNK", chunk)
    events = history(12)
    lines = [line(e) for e in events]
    # the line before the refused one names the id it repeats (its own content), as in test_intake_load
    lines[at - 2] = line({**event_to_dict(events[at - 2]), "event_id": fx.oid_of(7)})
    lines.insert(at - 1, bad)
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(lines))
    with pytest.raises(error, match=match):
        import_file(fresh_ledger, path, batch_size=10)
    assert fresh_ledger.head().seq == 0
    assert fresh_ledger.store.tables.import_progress(file_key(path)) is None


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

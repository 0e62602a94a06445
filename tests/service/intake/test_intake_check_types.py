"""service/intake/check.py: an NDJSON line is checked by its event's type tag, a work.observed line
included, and then appended."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from api.docs import EVENT_EXAMPLES
from service.intake.load import import_file
from service.ledger import Ledger


@pytest.mark.parametrize("type_", ["work.observed", "measurement.observed"])
def test_a_line_of_a_standalone_type_is_imported(fresh_ledger: Ledger, tmp_path: Path, type_: str) -> None:
    path = tmp_path / "f.ndjson"
    lines = [EVENT_EXAMPLES["paper.observed"], EVENT_EXAMPLES[type_]]  # two lines: checked line by line
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in lines))
    got = import_file(fresh_ledger, path)
    assert (got.appended, got.duplicates) == (2, 0)
    assert [e.type for e in fresh_ledger.store.read_log()] == ["paper.observed", type_]

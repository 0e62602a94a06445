"""service/intake/check.py and load.py: the second pass decodes a line again by msgspec's decoder alone
only where the first pass proved that decoder exact for its bytes; a line the first pass took by the
exact path is taken by it again, and the file appends what single appends of its events build."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ledger.model.codec import event_to_dict, quick_event
from ledger.model.events import Event
from service.intake import check
from service.intake.load import import_file
from service.ledger import Ledger
from tests import factories as fx
from tests.conftest import NewDb
from tests.service.intake.test_intake_load import history, line, state

# a title quick_event leaves to the exact path: a colon spelled as an escape, and an emoji spelled as a
# surrogate pair; the strings they decode to are the same either way
_ESCAPED = (b'"A paper"', b'"A\\u003a paper \\ud83d\\ude00"')


def _escaped(e: object) -> bytes:
    raw = line(e)  # type: ignore[arg-type]
    assert _ESCAPED[0] in raw
    return raw.replace(_ESCAPED[0], _ESCAPED[1])


@pytest.mark.parametrize("exact_max", [100_000, 0])
def test_lines_of_the_exact_path_are_appended_as_it_decodes_them(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exact_max: int
) -> None:
    monkeypatch.setattr(check, "MAX_EXACT", exact_max)  # 0: too many to remember, every line exact
    plain: list[bytes] = []  # the lines the second pass took by msgspec's decoder alone

    def taken_plain(raw: bytes) -> Event | None:
        plain.append(raw)
        return check.quick_event(raw)

    monkeypatch.setattr(check, "plain_event", taken_plain)
    events = [fx.paper(f"2102.{i:05d}", fx.ts(i)) for i in range(1, 8)] + history(4)
    raw = [_escaped(e) if i in (3, 6) else line(e) for i, e in enumerate(events)]
    assert quick_event(raw[3]) is None and quick_event(raw[2]) is not None
    decoded = [msgspec.json.decode(r) for r in raw]
    assert decoded[3]["data"]["title"] == "A: paper \U0001f600"
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(raw))
    clock = fx.Clock()
    single, batched = Ledger(new_db("single.db"), clock=clock), Ledger(new_db("batched.db"), clock=clock)
    try:
        for d in decoded:
            single.import_bytes(msgspec.json.encode(d))
        got = import_file(batched, path, batch_size=2)  # lines 4 and 7 are past the first batch
        assert (got.appended, got.batches) == (len(events), 9)
        assert state(batched) == state(single)
        # every line (a file of several batches is decoded again, its first batch too), the two escaped
        # ones by the exact path, and every one when the first pass could not remember them
        assert plain == ([] if exact_max == 0 else [r for i, r in enumerate(raw) if i not in (3, 6)])
        stored = msgspec.json.decode(batched.store.read_log()[3].data)
        assert stored == event_to_dict(events[3])["data"] | {"title": "A: paper \U0001f600"}
    finally:
        single.close()
        batched.close()

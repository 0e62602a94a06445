"""service/intake/spill.py and its use by the import: a line the check decoded by the exact path (an
escape msgspec's decoder alone is not proved exact for) is appended as the check decoded it, and the
spill gives back the events it was given, in order, a frame at a time."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.model.codec import event_to_dict, quick_event
from service.intake.load import import_file
from service.intake.spill import Spill
from service.ledger import Ledger
from tests import factories as fx
from tests.conftest import NewDb, examples
from tests.service.intake.test_intake_load import history, line, state

# a title quick_event leaves to the exact path: a colon spelled as an escape, and an emoji spelled as a
# surrogate pair; the strings they decode to are the same either way
_ESCAPED = (b'"A paper"', b'"A\\u003a paper \\ud83d\\ude00"')


def _escaped(e: object) -> bytes:
    raw = line(e)  # type: ignore[arg-type]
    assert _ESCAPED[0] in raw
    return raw.replace(_ESCAPED[0], _ESCAPED[1])


@pytest.mark.parametrize("batch", [2, 100])
def test_lines_of_the_exact_path_are_appended_as_it_decodes_them(
    new_db: NewDb, tmp_path: Path, batch: int
) -> None:
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
        got = import_file(batched, path, batch_size=batch)
        assert got.appended == len(events)
        assert state(batched) == state(single)
        stored = msgspec.json.decode(batched.store.read_log()[3].data)
        data = event_to_dict(events[3])["data"]
        assert isinstance(data, dict)
        assert stored == data | {"title": "A: paper \U0001f600"}
    finally:
        single.close()
        batched.close()


@settings(max_examples=examples(20), deadline=None)
@given(events=fx.ledgers(max_obs=4), frames=st.lists(st.integers(0, 5), max_size=8))
def test_a_spill_gives_back_its_events_in_order(events: list[object], frames: list[int]) -> None:
    numbered = list(enumerate(events, start=1))
    spill = Spill()
    try:
        at = 0
        for size in [*frames, len(numbered)]:
            spill.write(numbered[at : at + size])  # type: ignore[arg-type]
            at += size
        got = [pair for frame in spill.read() for pair in frame]
        assert got == numbered
        assert spill.events == len(numbered)
        assert [pair for frame in spill.read() for pair in frame] == numbered  # read again from the first
    finally:
        spill.close()

"""service/intake/spill.py and its use by the import: a line the check decoded by the exact path (an
escape msgspec's decoder alone is not proved exact for) is appended as the check decoded it, and the
spill gives back the events it was given, in order, a frame at a time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.model.codec import canonical, derived_event_id, event_to_dict, quick_event
from ledger.model.events import Event, StoredEvent
from ledger.model.facts import ImportProgress
from ledger.model.instants import parse_near
from service.intake.check import FileCheck
from service.intake.load import import_file
from service.intake.spill import Spill
from service.ledger import Encoded, Ledger
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


def _encoded(e: Event) -> Encoded:
    """What an append makes of an event itself: its data's canonical bytes, its id, its instant."""
    return Encoded(canonical(e.data), e.event_id or derived_event_id(e), parse_near(e.observed_at))


@settings(max_examples=examples(20), deadline=None)
@given(events=fx.ledgers(max_obs=4), frames=st.lists(st.integers(0, 5), max_size=8))
def test_a_spill_gives_back_its_events_in_order(events: list[Event], frames: list[int]) -> None:
    numbered = [(n, e, _encoded(e)) for n, e in enumerate(events, start=1)]
    spill = Spill()
    try:
        at = 0
        for size in [*frames, len(numbered)]:
            spill.write(numbered[at : at + size])
            at += size
        got = [pair for frame in spill.read() for pair in frame]
        assert got == numbered
        assert spill.events == len(numbered)
        assert [pair for frame in spill.read() for pair in frame] == numbered  # read again from the first
    finally:
        spill.close()


class _NoTables:
    """An empty ledger, as the check looks it up."""

    def import_progress(self, file_key: str) -> ImportProgress | None:
        return None

    def stored_events(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        return {}

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        return {}


@settings(max_examples=examples(20), deadline=None)
@given(events=fx.ledgers(max_obs=4))
def test_the_check_spills_what_an_append_would_make_of_each_event(events: list[Event]) -> None:
    """The data bytes, id and instant the append takes from the spill are the ones it would make."""
    spill = Spill()
    try:
        check = FileCheck(_NoTables(), 2**62, spill=spill)
        check.run((n, line(e)) for n, e in enumerate(events, start=1))
        got = [(n, e, enc) for frame in spill.read() for n, e, enc in frame]
        assert [(n, e) for n, e, _ in got] == list(enumerate(events, start=1))
        assert [enc for _, _, enc in got] == [_encoded(e) for e in events]
    finally:
        spill.close()

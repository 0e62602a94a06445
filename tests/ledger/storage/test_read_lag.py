"""Records read with the projector behind the head: the same bytes as caught up (the shared fixture, the
record like it, synthetic papers, at the instants the tests read records at), and a read folds in only
the observations past the spans' position that can touch its paper."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from bench.read_lag import TEST_AS_OF
from bench.synth import BASE, PAPER_STEP, Synth, arxiv_id
from ledger.model import events as ev
from ledger.model.errors import NotFound
from ledger.model.instants import format_recorded, parse_as_of, parse_ts
from ledger.storage.projector import SPANS
from ledger.storage.tables import reader as sql_reader
from service.ledger import Ledger
from tests.conftest import FIXTURE_ID, NewDb
from tests.service.resolver.test_resolver_fixture import LIKE, World

NO_PRESSURE = 1_000_000  # no append projects the lag itself: the test decides where the projector is
# instants inside the synthetic papers' history (paper i is observed from BASE + i * PAPER_STEP)
SYNTH_AS_OF = [
    format_recorded(int((BASE + n * PAPER_STEP).timestamp() * 1_000_000)) for n in (12, 35, 50, 70)
]


def _position(ledger: Ledger) -> int:
    return ledger.store.spans.projection_position(SPANS)


def _records(
    ledger: Ledger, papers: Iterable[str], as_of: Sequence[str], known: Sequence[int | None] = (None,)
) -> dict[tuple[str, str, int | None], bytes]:
    """Each paper's record at each instant (the error's words where there is none yet)."""
    out: dict[tuple[str, str, int | None], bytes] = {}
    for pid in papers:
        for at in as_of:
            for k in known:
                try:
                    out[pid, at, k] = ledger.record_bytes(pid, parse_as_of(at), k)[0]
                except NotFound as e:
                    out[pid, at, k] = str(e).encode()
    return out


class _Clock:
    """The same recorded instants for the same appends, whichever ledger."""

    def __init__(self) -> None:
        self.us = parse_ts("2026-11-18T00:00:00Z")

    def now_us(self) -> int:
        return self.us

    def step(self) -> None:
        self.us += 1_000


def _append_papers(ledger: Ledger, clock: _Clock, papers: range) -> set[str]:
    """Synthetic papers, one append each (as an import of a record); the papers they resolve to."""
    cited: set[str] = set()
    for i in papers:
        events = Synth().paper_events(i)
        clock.step()
        ledger.append(events, typed=True)
        cited |= {
            e.data.cited_arxiv_id
            for e in events
            if isinstance(e, ev.ResolutionObserved) and e.data.cited_arxiv_id
        }
    return cited


def test_the_fixture_record_is_its_bytes_with_the_projector_behind_and_caught_up(
    new_db: NewDb, fixture_bytes: bytes
) -> None:
    ledger = Ledger(new_db(), projector_max_lag=NO_PRESSURE)
    try:
        ledger.import_bytes(fixture_bytes)
        at = parse_ts(json.loads(fixture_bytes)["as_of"])
        assert _position(ledger) < ledger.head().seq
        assert ledger.record_bytes(FIXTURE_ID, at)[0] == fixture_bytes.strip()
        ledger.ops.project()
        assert _position(ledger) == ledger.head().seq
        assert ledger.record_bytes(FIXTURE_ID, at)[0] == fixture_bytes.strip()
    finally:
        ledger.close()


def test_the_real_records_are_the_same_bytes_with_the_projector_behind(new_db: NewDb) -> None:
    """The fixture and the record like it, resolved, and two papers both cite (inbound from each), at
    every instant the tests read records at, now and known at an earlier instant."""
    world = World(new_db())
    ledger = world.ledger
    try:
        world.resolve()
        assert _position(ledger) < ledger.head().seq
        recorded = sorted({parse_ts(e.recorded_at) for e in ledger.store.read_log()})
        papers = [FIXTURE_ID, LIKE, "2403.06504", "2210.02414"]
        known = [None, recorded[len(recorded) // 2]]
        behind = _records(ledger, papers, TEST_AS_OF, known)
        ledger.ops.project()
        assert _position(ledger) == ledger.head().seq
        assert _records(ledger, papers, TEST_AS_OF, known) == behind
        assert json.loads(behind["2403.06504", "2999-01-01", None])["inbound"]  # the fold had work to do
    finally:
        ledger.close()


def test_synthetic_records_read_while_the_log_grows_past_the_position(new_db: NewDb) -> None:
    """A long-lived reader (its index of the events past the position kept across reads and extended
    as appends come) gives the records a fresh reader gives, and both those of the caught-up ledger."""
    db, clock = new_db(), _Clock()
    ledger = Ledger(db, projector_max_lag=NO_PRESSURE, clock=clock)
    try:
        _append_papers(ledger, clock, range(0, 40))
        ledger.ops.project()
        cited = _append_papers(ledger, clock, range(40, 55))
        papers = sorted(cited)[:10] + [arxiv_id(i) for i in (3, 41, 60)]
        as_of = [*SYNTH_AS_OF, "2026-08-08T08:47:00Z"]
        known = [None, clock.us - 10_000]
        first = _records(ledger, papers, as_of, known)
        cited |= _append_papers(ledger, clock, range(55, 70))
        papers = sorted(set(papers) | set(sorted(cited)[:15]))
        assert 0 < _position(ledger) < ledger.head().seq
        held = _records(ledger, papers, as_of, known)
        fresh = Ledger(db)
        try:
            assert _records(fresh, papers, as_of, known) == held
        finally:
            fresh.close()
        ledger.ops.project()
        assert _records(ledger, papers, as_of, known) == held
        # and each record read before the last appends, known as of then, is still what it was
        then = {key: v for key, v in first.items() if key[2] is not None and v.startswith(b"{")}
        assert then and {key: held[key] for key in then} == then
    finally:
        ledger.close()


def _decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of the events the store's reads decode."""
    count = [0]
    real = sql_reader.fact_row

    def counted(row: Sequence[Any]) -> Any:
        count[0] += 1
        return real(row)

    monkeypatch.setattr(sql_reader, "fact_row", counted)
    return count


def test_a_record_folds_in_only_the_observations_that_can_touch_its_paper(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty papers' events past the position, none of them citing paper 3: its record decodes the
    events it did caught up, not those of every observation past the position."""
    clock = _Clock()
    ledger = Ledger(new_db(), projector_max_lag=NO_PRESSURE, clock=clock)
    try:
        _append_papers(ledger, clock, range(0, 40))
        ledger.ops.project()
        cited = _append_papers(ledger, clock, range(40, 70))
        target = arxiv_id(3)  # cited by papers 10..39 only (bench/synth.py)
        assert target not in cited and _position(ledger) < ledger.head().seq
        count = _decoded(monkeypatch)
        behind = ledger.record_bytes(target)[0]
        decoded_behind = count[0]
        ledger.ops.project()
        count[0] = 0
        assert ledger.record_bytes(target)[0] == behind
        assert decoded_behind == count[0]
    finally:
        ledger.close()


def test_a_read_after_no_new_event_reads_no_event_past_the_position_again(new_db: NewDb) -> None:
    clock = _Clock()
    ledger = Ledger(new_db(), projector_max_lag=NO_PRESSURE, clock=clock)
    try:
        _append_papers(ledger, clock, range(0, 20))
        ledger.ops.project()
        _append_papers(ledger, clock, range(20, 30))
        seen: list[str | None] = []
        index = ledger.store.past  # type: ignore[attr-defined]
        real = index.touching

        def spy(base: Any, position: int, head: int, rows: str | None, cited: str) -> Any:
            seen.append(rows)
            return real(base, position, head, rows, cited)

        index.touching = spy
        ledger.record_bytes(arxiv_id(5))
        ledger.record_bytes(arxiv_id(6))
        _append_papers(ledger, clock, range(30, 31))
        ledger.record_bytes(arxiv_id(5))
        assert seen[0] and not seen[1]  # every row past the position once, then none
        assert seen[2] and len(seen[2]) < len(seen[0])  # then only the new paper's
    finally:
        ledger.close()

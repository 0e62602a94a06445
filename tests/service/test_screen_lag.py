"""A screen whatever the projector's lag: its index (screen_refs, screen_notices) is a projection the
appends leave behind, and every read folds in the events past its position, so a screen, its changes
and its bundle read with the projection anywhere from empty to the head are the answers read after it
caught up. On the backend under test."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from ledger.model.instants import parse_ts
from ledger.storage.derived.screen import NAME
from ledger.storage.projector import SCREEN, SPAN_PROJECTION, catch_up
from ledger.storage.verify import verify_store
from service.ledger import Ledger
from service.proofs.screen_bundle import bundle_of_page
from service.screen import Page, Query, page_json, screen, screen_changes
from tests.conftest import NewDb
from tests.factories import paper
from tests.old_layout import build_old_ledger, version_before
from tests.raw import edit, rows
from tests.screen_scenario import PAPERS, Seeded, seeded_ledger

INSTANTS = ("2026-01-12T00:00:00Z", "2026-02-05T00:00:00Z", "2026-02-20T00:00:00Z")
FROM = parse_ts("2026-01-12T00:00:00Z")
SOME = frozenset(list(PAPERS)[::2])


def _pages(read: Callable[[str | None], Page]) -> list[dict[str, Any]]:
    """Every page of a screen (or of its changes), one line a page, following the tokens."""
    out, token = [], None
    while True:
        page = read(token)
        out.append(page_json(page))
        token = page.next_page
        if token is None:
            return out


def _answers(ledger: Ledger, seeded: Seeded) -> list[Any]:
    """The screens and changes of the whole ledger and of some papers, as of several T and K."""
    out: list[Any] = []
    for as_of in INSTANTS:
        for known in (None, seeded.second):
            for papers in (None, SOME):
                q = Query(papers, parse_ts(as_of), known)
                out.append(_pages(lambda token, q=q: screen(ledger.store, q, token, 1)))  # type: ignore[misc]
                out.append(
                    _pages(lambda token, q=q: screen_changes(ledger.store, q, FROM, token, 1))  # type: ignore[misc]
                )
    return out


def _bundle(ledger: Ledger) -> bytes:
    body = page_json(screen(ledger.store, Query(None, parse_ts(INSTANTS[-1])), None, 100))
    return b"".join(bundle_of_page(ledger, body).chunks())


def _position(ledger: Ledger) -> int:
    return ledger.store.spans.projection_position(NAME)


@pytest.fixture
def seeded(new_db: NewDb) -> Any:
    ledger, when = seeded_ledger(new_db())
    yield ledger, when
    ledger.close()


def test_appends_leave_the_screens_index_to_the_projector(seeded: tuple[Ledger, Seeded]) -> None:
    ledger, _ = seeded
    assert _position(ledger) == 0
    assert rows(ledger.url, "SELECT count(*) FROM screen_refs") == [(0,)]
    assert rows(ledger.url, "SELECT count(*) FROM screen_notices") == [(0,)]
    assert catch_up(ledger.store, [SCREEN]) == ledger.head().seq == _position(ledger)
    assert rows(ledger.url, "SELECT count(*) FROM screen_refs") != [(0,)]
    assert rows(ledger.url, "SELECT count(*) FROM screen_notices") != [(0,)]


def test_a_screen_and_its_bundle_read_behind_the_projector_equal_those_caught_up(
    seeded: tuple[Ledger, Seeded],
) -> None:
    ledger, when = seeded
    head = ledger.head().seq
    behind: list[tuple[int, list[Any], bytes]] = []
    for upto in range(head):  # every position the projection can be left at, each with lag > 0
        catch_up(ledger.store, [SCREEN], upto=upto)
        answers, bundle = _answers(ledger, when), _bundle(ledger)
        assert _position(ledger) == upto < head  # nothing the reads did moved it
        behind.append((upto, answers, bundle))
    catch_up(ledger.store, [SCREEN])
    assert _position(ledger) == head
    caught_up, bundle = _answers(ledger, when), _bundle(ledger)
    assert any(page["items"] for pages in caught_up for page in pages)  # the screens show flags
    for upto, answers, behind_bundle in behind:
        assert answers == caught_up, f"projection at {upto} of {head}"
        assert behind_bundle == bundle, f"projection at {upto} of {head}"


def test_verify_checks_the_screens_rows_as_far_as_its_position(seeded: tuple[Ledger, Seeded]) -> None:
    ledger, _ = seeded
    half = ledger.head().seq // 2
    catch_up(ledger.store, [SCREEN], upto=half)
    assert verify_store(ledger.store).ok
    # a row of an event the projection has not reached is one no event accounts for
    last = rows(ledger.url, "SELECT max(seq) FROM events WHERE type = 'resolution.observed'")[0][0]
    assert last > half
    edit(
        ledger.url,
        "INSERT INTO screen_refs (work_id, seq, observation_id, citing) VALUES ('w', ?, 'o', 'p')",
        params=(last,),
    )
    report = verify_store(ledger.store)
    assert not report.ok and report.first_bad_seq == last
    assert "screen" in str(report.reason)


REFS = "SELECT work_id, seq, observation_id, citing FROM screen_refs ORDER BY work_id, seq"
NOTICES = "SELECT * FROM screen_notices ORDER BY work_id, seq, ordinal"


@pytest.mark.parametrize("change", ["screen", "screen_projection"])
def test_an_older_ledger_upgrades_with_its_screen_projected_to_its_head(new_db: NewDb, change: str) -> None:
    """Before the screen's index its rows are derived once; before its projection the rows its appends
    wrote stay: either way the position is the head, so the projector applies nothing twice."""
    source, when = seeded_ledger(new_db("source.db"))
    try:
        catch_up(source.store, [SCREEN])
        old = new_db("old.db")
        build_old_ledger(old, version_before(old, change), source)
        if change == "screen_projection":  # its appends wrote the rows (no index before: derived once)
            assert rows(old, REFS) == rows(source.url, REFS)
        upgraded = Ledger(old)
        try:
            assert _position(upgraded) == upgraded.head().seq == source.head().seq
            assert catch_up(upgraded.store, [SCREEN]) == source.head().seq
            assert rows(old, REFS) == rows(source.url, REFS) != []
            assert rows(old, NOTICES) == rows(source.url, NOTICES) != []
            assert verify_store(upgraded.store).ok
            assert _answers(upgraded, when) == _answers(source, when)
        finally:
            upgraded.close()
    finally:
        source.close()


def test_an_appender_keeps_the_screens_index_within_the_allowed_lag(seeded: tuple[Ledger, Seeded]) -> None:
    """The back-pressure counts every projection a read folds, not only the spans: a fold stays bounded."""
    ledger, _ = seeded
    catch_up(ledger.store, [SPAN_PROJECTION])
    assert _position(ledger) == 0 and ledger.head().seq > 5
    pressed = Ledger(ledger.url, projector_max_lag=5)
    try:
        pressed.append([paper("2101.00009", "2026-01-09T00:00:00Z")])
        assert _position(pressed) == pressed.head().seq
    finally:
        pressed.close()


class Killed(Exception):
    """A fault injected between a batch's rows and its position."""


def test_a_fault_mid_batch_leaves_the_screens_rows_and_position_agreeing(
    new_db: NewDb, seeded: tuple[Ledger, Seeded]
) -> None:
    ledger, _ = seeded
    head = ledger.head().seq

    def fault(end: int) -> None:
        if end > 5:
            raise Killed

    with pytest.raises(Killed):
        dataclasses.replace(SCREEN, fault=fault).advance(ledger.store, head, batch=5)
    assert _position(ledger) == 5  # the second batch's rows went with it
    assert verify_store(ledger.store).ok
    assert catch_up(ledger.store, [SCREEN]) == head
    ref, _ = seeded_ledger(new_db("ref.db"))
    try:
        catch_up(ref.store, [SCREEN])
        assert rows(ledger.url, REFS) == rows(ref.url, REFS) != []
        assert rows(ledger.url, NOTICES) == rows(ref.url, NOTICES) != []
    finally:
        ref.close()

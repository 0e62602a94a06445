"""The projector: positions advanced with their rows, a kill at any point, one lease holder, readers that
fold the events past a projection's position, and the appender's back-pressure (both backends)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ledger.model.events import Event
from ledger.model.instants import SYSTEM_CLOCK, parse_ts
from ledger.storage.projector import (
    READ_BY_RECORDS,
    SPAN_PROJECTION,
    SPANS,
    Logged,
    catch_up,
    lease_holder,
    release_lease,
    take_lease,
)
from ledger.storage.verify import verify_store
from service.ledger import Ledger
from service.ops.projector import ENV_MAX_LAG, SettingError, max_lag, project_step, run_projector
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.old_layout import build_old_ledger, version_before
from tests.paths import ROOT
from tests.raw import edit, rows

P, Q = "2101.00001", "2101.00002"
SPANS_SQL = (
    "SELECT * FROM inbound_spans ORDER BY cited, citing, reference_index, observation_id, t_from, k_from"
)
COUNTS_SQL = "SELECT * FROM inbound_counts WHERE starts <> 0 OR ends <> 0 ORDER BY cited, bucket"


def _history() -> list[list[Event]]:
    """Appends whose spans open, close and re-open: 40 observations cited, resolved to P or Q, some
    re-resolved elsewhere or away later, in several appends."""
    batches: list[list[Event]] = [[paper(P, ts(0)), paper(Q, ts(0, 1)), paper("2201.00001", ts(0, 2))]]
    batches.append([citation(oid_of(n), "2201.00001", ts(1, n), n) for n in range(40)])
    batches.append([resolution(oid_of(n), ts(2, n), cited_arxiv=P if n % 3 else Q) for n in range(40)])
    batches.append([resolution(oid_of(n), ts(3, n), cited_arxiv=Q) for n in range(0, 40, 4)])
    batches.append([resolution(oid_of(n), ts(4, n), "unresolved", cited_arxiv=None) for n in range(1, 40, 7)])
    batches.append([citation(oid_of(n), "2201.00001", ts(5, n), n + 100) for n in range(2, 40, 5)])
    return batches


class _Clock:
    """A clock every ledger of a test starts the same: the same history gets the same recorded_us."""

    def __init__(self) -> None:
        self.now = 1_796_000_000_000_000

    def now_us(self) -> int:
        self.now += 1_000
        return self.now


def _ledger(db: str, **kw: Any) -> Ledger:
    ledger = Ledger(db, projector_max_lag=kw.pop("max_lag", 1_000_000), clock=_Clock(), **kw)
    for batch in _history():
        ledger.append(batch)
    return ledger


def _position(ledger: Ledger) -> int:
    return ledger.store.spans.projection_position(SPANS)


def _caught_up_rows(new_db: NewDb) -> tuple[list[Any], list[Any]]:
    """The spans and counts of the same history projected in one go (another ledger)."""
    ref = _ledger(new_db("ref.db"))
    try:
        ref.ops.project(READ_BY_RECORDS)
        return rows(ref.url, SPANS_SQL), rows(ref.url, COUNTS_SQL)
    finally:
        ref.close()


class Killed(Exception):
    """A fault injected between a batch's rows and its position."""


def test_appends_write_no_spans_and_the_projector_catches_up(new_db: NewDb) -> None:
    ledger = _ledger(new_db())
    try:
        assert rows(ledger.url, SPANS_SQL) == [] and _position(ledger) == 0
        head = ledger.head().seq
        assert ledger.ops.project(READ_BY_RECORDS) == head == _position(ledger)
        assert rows(ledger.url, SPANS_SQL) != []
        assert verify_store(ledger.store).ok
    finally:
        ledger.close()


@pytest.mark.parametrize("kill_at_batch", [1, 2, 4])
def test_a_fault_mid_batch_leaves_position_and_rows_agreeing_and_a_rerun_resumes(
    new_db: NewDb, kill_at_batch: int
) -> None:
    """The fault comes after a batch's rows are written and before its position: that batch rolls back
    whole, the batches before it stay, and the next run ends where an uninterrupted one does."""
    want_spans, want_counts = _caught_up_rows(new_db)
    ledger = _ledger(new_db())
    try:
        batches = [0]

        def fault(end: int) -> None:
            batches[0] += 1
            if batches[0] == kill_at_batch:
                raise Killed(end)

        faulty = dataclasses.replace(SPAN_PROJECTION, fault=fault)
        head = ledger.head().seq
        with pytest.raises(Killed) as killed:
            faulty.advance(ledger.store, head, batch=17)
        end = killed.value.args[0]
        # the batch boundary before the killed batch is what holds
        assert _position(ledger) == end - 17 == 17 * (kill_at_batch - 1)
        assert verify_store(ledger.store).ok  # the rows are the events' up to the position
        assert SPAN_PROJECTION.advance(ledger.store, head, batch=17) == head
        assert rows(ledger.url, SPANS_SQL) == want_spans
        assert rows(ledger.url, COUNTS_SQL) == want_counts
        assert verify_store(ledger.store).ok
    finally:
        ledger.close()


_KILLER = """
import os, signal, sys
from ledger.storage.projector import SPAN_PROJECTION
from service.ledger import Ledger
import dataclasses

at = int(sys.argv[2])
seen = [0]
def kill(end):
    seen[0] += 1
    if seen[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)  # between the batch's rows and its position
led = Ledger(sys.argv[1])
dataclasses.replace(SPAN_PROJECTION, fault=kill).advance(led.store, led.head().seq, batch=13)
"""


@pytest.mark.process
@pytest.mark.parametrize("kill_at_batch", [1, 3])
def test_a_projector_killed_mid_transaction_resumes_to_the_same_rows(
    new_db: NewDb, kill_at_batch: int
) -> None:
    """kill -9 of a projector process with a batch's rows written and its position not: the database
    keeps the batches committed before it, and another run finishes as an uninterrupted one."""
    want_spans, want_counts = _caught_up_rows(new_db)
    ledger = _ledger(new_db())
    try:
        done = subprocess.run(
            [sys.executable, "-c", _KILLER, ledger.url, str(kill_at_batch)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == -9, done.stderr.decode()
        assert _position(ledger) == 13 * (kill_at_batch - 1)
        assert verify_store(ledger.store).ok
        ledger.ops.project(READ_BY_RECORDS)
        assert rows(ledger.url, SPANS_SQL) == want_spans
        assert rows(ledger.url, COUNTS_SQL) == want_counts
    finally:
        ledger.close()


def test_two_projectors_at_once_apply_each_batch_once(new_db: NewDb) -> None:
    """Projectors racing on one ledger (two processes' stores): each batch re-reads the position under
    the projectors' lock, so no event is applied twice."""
    want_spans, want_counts = _caught_up_rows(new_db)
    db = new_db()
    _ledger(db).close()
    stores = [Ledger(db).store for _ in range(2)]
    go = threading.Barrier(2)

    def run(store: Any) -> None:
        go.wait()
        SPAN_PROJECTION.advance(store, store.head().seq, batch=7)
        store.close()

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rows(db, SPANS_SQL) == want_spans
    assert rows(db, COUNTS_SQL) == want_counts


# -- the lease ---------------------------------------------------------------------------------------


def test_the_lease_is_held_by_one_holder_until_it_expires_or_is_released(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    store = ledger.store
    try:
        assert take_lease(store, "a", 1_000, 500)
        assert not take_lease(store, "b", 1_400, 500)  # a's until 1,500
        assert take_lease(store, "a", 1_400, 500)  # a renews: until 1,900
        assert not take_lease(store, "b", 1_800, 500)
        assert lease_holder(store, 1_800) == "a"
        assert take_lease(store, "b", 1_901, 500)  # a's expired
        assert not take_lease(store, "a", 1_902, 500)
        release_lease(store, "a")  # not a's: nothing
        assert lease_holder(store, 1_902) == "b"
        release_lease(store, "b")
        assert lease_holder(store, 1_902) is None
        assert take_lease(store, "a", 1_903, 500)
    finally:
        ledger.close()


def test_two_workers_racing_for_the_lease_never_both_hold_it(new_db: NewDb) -> None:
    """Workers with their own connections try at the same instant, many times over: exactly one wins
    each round (a compare-and-set in one statement)."""
    db = new_db()
    stores = [Ledger(db).store for _ in range(3)]
    for round_ in range(15):
        now = 10_000 * (round_ + 1)  # each round after the last one's lease expired
        go = threading.Barrier(len(stores))
        won: list[str] = []

        def race(
            store: Any, name: str, now: int = now, go: threading.Barrier = go, won: list[str] = won
        ) -> None:
            go.wait()
            if take_lease(store, name, now, 5_000):
                won.append(name)

        threads = [threading.Thread(target=race, args=(s, f"w{i}")) for i, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, (round_, won)
        assert lease_holder(stores[0], now) == won[0]
    for s in stores:
        s.close()


def test_the_servers_projector_loop_follows_the_log_while_it_holds_the_lease(new_db: NewDb) -> None:
    """run_projector (each server worker's thread): the worker holding the lease brings every
    projection to the head; one that cannot take the lease projects nothing."""
    db = new_db()
    ledger = _ledger(db)
    try:
        assert take_lease(ledger.store, "another worker", 0, 10**18)  # held for good by someone else
        stop = threading.Event()
        blocked = threading.Thread(
            target=run_projector,
            args=(Ledger(db).store, stop),
            kwargs={"holder": "me", "poll_s": 0.01, "clock": SYSTEM_CLOCK},
        )
        blocked.start()
        stop.wait(0.3)
        stop.set()
        blocked.join()
        assert _position(ledger) == 0
        release_lease(ledger.store, "another worker")
        stop = threading.Event()
        runner = threading.Thread(
            target=run_projector,
            args=(Ledger(db).store, stop),
            kwargs={"holder": "me", "poll_s": 0.01, "clock": SYSTEM_CLOCK},
        )
        runner.start()
        try:
            for _ in range(500):
                if _position(ledger) == ledger.head().seq:
                    break
                stop.wait(0.02)
        finally:
            stop.set()
            runner.join()
        assert _position(ledger) == ledger.head().seq
        assert ledger.store.search.titles_indexed() == ledger.head().seq
        assert lease_holder(ledger.store, 0) is None  # given up when it stopped
    finally:
        ledger.close()


# -- readers fold the events past the position --------------------------------------------------------

_AS_OF = [ts(1, 5), ts(2, 10), ts(2, 39), ts(3, 20), ts(4, 39), ts(5, 39), ts(9)]


def _records(ledger: Ledger, known: list[int | None]) -> list[bytes]:
    out = []
    for pid in (P, Q):
        for at in _AS_OF:
            for k in known:
                out.append(ledger.record_bytes(pid, parse_ts(at), k)[0])
    return out


@pytest.mark.parametrize("upto", [0, 3, 45, 60, 95, 120])
def test_a_record_read_with_the_projector_behind_equals_the_record_caught_up(
    new_db: NewDb, upto: int
) -> None:
    ledger = _ledger(new_db())
    try:
        recorded = sorted({parse_ts(e.recorded_at) for e in ledger.store.read_log()})
        known: list[int | None] = [None, *recorded]
        catch_up(ledger.store, READ_BY_RECORDS, upto=min(upto, ledger.head().seq))
        assert _position(ledger) == min(upto, ledger.head().seq)
        behind = _records(ledger, known)
        ledger.ops.project(READ_BY_RECORDS)
        assert _position(ledger) == ledger.head().seq
        assert behind == _records(ledger, known)
    finally:
        ledger.close()


def test_a_record_read_with_the_projector_behind_keeps_the_statement_budget(new_db: NewDb) -> None:
    from tests.projections.test_record import _traced

    ledger = _ledger(new_db())
    try:
        catch_up(ledger.store, READ_BY_RECORDS, upto=60)
        ledger.record(P)  # warm this thread's connection
        (rec, _, _), statements = _traced(ledger, lambda: ledger.record(P))
        counted = [
            s
            for s in statements
            if s.split()[0].upper() not in ("BEGIN", "COMMIT") and "ORDER BY seq DESC LIMIT 1" not in s
        ]
        assert rec.inbound and counted
        assert len(counted) <= rec.caps.database_statements, counted
    finally:
        ledger.close()


# -- who projects: the appender ------------------------------------------------------------------------


def test_an_appender_past_the_allowed_lag_projects_it_itself(new_db: NewDb) -> None:
    lagging = _ledger(new_db("lagging.db"), max_lag=1_000)
    pressed = _ledger(new_db("pressed.db"), max_lag=20)
    try:
        head = lagging.head().seq
        assert _position(lagging) == 0  # within its lag: left to a projector
        assert head - _position(pressed) <= 20  # every append that passed the lag brought it back
        assert _position(pressed) > 0
    finally:
        lagging.close()
        pressed.close()


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "1e3", "1000001", "99999999999"])
def test_a_bad_max_lag_is_refused_naming_the_setting(raw: str) -> None:
    with pytest.raises(SettingError, match=ENV_MAX_LAG):
        max_lag(raw)


@pytest.mark.parametrize(
    ("raw", "want"), [(None, 10_000), ("", 10_000), (" 250 ", 250), ("1000000", 1_000_000)]
)
def test_the_max_lag_setting(raw: str | None, want: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MAX_LAG, raising=False)
    assert max_lag(raw) == want


def test_project_step_advances_a_bounded_step(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("service.ops.projector.STEP", 10)
    ledger = _ledger(new_db())
    try:
        assert project_step(ledger.store, READ_BY_RECORDS)
        assert _position(ledger) == 10
        steps: Callable[[], bool] = lambda: project_step(ledger.store, READ_BY_RECORDS)  # noqa: E731
        while steps():
            pass
        assert _position(ledger) == ledger.head().seq
    finally:
        ledger.close()


# -- an existing ledger upgrades in place ---------------------------------------------------------------


def test_a_ledger_of_the_layout_before_the_projector_counts_its_spans_as_projected(new_db: NewDb) -> None:
    """Its appends wrote the spans and counts: the upgrade sets the position to its head, so nothing is
    projected again, the rows stay as they were, and its records and walk are unchanged."""
    source = _ledger(new_db("source.db"))
    try:
        source.ops.project(READ_BY_RECORDS)
        old = new_db("old.db")
        build_old_ledger(old, version_before(old, "projector"), source)
        edit(old, "DELETE FROM derived_pending")  # its appends kept the rows: none left to the store
        for table, sql in (("inbound_spans", SPANS_SQL), ("inbound_counts", COUNTS_SQL)):
            for row in rows(source.url, sql):
                marks = ", ".join("?" * len(row))
                edit(old, f"INSERT INTO {table} VALUES ({marks})", params=row)
        upgraded = Ledger(old)
        try:
            assert _position(upgraded) == upgraded.head().seq == source.head().seq
            assert rows(old, SPANS_SQL) == rows(source.url, SPANS_SQL)
            assert verify_store(upgraded.store).ok
            assert _records(upgraded, [None]) == _records(source, [None])
        finally:
            upgraded.close()
    finally:
        source.close()


def test_a_cli_import_projects_what_it_wrote_before_it_exits(new_db: NewDb, tmp_path: Path) -> None:
    """No projector runs beside the CLI: `ledger import` leaves the spans at the head itself (its appends
    stay within the allowed lag, so only its exit projects them)."""
    from click.testing import CliRunner

    from cli.main import main

    db = new_db()
    lines = tmp_path / "events.ndjson"
    lines.write_text("".join(json.dumps(msgspec.to_builtins(e)) + "\n" for b in _history() for e in b))
    got = CliRunner().invoke(main, ["import", str(lines), "--db", db], env={ENV_MAX_LAG: "1000000"})
    assert got.exit_code == 0, got.output
    ledger = Ledger(db)
    try:
        assert ledger.head().seq == sum(len(b) for b in _history())
        assert _position(ledger) == ledger.head().seq
        assert rows(db, SPANS_SQL) != []
    finally:
        ledger.close()


def test_a_command_projects_only_the_ledgers_it_appended_to(new_db: NewDb, tmp_path: Path) -> None:
    """A process that appended to another ledger before (a test run, a program calling the CLI in
    process): the command leaves that ledger as it was, whose database may be gone by then."""
    from click.testing import CliRunner

    from cli.main import main

    other = _ledger(new_db())  # appended to in this process, behind its head (lag allowed)
    try:
        behind = _position(other)
        assert behind < other.head().seq
        lines = tmp_path / "events.ndjson"
        lines.write_text("".join(json.dumps(msgspec.to_builtins(e)) + "\n" for b in _history() for e in b))
        got = CliRunner().invoke(main, ["import", str(lines), "--db", new_db()], env={ENV_MAX_LAG: "1000000"})
        assert got.exit_code == 0, got.output
        assert _position(other) == behind
    finally:
        other.close()


def test_a_pure_projection_is_one_line_a_table_kept_by_the_same_batches(new_db: NewDb) -> None:
    """`Logged.pure`: a table whose rows are a function of each event, kept at its own position."""
    ledger = _ledger(new_db())
    try:
        edit(ledger.url, "CREATE TABLE scratch_types (seq BIGINT PRIMARY KEY, type TEXT NOT NULL)")
        types = Logged.pure(
            "scratch_types",
            "INSERT INTO scratch_types (seq, type) VALUES (?, ?)",
            lambda link: [(link.event.seq, link.event.type)] if link.event.type != "paper.observed" else [],
        )
        head = ledger.head().seq
        assert catch_up(ledger.store, [types], upto=50) == 50
        assert catch_up(ledger.store, [types]) == head
        want = [(e.seq, e.type) for e in ledger.store.read_log() if e.type != "paper.observed"]
        assert rows(ledger.url, "SELECT seq, type FROM scratch_types ORDER BY seq") == want
        assert ledger.store.spans.projection_position("scratch_types") == head
        assert _position(ledger) == 0  # each projection at its own position
    finally:
        ledger.close()


def test_ledger_verify_reports_each_projections_position(new_db: NewDb) -> None:
    """`ledger verify --json` names how far each projection was checked against the events."""
    from click.testing import CliRunner

    from cli.main import main

    ledger = _ledger(new_db())
    try:
        catch_up(ledger.store, READ_BY_RECORDS, upto=40)
        got = CliRunner().invoke(main, ["verify", "--json", "--db", ledger.url])
        assert got.exit_code == 0, got.output
        positions = json.loads(got.output)["projections"]
        assert positions["inbound_spans"] == positions["screen"] == 40
        names = {"inbound_spans", "work_keys", "check_works", "search_titles", "catalogue", "screen"}
        assert set(positions) == names
    finally:
        ledger.close()

"""service/intake/beside.py and load.py: the walks due while batches remain run in a walker process,
beside the appends. A walk there reports what a walk in the importing process reports; an import walked
beside ends as one walked in the importing process; a walker that is killed or fails is walked again in
the importing process, once warned; a row altered between batches is reported by the walk beside; a
walker outlives no importing process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ledger.model import events as ev
from service.intake import beside, load
from service.intake.beside import WalkerGone, WalkerProcess, walk_once
from service.intake.load import APPENDING, Imported, import_file
from service.ledger import Ledger, VerifyReport
from service.ops.scrub import PassLog, chain_status
from tests import factories as fx
from tests.conftest import NewDb
from tests.raw import edit, one
from tests.service.intake.test_intake_load import history, write
from tests.waiting import wait_until

pytestmark = pytest.mark.process

T0 = fx.Clock().us  # one instant for twin ledgers: the same recorded_at, so the same hashes


def _alter(db: str, seq: int) -> None:
    """Change the stored data of the event at `seq` (a paper's title), its hash left as it was."""
    data = str(one(db, "SELECT data FROM events WHERE seq = ?", (seq,)))
    assert "Paper" in data
    edit(db, "UPDATE events SET data = ? WHERE seq = ?", params=(data.replace("Paper", "Pxper"), seq))


def _twin(new_db: NewDb, tmp_path: Path, name: str, prior: list[ev.Event]) -> Ledger:
    """A ledger at the fixed clock holding `prior`, imported and walked here (none when empty)."""
    ledger = Ledger(new_db(f"{name}.db"), clock=fx.Clock(T0))
    if prior:
        got = import_file(ledger, write(tmp_path / f"{name}-prior.ndjson", prior))
        assert got.walk is not None and got.walk.ok
    return ledger


def _same(report: VerifyReport | None) -> Any:
    """A report less the instant its verified point was saved and its steps' times (the things two
    walks differ in)."""
    assert report is not None
    point = report.point
    return report._replace(
        point=None if point is None else point._replace(verified_at=""),
        steps=tuple(s._replace(seconds=0.0) for s in report.steps),
    )


def _state(ledger: Ledger) -> tuple[Any, Any]:
    """The verified point less its instant, and the last pass less its instants."""
    point = ledger.store.verifying.verified_point()
    p = PassLog(ledger.store, ledger.clock).last()
    return (
        None if point is None else point._replace(verified_at=""),
        None if p is None else (p.kind, p.events, p.head_seq, p.ok, p.first_bad_seq, p.reason),
    )


def _asks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per walk asked of a walker process."""
    asked: list[int] = []
    ask = WalkerProcess.ask

    def counted(self: WalkerProcess) -> None:
        asked.append(1)
        ask(self)

    monkeypatch.setattr(WalkerProcess, "ask", counted)
    return asked


# -- a walk in the walker process reports what a walk here reports --------------------------------


@pytest.mark.parametrize("case", ["whole", "resumed", "broken"])
def test_a_walk_beside_reports_what_a_walk_here_reports(new_db: NewDb, tmp_path: Path, case: str) -> None:
    events = history(12)  # 34 events
    prior = events[:10] if case == "resumed" else []
    twins = [_twin(new_db, tmp_path, name, prior) for name in ("beside", "here")]
    for ledger in twins:
        import_file(ledger, write(tmp_path / "f.ndjson", events[len(prior) :]), walk=False)
        if case == "broken":
            _alter(ledger.url, 11)
    walker = WalkerProcess(twins[0].url)
    try:
        walker.ask()
        there = walker.done(wait=True)
    finally:
        walker.close()
    here = walk_once(twins[1].store, PassLog(twins[1].store, twins[1].clock))
    assert _same(there) == _same(here)
    assert here.ok is (case != "broken") and here.head.seq == 34
    assert here.resumed_from == (10 if case == "resumed" else None)
    assert _state(twins[0]) == _state(twins[1])
    for ledger in twins:
        ledger.close()


# -- an import walked beside ends as one walked here ------------------------------------------------


def _import(
    ledger: Ledger, path: Path, monkeypatch: pytest.MonkeyPatch, on_beside: bool, **kw: Any
) -> Imported:
    monkeypatch.setattr(load, "BESIDE", on_beside)
    return import_file(ledger, path, batch_size=10, **kw)


@pytest.mark.parametrize("every", [10, 25])
def test_an_import_walked_beside_ends_as_one_walked_here(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", every)
    asked = _asks(monkeypatch)
    path = write(tmp_path / "f.ndjson", history(30))  # 88 events, 9 batches
    got: dict[bool, Imported] = {}
    twins = {on: _twin(new_db, tmp_path, f"t{on}", []) for on in (True, False)}
    for on_beside, ledger in twins.items():
        got[on_beside] = _import(ledger, path, monkeypatch, on_beside)
    assert asked  # walks ran beside (only in the first import)
    assert got[True]._replace(walk=None) == got[False]._replace(walk=None)
    walks = [g.walk for g in got.values()]
    assert all(w is not None and w.ok and w.head.seq == 88 for w in walks)
    point, first = _state(twins[True])
    assert point == _state(twins[False])[0] and point is not None and point.seq == 88
    # the first whole walk is recorded either way; beside it may reach further than at its ask
    assert first is not None and first[0] == "verify" and first[3] is True and first[1] >= every
    for ledger in twins.values():
        chain = chain_status(ledger.store, PassLog(ledger.store, ledger.clock))
        assert chain["ok"] and chain["events_checked"] == 0 and chain["trusted"]["to"] == 88
        ledger.close()


# -- a walker killed, or failing, is walked again here, once warned ---------------------------------


def _killer(at: int) -> Callable[[str, int, int, int], None]:
    """A progress callback that kills the walker process (kill -9) once `at` lines are committed."""

    def told(phase: str, lines: int, read: int, size: int) -> None:
        if phase == APPENDING and lines == at:
            walkers = multiprocessing.active_children()
            assert len(walkers) == 1
            os.kill(walkers[0].pid or 0, signal.SIGKILL)
            walkers[0].join()

    return told


def _warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "walker process stopped" in r.getMessage()]


@pytest.mark.parametrize("at", [20, 80])
def test_a_walker_killed_mid_import_is_walked_here_once_warned(
    fresh_ledger: Ledger,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    at: int,
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", 10)
    path = write(tmp_path / "f.ndjson", history(30))  # 88 events, 9 batches
    with caplog.at_level(logging.WARNING, logger="ledger.import"):
        got = _import(fresh_ledger, path, monkeypatch, True, progress=_killer(at))
    assert len(_warned(caplog)) == 1 and "exit code -9" in _warned(caplog)[0]
    assert got.walk is not None and got.walk.ok and got.walk.head.seq == got.head.seq == 88
    point = fresh_ledger.store.verifying.verified_point()
    assert point is not None and (point.seq, point.hash) == (88, got.head.hash)
    assert multiprocessing.active_children() == []
    chain = chain_status(fresh_ledger.store, PassLog(fresh_ledger.store, fresh_ledger.clock))
    assert chain["ok"] and chain["events_checked"] == 0 and chain["last_full_walk"]["by"] == "verify"
    assert fresh_ledger.verify().ok


def test_a_walker_whose_walk_fails_is_walked_here_once_warned(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", 10)
    monkeypatch.setattr(beside, "start_context", lambda: multiprocessing.get_context("fork"))
    importer = os.getpid()
    walk = beside.walk_once

    def failing(store: Any, passes: PassLog) -> VerifyReport:
        if os.getpid() != importer:
            raise RuntimeError("a disk error, say")
        return walk(store, passes)

    monkeypatch.setattr(beside, "walk_once", failing)  # what the forked walker calls
    path = write(tmp_path / "f.ndjson", history(30))
    with caplog.at_level(logging.WARNING, logger="ledger.import"):
        got = _import(fresh_ledger, path, monkeypatch, True)
    assert len(_warned(caplog)) == 1 and "RuntimeError: a disk error, say" in _warned(caplog)[0]
    assert got.walk is not None and got.walk.ok and got.walk.head.seq == 88
    point = fresh_ledger.store.verifying.verified_point()
    assert point is not None and point.seq == 88
    assert PassLog(fresh_ledger.store, fresh_ledger.clock).last() is not None
    assert multiprocessing.active_children() == []


def test_a_walker_that_cannot_open_the_ledger_says_why(tmp_path: Path) -> None:
    walker = WalkerProcess(str(tmp_path / "no-such-dir" / "ledger.db"))
    try:
        walker.ask()
        with pytest.raises(WalkerGone, match="could not open the ledger"):
            walker.done(wait=True)
    finally:
        walker.close(now=True)


# -- a row altered between batches is reported by the walk beside -----------------------------------


@pytest.mark.parametrize("prior", [0, 10])
def test_a_row_altered_between_batches_is_reported_by_the_walk_beside(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prior: int
) -> None:
    """The first batch's first event (a paper) is altered after its commit and before any walk reads it:
    the walk asked then (beside, or here) names it; with no walk recorded before, it is the first
    whole walk, else a resumed one."""
    monkeypatch.setattr(load, "WALK_EVERY", 10)
    asked = _asks(monkeypatch)
    events = history(30)
    bad = prior + 1
    got: dict[bool, Imported] = {}
    for on_beside in (True, False):
        ledger = _twin(new_db, tmp_path, f"t{on_beside}", events[:prior])

        def told(phase: str, lines: int, read: int, size: int, db: str = ledger.url) -> None:
            if phase == APPENDING and lines == 10:
                _alter(db, bad)

        path = write(tmp_path / "f.ndjson", events[prior:])
        got[on_beside] = _import(ledger, path, monkeypatch, on_beside, progress=told)
        ledger.close()
    assert asked
    walks = [g.walk for g in got.values()]
    for w in walks:
        assert w is not None and not w.ok and w.first_bad_seq == bad
        assert w.resumed_from == (prior or None) and w.events_checked == 0
    assert walks[0] is not None and walks[1] is not None and walks[0].reason == walks[1].reason


# -- a walker outlives no importing process -----------------------------------------------------------

_HOLDER = """
import sys
from service.intake import beside
if sys.argv[2] == "getppid":
    beside._die_with_parent = lambda: None
walker = beside.WalkerProcess(sys.argv[1])
print(walker.process.pid, flush=True)
sys.stdin.read()
"""


def _ended(pid: int) -> bool:
    """Whether the process is gone or a zombie (ended, not yet reaped by whoever adopted it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", ["pdeathsig", "getppid"])
def test_a_walker_ends_when_the_importing_process_is_killed(new_db: NewDb, how: str) -> None:
    db = new_db()
    Ledger(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, db, how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        assert not _ended(pid)
    finally:
        holder.kill()
        holder.wait()
    wait_until(lambda: _ended(pid), f"the walker process {pid} ends after its parent was killed")


def test_a_walker_that_cannot_start_is_walked_here_once_warned(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", 10)

    def no_process() -> Any:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", lambda self: no_process())
    with caplog.at_level(logging.WARNING, logger="ledger.import"):
        got = _import(fresh_ledger, write(tmp_path / "f.ndjson", history(30)), monkeypatch, True)
    assert len(_warned(caplog)) == 1 and "could not start" in _warned(caplog)[0]
    assert got.walk is not None and got.walk.ok and got.walk.head.seq == 88
    point = fresh_ledger.store.verifying.verified_point()
    assert point is not None and point.seq == 88


# -- a walker is forked while the importing process holds no read mark --------------------------------


def _sqlite_locks(pid: int, db: str) -> set[tuple[str, int, str, str]]:
    """The POSIX locks `pid` holds on the ledger's file and its -shm file: (file, kind, start, end)."""
    files = {os.stat(db + suffix).st_ino: name for suffix, name in (("", "db"), ("-shm", "shm"))}
    held = set()
    for entry in Path("/proc/locks").read_text().splitlines():
        fields = entry.split()
        if fields[1] == "POSIX" and fields[4] == str(pid) and int(fields[5].split(":")[2]) in files:
            held.add((files[int(fields[5].split(":")[2])], fields[3], fields[6], fields[7]))
    return {(name, int(start), kind, end) for name, kind, start, end in held}


@pytest.mark.sqlite_only("the locks SQLite holds on its own files")
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads /proc/locks")
@pytest.mark.parametrize("early", [False, True], ids=["at-the-first-walk", "before-the-check"])
def test_a_walker_is_forked_while_the_importing_process_holds_no_read_mark(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, early: bool
) -> None:
    """SQLite keeps its lock records per process, and a forked child inherits them: the fork must come
    when the importing process holds only what an idle WAL connection holds, the file's shared lock and
    the -shm file's open-connection byte, so that every lock the walker takes is its own."""
    monkeypatch.setattr(load, "WALK_EVERY", 10)
    if early:
        monkeypatch.setattr(load, "EARLY_WALKER_BYTES", 0)
    context = beside.start_context
    seen: list[set[tuple[str, int, str, str]]] = []

    def looked() -> Any:
        seen.append(_sqlite_locks(os.getpid(), fresh_ledger.url))
        return context()

    monkeypatch.setattr(beside, "start_context", looked)
    _import(fresh_ledger, write(tmp_path / "f.ndjson", history(30)), monkeypatch, True)
    idle = {("db", 1073741826, "READ", "1073742335"), ("shm", 128, "READ", "128")}
    assert seen == [idle]


# -- a big file's walker starts before its check, sharing this process's pages ----------------------


@pytest.mark.parametrize("big", [False, True], ids=["small-file", "big-file"])
def test_a_big_file_starts_its_walker_before_the_check(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    """Forked before the check, the walker holds none of the check's objects (a copy of each page the
    check wrote after a later fork would be the walker's own)."""
    monkeypatch.setattr(load, "WALK_EVERY", 10)
    path = write(tmp_path / "f.ndjson", history(30))
    monkeypatch.setattr(load, "EARLY_WALKER_BYTES", path.stat().st_size - 1 if big else path.stat().st_size)
    order: list[str] = []
    start, run = WalkerProcess.__init__, load.FileCheck.run

    def started(self: WalkerProcess, url: str) -> None:
        order.append("walker")
        start(self, url)

    def checked(self: Any, numbered: Any) -> None:
        order.append("check")
        run(self, numbered)

    monkeypatch.setattr(WalkerProcess, "__init__", started)
    monkeypatch.setattr(load.FileCheck, "run", checked)
    got = _import(fresh_ledger, path, monkeypatch, True)
    assert order == (["walker", "check"] if big else ["check", "walker"])
    assert got.walk is not None and got.walk.ok and got.walk.head.seq == 88


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_objects_are_frozen_while_a_forked_walker_shares_their_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """The cyclic collector writes to what it scans: it leaves the objects of a fork alone while the
    walker lives, and scans them again once the walker has ended (a spawned walker shares nothing).
    The process is not started here: a fork from this process, which may run other threads, could
    inherit a lock one of them holds."""
    import gc

    monkeypatch.setattr(beside, "start_context", lambda: multiprocessing.get_context(method))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", lambda self: None)
    # as in a fresh `ledger import` (a server started in this process earlier froze its objects, and a
    # walker then freezes nothing more): freezing only spares objects the collector's scans
    gc.unfreeze()
    walker = WalkerProcess(str(tmp_path / "l.db"))
    assert (gc.get_freeze_count() > 0) == (method == "fork")
    walker._thaw()  # what close() does once the walker has ended
    walker._thaw()
    assert gc.get_freeze_count() == 0

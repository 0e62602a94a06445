"""The import's walks in a second process, while its appends go on: the walker process opens
its own connection from the ledger's path or URL, walks when asked, and answers with the report.

A walk re-reads what was stored, as in the importing process, and writes only the verified point and,
for the first whole walk, the pass log: small writes that on SQLite wait for an append's transaction
to end (the busy timeout, 60 s), and on PostgreSQL touch no table an append locks. The walker ends when
told, when its pipe closes, or when its parent is gone: Linux kills it with its parent (prctl
PDEATHSIG), and elsewhere it sees a new parent id between walks.

A forked walker's SQLite shares its parent's per-file lock records (SQLite keeps them per process), so
it is forked only between two commits, when the parent holds no transaction and no read mark, and it
dies with its parent, whose connection holds the file's shared locks for both.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
from multiprocessing.connection import Connection

from ledger.storage.interface import Store
from ledger.storage.verify import VerifyReport, verify_store
from service.children import start_context
from service.ledger import Ledger
from service.ops.scrub import VERIFY, PassLog, pass_of

# seconds the walker waits for a request before it looks again whether its parent is still there
PARENT_CHECK_S = 1.0
# seconds the import waits for the walker to end when told to, before it kills it
STOP_S = 10.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class WalkerGone(Exception):
    """The walker process ended or failed: its walk in flight, if any, is lost."""


def walk_once(store: Store, passes: PassLog) -> VerifyReport:
    """Walk from the last verified point to the head, re-reading what was stored, and move the point
    there; with no full walk recorded yet, walk from seq 1 and record the walk as one."""
    clock = passes.clock
    started = clock.now_us()
    if passes.last() is None:
        report = verify_store(store, remember=clock)
        passes.record(pass_of(VERIFY, report, started, clock.now_us()))
        return report
    return verify_store(store, resume=True, remember=clock)


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent ends (elsewhere the look between walks does)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _serve(conn: Connection, url: str, parent: int) -> None:
    """The walker process: one walk per request, each answered with its report (or why it failed)."""
    # a Ctrl-C reaches the whole process group: the import handles it, and stops this process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent:
        return
    try:
        # its own connection: a forked child never uses its parent's (it ends by os._exit)
        ledger = Ledger(url, raise_alerts=False)
    except Exception as e:
        with contextlib.suppress(OSError):
            conn.send(f"it could not open the ledger: {type(e).__name__}: {e}")
        return
    passes = PassLog(ledger.store, ledger.clock)
    try:
        while True:
            if not conn.poll(PARENT_CHECK_S):
                if os.getppid() != parent:
                    return
                continue
            if conn.recv() is None:
                return
            try:
                report = walk_once(ledger.store, passes)
            except Exception as e:
                conn.send(f"its walk failed: {type(e).__name__}: {e}")
                return
            conn.send(report)
    except (EOFError, OSError):
        return  # the import closed the pipe, or ended
    finally:
        ledger.close()


class WalkerProcess:
    """A walker process beside the import: one walk at a time, asked for and collected by the import."""

    def __init__(self, url: str) -> None:
        ctx = start_context()
        self._conn, theirs = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve, args=(theirs, url, os.getpid()), name="ledger-import-walker", daemon=True
        )
        # a forked walker shares this process's pages until one of the two writes to them; the cyclic
        # collector writes to every object it scans, so the objects of now are left out of its scans in
        # both (reference counting still frees them), and the pages stay shared, counted once
        self._froze = ctx.get_start_method() == "fork" and gc.get_freeze_count() == 0
        if self._froze:
            gc.collect()
            gc.freeze()
        try:
            self.process.start()
        except OSError as e:  # no memory or processes left for it
            self._conn.close()
            self._thaw()
            raise WalkerGone(f"it could not start ({e})") from None
        finally:
            theirs.close()  # its end now lives only in the walker: its death reads here as the pipe's end
        self.busy = False  # a walk was asked for and its report not collected

    def ask(self) -> None:
        """Start a walk (none may be running)."""
        assert not self.busy
        try:
            self._conn.send(True)
        except OSError:
            raise WalkerGone(f"it ended (exit code {self._exit_code()})") from None
        self.busy = True

    def done(self, wait: bool) -> VerifyReport | None:
        """The report of the walk asked for, once it has ended (None while it runs, unless `wait`)."""
        if not self.busy or (not wait and not self._conn.poll()):
            return None
        try:
            got = self._conn.recv()
        except (EOFError, OSError):
            raise WalkerGone(f"it ended (exit code {self._exit_code()})") from None
        self.busy = False
        if isinstance(got, str):
            raise WalkerGone(got)
        report: VerifyReport = got
        return report

    def _exit_code(self) -> int | None:
        self.process.join(STOP_S)
        return self.process.exitcode

    def close(self, *, now: bool = False) -> None:
        """End the walker: told to, after the walk it is on (`now`: killed at once)."""
        if not now:
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self.process.join(STOP_S)
        if self.process.is_alive():
            self.process.kill()  # a walk cut short writes nothing half-done: its writes are transactions
        self.process.join()
        self._conn.close()
        self._thaw()

    def _thaw(self) -> None:
        """Scan this process's objects again, once the walker that shared their pages is gone."""
        if self._froze:
            self._froze = False
            gc.unfreeze()

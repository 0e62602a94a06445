"""Loaded by a `ledger serve` a test starts with this directory on PYTHONPATH (never otherwise), in the
supervisor and in every worker: each step of the server's projector writes a line when it starts and
one when it ends ("start|end PID MONOTONIC_NS") to the file $PROJECTOR_WATCH, so a test sees which
workers projected and when. Each batch of a logged projection writes, from inside its transaction, the
lease row as it reads it there, the wall clock and the lease the batch itself checked ("batch PID
MONOTONIC_NS HOLDER EXPIRES_US NOW_US NAME MINE", MINE "-" for a batch that checked none), so a test
sees under whose lease every batch was written: the server's projector's, and those a request
projects (back-pressure, a read that projects first) through the same watched projections.
$PROJECTOR_WATCH_LEASE_S shortens the lease (a handover within a test), $PROJECTOR_WATCH_STEP the
events a step applies, $PROJECTOR_WATCH_PAUSE_S keeps each step that much longer (the window in
which a second projector would show), and $PROJECTOR_WATCH_STALL_S makes one batch of the whole
server (the first one written) hold its transaction that long after its rows: a step that outlasts
its lease."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any

# the holder whose lease the current batch of this thread checked (set by the projector's `hold`)
_checked = threading.local()


def _line(path: str, what: str) -> None:
    # one write of a short line to a file opened for appending: lines of several processes never mix
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{what} {os.getpid()} {time.monotonic_ns()}\n".encode())
    finally:
        os.close(fd)


def _first(path: str) -> bool:
    """Whether this process is the first of the server to ask (a file made once, by one of them)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    return True


def _watched(path: str, apply: Any, name: str, stall_s: float) -> Any:
    from ledger.model.instants import SYSTEM_CLOCK

    def apply_watched(store: Any, conn: Any, after: int, upto: int) -> None:
        row = store.query(conn, "SELECT holder, expires_us FROM projector_lease WHERE id = 1").fetchone()
        holder, expires = ("-", 0) if row is None else (row[0], row[1])
        mine, _checked.holder = getattr(_checked, "holder", "-"), "-"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            now = SYSTEM_CLOCK.now_us()
            line = f"batch {os.getpid()} {time.monotonic_ns()} {holder} {expires} {now} {name} {mine}\n"
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        apply(store, conn, after, upto)
        if stall_s and _first(path + ".stalled"):
            time.sleep(stall_s)

    return apply_watched


def _install(path: str) -> None:
    from ledger.storage import projector as storage
    from service.ops import projector

    step, run = projector.project_step, projector.run_projector
    pause = float(os.environ.get("PROJECTOR_WATCH_PAUSE_S", "0"))
    stall = float(os.environ.get("PROJECTOR_WATCH_STALL_S", "0"))
    projector.STEP = int(os.environ.get("PROJECTOR_WATCH_STEP", str(projector.STEP)))
    lease_s = float(os.environ.get("PROJECTOR_WATCH_LEASE_S", str(projector.LEASE_S)))
    watched = tuple(
        dataclasses.replace(p, apply=_watched(path, p.apply, p.name, stall))
        if isinstance(p, storage.Logged)
        else p
        for p in storage.PROJECTIONS
    )
    # what a request projects (service/ledger.py reads this name when it is imported, after this)
    reads = {p.name for p in storage.READ_BY_RECORDS}
    storage.READ_BY_RECORDS = tuple(w for w in watched if isinstance(w, storage.Logged) and w.name in reads)
    hold = storage.hold

    def hold_noted(store: Any, conn: Any, lease: Any, name: str) -> None:
        hold(store, conn, lease, name)
        _checked.holder = lease.holder

    storage.hold = hold_noted

    def watched_step(*args: Any, **kwargs: Any) -> bool:
        _line(path, "start")
        try:
            behind = step(*args, **kwargs)
            time.sleep(pause)
            return behind
        finally:
            _line(path, "end")

    def shorter_lease(*args: Any, **kwargs: Any) -> None:
        run(
            *args,
            **{
                "lease_s": lease_s,
                "poll_s": min(projector.POLL_S, lease_s / 4),
                "projections": watched,
                **kwargs,
            },
        )

    projector.project_step = watched_step  # type: ignore[assignment]
    projector.run_projector = shorter_lease  # type: ignore[assignment]


if os.environ.get("PROJECTOR_WATCH"):
    _install(os.environ["PROJECTOR_WATCH"])

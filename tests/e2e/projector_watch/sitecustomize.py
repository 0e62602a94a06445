"""Loaded by a `ledger serve` a test starts with this directory on PYTHONPATH (never otherwise), in the
supervisor and in every worker: each step of the server's projector writes a line when it starts and
one when it ends ("start|end PID MONOTONIC_NS") to the file $PROJECTOR_WATCH, so a test sees which
workers projected and when. $PROJECTOR_WATCH_LEASE_S shortens the lease (a handover within a test),
$PROJECTOR_WATCH_STEP the events a step applies, and $PROJECTOR_WATCH_PAUSE_S keeps each step that much
longer (the window in which a second projector would show)."""

from __future__ import annotations

import os
import time
from typing import Any


def _line(path: str, what: str) -> None:
    # one write of a short line to a file opened for appending: lines of several processes never mix
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{what} {os.getpid()} {time.monotonic_ns()}\n".encode())
    finally:
        os.close(fd)


def _install(path: str) -> None:
    from service.ops import projector

    step, run = projector.project_step, projector.run_projector
    pause = float(os.environ.get("PROJECTOR_WATCH_PAUSE_S", "0"))
    projector.STEP = int(os.environ.get("PROJECTOR_WATCH_STEP", str(projector.STEP)))
    lease_s = float(os.environ.get("PROJECTOR_WATCH_LEASE_S", str(projector.LEASE_S)))

    def watched_step(*args: Any, **kwargs: Any) -> bool:
        _line(path, "start")
        try:
            behind = step(*args, **kwargs)
            time.sleep(pause)
            return behind
        finally:
            _line(path, "end")

    def shorter_lease(*args: Any, **kwargs: Any) -> None:
        run(*args, **{"lease_s": lease_s, "poll_s": min(projector.POLL_S, lease_s / 4), **kwargs})

    projector.project_step = watched_step  # type: ignore[assignment]
    projector.run_projector = shorter_lease  # type: ignore[assignment]


if os.environ.get("PROJECTOR_WATCH"):
    _install(os.environ["PROJECTOR_WATCH"])

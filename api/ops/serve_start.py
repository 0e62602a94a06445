"""When `ledger serve` started, handed to its worker processes through the environment.

The chain is walked once after that instant (api/ops/scrub.py), by whichever worker takes the scrub lock
first, not once per worker. Kept apart from api/ops/scrub.py so that `ledger serve` notes it without
importing the metrics before their directory is set (api/server.py).
"""

from __future__ import annotations

import os

from ledger.model.instants import Clock

ENV_SERVE_STARTED = "LEDGER_SERVE_STARTED_US"


def mark_server_start(clock: Clock) -> None:
    """Note this server's start, at `clock`'s now, in the environment its workers inherit."""
    os.environ[ENV_SERVE_STARTED] = str(clock.now_us())


def server_start(clock: Clock) -> int:
    """When this server started: `ledger serve`'s instant, else `clock`'s now (an app served some
    other way)."""
    given = os.environ.get(ENV_SERVE_STARTED, "")
    return int(given) if given.isdigit() else clock.now_us()

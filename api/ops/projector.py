"""The server's projector (service/ops/projector.py) as background work of the app: every worker runs
the loop, and the lease in the database lets one of them follow the log at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette

from api.ops.background import start_thread
from api.state import state_of


async def start(app: Starlette) -> Callable[[], Awaitable[None]]:
    """Start this process's projector thread (a read-only server writes nothing: none); returns its
    stop()."""
    state = state_of(app)
    if state.settings.read_only:

        async def nothing() -> None:
            return None

        return nothing
    return start_thread("ledger-projector", state.ledger.ops.run_projector)

"""The server's scrubber (service/ops/scrub.py) as background work of the app, and the pass log it shares
with /healthz, the integrity report and every page that shows a record or a paper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from starlette.applications import Starlette

from api.ops.background import start_thread
from api.ops.serve_start import server_start
from api.state import state_of
from ledger.model.facts import ScrubPass
from service.ops.scrub import PassLog

# Answers about records and papers carry `Ledger-Chain: broken <seq>` while the last full walk says so.
CHAIN_HEADER = "Ledger-Chain"


def passes_of(app: Starlette) -> PassLog:
    """The app's pass log (made with the app)."""
    return state_of(app).passes


def broken_walk(app: Starlette) -> ScrubPass | None:
    """The last full walk of the chain if it found a break, else None (one indexed read)."""
    last = passes_of(app).last()
    return last if last is not None and not last.ok else None


def chain_headers(broken: ScrubPass | None) -> dict[str, str]:
    """`Ledger-Chain: broken <seq>` when the last full walk found the chain broken; else no header."""
    if broken is None:
        return {}
    return {CHAIN_HEADER: f"broken {broken.first_bad_seq}" if broken.first_bad_seq else "broken"}


async def start(app: Starlette) -> Callable[[], Awaitable[None]]:
    """Start this process's scrubber thread (a pass when none has begun since the server started, then
    whenever the last recorded one is LEDGER_SCRUB_INTERVAL old, and no other process is scrubbing);
    returns its stop()."""
    state = state_of(app)
    ops, passes = state.ledger.ops, state.passes
    since = server_start(state.clock)
    return start_thread(
        "ledger-scrub", partial(ops.run_scrubber, passes, state.settings.scrub_interval, since_us=since)
    )

"""How the application starts its worker processes (the resolver's pool, the import's walker)."""

from __future__ import annotations

import multiprocessing
import threading
from multiprocessing.context import ForkContext, SpawnContext


def start_context() -> ForkContext | SpawnContext:
    """Fork from a process of one thread (the CLI): the child starts at once, its imports done. From one
    of several (a server), spawn: a forked child would inherit locks other threads hold."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")

"""One database connection per thread, closed once its thread has ended (no file or socket left open).

A server runs reads in pool threads that come and go (anyio ends an idle worker after 10 s); a
connection kept in a bare `threading.local` then outlives its thread until the garbage collector
finds it (SQLite's connection sits in a reference cycle through its statement cache), so open files
grew with every new thread. Here each connection is also kept in a registry and closed when its
thread object goes away, or, at the latest, when any thread next opens a connection.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

C = TypeVar("C")


class ThreadConnections(Generic[C]):
    """This thread's connection, and the closing of those whose threads have ended."""

    def __init__(self, close: Callable[[C], None]) -> None:
        self._close = close
        self._local = threading.local()
        self._keys = itertools.count()
        # key -> (its thread, the connection); every change is one dict operation (atomic under the
        # GIL), so a finalizer running in any thread, even in the middle of `put`, needs no lock
        self._open: dict[int, tuple[weakref.ref[threading.Thread], C]] = {}

    def get(self) -> C | None:
        """This thread's connection, or None."""
        held: tuple[int, C] | None = getattr(self._local, "held", None)
        return None if held is None else held[1]

    def put(self, conn: C) -> C:
        """Make `conn` this thread's connection (closing the one it replaces and those of ended threads)."""
        thread = threading.current_thread()
        key = next(self._keys)
        old: tuple[int, C] | None = getattr(self._local, "held", None)
        self._local.held = (key, conn)
        self._open[key] = (weakref.ref(thread), conn)
        if old is not None:
            self.discard(old[0])
        self._prune()
        if thread is not threading.main_thread():
            # only a weak reference to the registry: a finalizer must not keep a store alive
            weakref.finalize(thread, _thread_ended, weakref.ref(self), key).atexit = False
        return conn

    def close(self) -> None:
        """Close this thread's connection (the next `get` returns None)."""
        held: tuple[int, C] | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None:
            self.discard(held[0])

    def __len__(self) -> int:
        """How many connections are open."""
        return len(self._open)

    def discard(self, key: int) -> None:
        """Close and forget the connection of thread `key`, if it has one."""
        item = self._open.pop(key, None)
        if item is not None:
            with contextlib.suppress(Exception):  # already closed, or broken: it is gone either way
                self._close(item[1])

    def _prune(self) -> None:
        for key, (ref, _) in _items(self._open):
            thread = ref()
            if thread is None or not thread.is_alive():
                self.discard(key)


def _items(
    d: dict[int, tuple[weakref.ref[threading.Thread], C]],
) -> list[tuple[int, tuple[weakref.ref[threading.Thread], C]]]:
    # a finalizer may pop an entry while the list is built: take the copy again
    while True:
        try:
            return list(d.items())
        except RuntimeError:
            continue


def _thread_ended(registry: weakref.ref[ThreadConnections[C]], key: int) -> None:
    conns = registry()
    if conns is not None:
        conns.discard(key)

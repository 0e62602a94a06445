"""The writes a door makes beside the appends of the facade: a collection's change, and the listeners
told after each commit. The appends themselves are the facade's (service/ledger.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ledger.model.events import CollectionChanged
from ledger.storage.append import AppendResult
from ledger.storage.group_commit import GroupObserver
from ledger.storage.writers import WriteBy
from service.collections import Changed, CollectionData, Collections

Append = Callable[[Sequence[CollectionChanged], WriteBy | None], AppendResult]


class Intake:
    """The writes of one ledger that are not a plain append, and who hears of each commit."""

    def __init__(
        self,
        collections: Collections,
        append: Append,
        on_commit: Callable[[Callable[[], None]], None],
        on_group_commit: Callable[[GroupObserver], None],
    ) -> None:
        self._collections = collections
        self._append = append
        self._on_commit = on_commit
        self._on_group_commit = on_group_commit

    def change_collection(self, data: CollectionData, by: WriteBy | None = None) -> Changed:
        """Append one change of a collection, `by` (else the context's writer) recorded as its writer."""
        return self._collections.change(lambda events: self._append(events, by), data)

    def on_commit(self, listener: Callable[[], None]) -> None:
        """Call `listener()`, in the committing thread, after each append through this ledger commits."""
        self._on_commit(listener)

    def on_group_commit(self, observer: GroupObserver) -> None:
        """Call `observer(batches, seconds)` after each write transaction of this ledger commits: how many
        batches shared it (1 without group commit) and its time from BEGIN to COMMIT."""
        self._on_group_commit(observer)

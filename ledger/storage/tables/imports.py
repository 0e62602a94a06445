"""How far each file's import has committed, and the lookups that check a file before it is written."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.model.events import StoredEvent
from ledger.model.facts import (
    ImportProgress,
)
from ledger.storage.sql import (
    LOAD_PROGRESS,
)
from ledger.storage.tables.shared import (
    TableBase,
    citing_of,
    existing_events,
    steps_of,
)


class SqlImports(TableBase):
    """Import progress and the append's own lookups, outside a write transaction."""

    def import_progress(self, file_key: str) -> ImportProgress | None:
        """How far the import of the file `file_key` names has committed, if it has begun."""
        row = self._q(LOAD_PROGRESS, (file_key,)).fetchone()
        return None if row is None else ImportProgress(*row)

    def stored_events(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """The events stored under any of these ids (what an append would find)."""
        return existing_events(self.store, self.store.connection(), event_ids)

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> its citing paper, for those with a stored citation.observed (what an append
        would find)."""
        return citing_of(steps_of(self.store, self.store.connection(), observation_ids))

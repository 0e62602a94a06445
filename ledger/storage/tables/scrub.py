"""The record of each full walk; each backend adds the lock that keeps one walker per ledger."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ledger.model.facts import (
    ScrubPass,
)
from ledger.storage.sql import (
    PASS_COLUMNS,
)
from ledger.storage.tables.shared import (
    TableBase,
)


class SqlScrub(TableBase):
    """The scrub passes recorded."""

    def save_pass(self, p: ScrubPass) -> bool:
        """Record one full walk; False when the ledger cannot be written (a read-only file or role)."""
        try:
            self._q(
                f"INSERT INTO scrub_passes ({PASS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tuple(p)
            )
        except self.store.readonly_errors:
            return False
        return True

    def last_pass(self) -> ScrubPass | None:
        """The full walk that finished last, if any was recorded."""
        row = self._q(
            f"SELECT {PASS_COLUMNS} FROM scrub_passes ORDER BY finished_us DESC, id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, bad, reason = row
        return ScrubPass(
            kind, started_at, started_us, finished_at, finished_us, events, head_seq, bool(ok), bad, reason
        )

    def exclusive(self, role: str, create: bool) -> AbstractContextManager[bool]:
        """Try to become this ledger's one `role` process (each backend's own lock); yields whether it did."""
        raise NotImplementedError

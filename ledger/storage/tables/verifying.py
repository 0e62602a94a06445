"""What verify's walk reads beyond the chain: where it may resume, what it rechecks of each event."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ledger.model.facts import (
    VerifiedPoint,
)
from ledger.model.instants import format_recorded
from ledger.storage.derived.keys import (
    EVENT,
    LEVELS,
)
from ledger.storage.sql import (
    decode_peaks,
    encode_peaks,
)
from ledger.storage.tables.shared import (
    TableBase,
    each_level,
)


class SqlVerifying(TableBase):
    """Verify's resume point and its per-event rechecks, in one consistent read."""

    @property
    def list_part(self) -> int | None:
        """Ids or observations a resumed walk looks up in one statement (see Dialect.list_part)."""
        return self.store.dialect.list_part

    @contextmanager
    def consistent_read(self) -> Iterator[None]:
        """A read that sees one state throughout (verify's walk): the walk, the index and the nodes."""
        if self.store.in_transaction(self.store.connection()):
            yield
            return
        with self.store.reading():
            yield

    def verified_point(self) -> VerifiedPoint | None:
        """(seq, hash, peaks, verified_at) of the last full verify, if remembered."""
        row = self._q("SELECT seq, hash, peaks, verified_at FROM verified_point WHERE id = 1").fetchone()
        if row is None:
            return None
        return VerifiedPoint(row[0], row[1], decode_peaks(row[2]), row[3])

    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes], at_us: int) -> None:
        """Remember that seq 1..seq were verified at `at_us` (best effort: a read-only ledger is skipped)."""
        with contextlib.suppress(*self.store.readonly_errors):
            self._q(
                "INSERT INTO verified_point (id, seq, hash, peaks, verified_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
                "peaks = excluded.peaks, verified_at = excluded.verified_at",
                (seq, hash_, encode_peaks(peaks), format_recorded(at_us)),
            )

    def recorded_us_at(self, seq: int) -> int:
        """recorded_us of the event at seq (-1 if absent)."""
        row = self._q("SELECT recorded_us FROM events WHERE seq = ?", (seq,)).fetchone()
        return -1 if row is None else int(row[0])

    def stream_version_at(self, stream: str, seq: int) -> int:
        """The stream's version as of seq (0 if it had no event yet)."""
        row = self._q(
            "SELECT max(stream_version) FROM events WHERE stream = ? AND seq <= ?", (stream, seq)
        ).fetchone()
        return int(row[0] or 0)

    def repeated_event_id(self, event_ids: Sequence[str] | None = None) -> tuple[str, list[int]] | None:
        """An event id (of all, or of these) stored under more than one seq, with its seqs (the ledger
        holds none)."""
        d = self.store.dialect
        if event_ids is not None:
            if not event_ids:
                return None
            probes = each_level("event_keys", "key", d.any_of("key"))
            repeated = d.repeated_key("event_keys_all")
            part = self.list_part or len(event_ids)
            for i in range(0, len(event_ids), part):
                keys = d.bind_list([EVENT + e for e in event_ids[i : i + part]])
                if repeated is not None:
                    row = self._q(repeated, (keys,)).fetchone()
                else:
                    row = self._q(
                        f"SELECT key FROM ({probes}) AS k GROUP BY key HAVING count(*) > 1 LIMIT 1",
                        (keys,) * len(LEVELS),
                    ).fetchone()
                if row is not None:
                    return self._seqs_of(row[0])
            return None
        # each level in key order (no sort); a smaller level's keys probed in the levels above it
        ids = f"key >= '{EVENT}' AND key < '{EVENT[0]};'"
        row = self._q(
            f"SELECT key FROM event_keys WHERE {ids} GROUP BY key HAVING count(*) > 1 "
            f"UNION ALL SELECT key FROM event_keys_middle WHERE {ids} GROUP BY key HAVING count(*) > 1 "
            f"UNION ALL SELECT m.key FROM event_keys_middle AS m WHERE {ids} "
            "AND EXISTS (SELECT 1 FROM event_keys AS b WHERE b.key = m.key) "
            f"UNION ALL SELECT r.key FROM event_keys_recent AS r WHERE {ids} "
            "AND EXISTS (SELECT 1 FROM event_keys_all AS b WHERE b.key = r.key AND b.seq <> r.seq) LIMIT 1"
        ).fetchone()
        return None if row is None else self._seqs_of(row[0])

    def _seqs_of(self, key: str) -> tuple[str, list[int]]:
        seqs = self._q("SELECT seq FROM event_keys_all WHERE key = ? ORDER BY seq", (key,))
        return key.removeprefix(EVENT), [r[0] for r in seqs]

"""Recompute the whole chain from the stored rows and name the first seq that breaks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .append import check_rows
from .chain import GENESIS, body_bytes, link_hash
from .codec import decode_data
from .events import StandingChecked
from .facts import Head
from .instants import parse_ts
from .store import SQLiteStore


class VerifyReport(NamedTuple):
    """What verify checked and the first break, if any."""

    ok: bool
    events_checked: int
    head: Head
    first_bad_seq: int | None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API and `ledger verify --json`."""
        return {
            "ok": self.ok,
            "events_checked": self.events_checked,
            "head": {"seq": self.head.seq, "hash": self.head.hash},
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "note": TRUNCATION_NOTE,
        }


TRUNCATION_NOTE = (
    "A chain cut off at the end is still a valid shorter chain: compare the head with a "
    "checkpoint you hold to detect truncation."
)


def verify_store(store: SQLiteStore, progress: Callable[[int], None] | None = None) -> VerifyReport:
    """Walk every event in seq order: sequence, stream versions, derived columns and hashes."""
    prev, expected_seq, last_recorded = GENESIS, 1, -1
    versions: dict[str, int] = {}
    checked = 0
    bad: tuple[int, str] | None = None
    expected_checks: dict[int, list[tuple[Any, ...]]] = {}
    for row in store.iter_chain():
        seq, event_id, stream, version, type_, observed_at, recorded_at, data, prev_hash, h, o_us, r_us = row
        reason = None
        if seq != expected_seq:
            reason = f"seq {seq} follows {expected_seq - 1}: the sequence has a gap or is reordered"
        elif prev_hash != prev:
            reason = "prev_hash does not match the previous event's hash (reordered or removed events)"
        elif version != versions.get(stream, 0) + 1:
            reason = f"stream_version {version} of {stream} does not follow {versions.get(stream, 0)}"
        elif (
            link_hash(
                prev,
                body_bytes(
                    data=data.encode(),
                    event_id=event_id,
                    observed_at=observed_at,
                    recorded_at=recorded_at,
                    seq=seq,
                    stream=stream,
                    stream_version=version,
                    type=type_,
                ),
            )
            != h
        ):
            reason = "stored bytes do not match the stored hash (the event was altered)"
        elif r_us < last_recorded or parse_ts(recorded_at) != r_us:
            reason = "recorded_at goes backwards or does not match its index column"
        elif parse_ts(observed_at) != o_us:
            reason = "observed_us index column does not match observed_at"
        if reason is not None:
            bad = (seq, reason)
            break
        if type_ == "standing.checked":
            event = StandingChecked(observed_at=observed_at, data=decode_data(type_, data.encode()))
            expected_checks[seq] = sorted(
                (c.seq, c.work_id, c.source, c.observed_us, c.recorded_us, c.notices.decode())
                for c in check_rows(event, seq, o_us, r_us)
            )
        versions[stream] = version
        prev, expected_seq, last_recorded = h, seq + 1, r_us
        checked += 1
        if progress is not None and checked % 10000 == 0:
            progress(checked)
    index_bad = _check_index(store, expected_checks, below=None if bad is None else bad[0])
    if index_bad is not None:
        bad = index_bad
    head = store.head()
    if bad is not None:
        return VerifyReport(False, checked, head, bad[0], bad[1])
    return VerifyReport(True, checked, head, None, None)


def _check_index(
    store: SQLiteStore, expected: dict[int, list[tuple[Any, ...]]], below: int | None = None
) -> tuple[int, str] | None:
    """The check_works index must be exactly what the standing checks' data says (before `below`)."""
    found: dict[int, list[tuple[Any, ...]]] = {}
    for row in store.iter_check_works():
        found.setdefault(row[0], []).append(tuple(row))
    for seq in sorted(set(expected) | set(found)):
        if below is not None and seq >= below:
            break
        if sorted(found.get(seq, [])) != expected.get(seq, []):
            return seq, "the check_works index does not match the standing check's data"
    return None

"""Read models handed from a store to the projections: decoded facts, no SQL."""

from __future__ import annotations

from typing import Any, NamedTuple

from ledger.model.jsonvalue import JsonObject


class Fact(NamedTuple):
    """One stored event as the projections see it (data decoded to its Struct)."""

    seq: int
    type: str
    observed_at: str
    observed_us: int
    data: Any


class CheckRow(NamedTuple):
    """The latest check of one source covering one work (as of T, at or after `since_us`)."""

    work_id: str
    since_us: int
    source: str
    observed_at: str
    observed_us: int
    seq: int
    notices: list[Any]


class SourceHead(NamedTuple):
    """The latest standing check of one source."""

    source: str
    observed_at: str
    observed_us: int
    seq: int


class Head(NamedTuple):
    """The ledger head: last seq and its hash (0 and the genesis hash when empty)."""

    seq: int
    hash: str

    def header(self) -> str:
        """The `Ledger-Head` header value."""
        return f"{self.seq} {self.hash}"


class CheckWorkRow(NamedTuple):
    """One check_works row: a work's notices in one standing check."""

    work_id: str
    source: str
    observed_us: int
    seq: int
    recorded_us: int
    notices: bytes


class VerifiedPoint(NamedTuple):
    """Where a full verify last got to: seq, its chain hash, the tree's peaks there, and when."""

    seq: int
    hash: str
    peaks: list[bytes]
    verified_at: str


class ScrubPass(NamedTuple):
    """One full walk of the chain from seq 1 (by a scrub, `ledger verify` or an integrity report)."""

    kind: str  # "scrub", "verify" or "integrity": who walked
    started_at: str
    started_us: int
    finished_at: str
    finished_us: int
    events: int  # events walked and found good: seqs 1..events
    head_seq: int  # the head when the walk ended
    ok: bool
    first_bad_seq: int | None
    reason: str | None

    def to_dict(self) -> JsonObject:
        """JSON shape for /healthz, the integrity report and `ledger scrub --json`."""
        return {
            "by": self.kind,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "walked": {"from": 1, "to": self.events} if self.events else None,
            "events": self.events,
            "head_seq": self.head_seq,
            "ok": self.ok,
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
        }


class IngestReceipt(NamedTuple):
    """One acknowledged ingest of a source file: what the file was and what its batch wrote."""

    source: str  # as `ledger ingest` names it, e.g. "retraction-watch"
    observed_at: str
    observed_us: int
    accepted_at: str
    accepted_us: int
    sha256: str  # of the file's bytes as given (compressed, for a .gz)
    bytes: int
    rows_read: int
    rows_matched: int
    appended: int  # events new to the ledger (0: the same file ingested again)
    seq: int | None  # the batch's last event (a standing source's check); None when it had none


class ImportProgress(NamedTuple):
    """How far `ledger import` has committed a file: written in each batch's transaction, so a run
    stopped at any point is resumed after its last committed batch."""

    file_key: str  # the file's identity: its size and the sha256 of its first MiB, as stored
    name: str  # the path as given, for people
    bytes_done: int  # of the file's bytes (decompressed): the offset after the last committed line
    lines_done: int
    prefix_sha256: str  # of those bytes, to check a resumed file still begins with them
    appended: int  # events new to the ledger, over every run of this file
    duplicates: int
    head_seq: int  # the ledger's head after the last committed batch
    updated_at: str
    updated_us: int


class Checked(NamedTuple):
    """One standing check, as a timeline lists it: its source, instant and seq."""

    source: str
    observed_at: str
    observed_us: int
    seq: int


class InboundDay(NamedTuple):
    """The inbound spans of one cited paper that start or end in one day of observed time (known now):
    the first and last of those instants, how many distinct instants, and how many start and end."""

    bucket: int  # the day: observed_us // spans.BUCKET_US
    first_us: int
    last_us: int
    instants: int
    starts: int
    ends: int

"""What a ledger is doing, read from its database alone: the head, its size on disk, the last full walk
of the chain, the last signed checkpoint and the webhook outbox (`ledger status`, and the gauges GET
/metrics reads when it is scraped)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.model.facts import Head, ScrubPass
from ledger.model.instants import Clock, format_recorded
from ledger.model.jsonvalue import JsonObject
from ledger.tlog.checkpoint_notes import Checkpoint, NoteError, unsigned_checkpoint

if TYPE_CHECKING:
    from ledger.storage.interface import Store
    from service.ops.scrub import PassLog


@dataclass(frozen=True)
class Status:
    """One reading of a ledger's state (instants in microseconds since the epoch)."""

    db: str
    kind: str
    read_us: int
    head: Head
    head_recorded_us: int | None  # None: an empty ledger
    disk_bytes: int
    last_pass: ScrubPass | None
    checkpoint: Checkpoint | None  # the last signed one's body (signatures not checked here)
    checkpoint_problem: str | None  # why the kept note could not be read
    checkpoint_recorded_us: int | None  # when the newest event it covers was recorded
    unsigned_since_us: int | None  # when the oldest event it does not cover was recorded (None: none)
    outbox_depth: int  # webhook deliveries pending

    @property
    def checkpoint_behind(self) -> int:
        """Events after the last signed checkpoint (all of them when none is signed)."""
        size = self.checkpoint.size if self.checkpoint is not None else 0
        return max(0, self.head.seq - size)

    def seconds_since(self, us: int | None) -> float | None:
        """Seconds from `us` to this reading (None stays None)."""
        return None if us is None else max(0.0, (self.read_us - us) / 1e6)

    def to_dict(self) -> JsonObject:
        """The JSON shape of `ledger status --json`."""
        cp = self.checkpoint
        return {
            "db": self.db,
            "backend": self.kind,
            "read_at": format_recorded(self.read_us),
            "head": {"seq": self.head.seq, "hash": self.head.hash, "recorded_at": _at(self.head_recorded_us)},
            "disk_bytes": self.disk_bytes,
            "last_full_walk": None if self.last_pass is None else self.last_pass.to_dict(),
            "checkpoint": {
                "size": None if cp is None else cp.size,
                "problem": self.checkpoint_problem,
                "newest_event_recorded_at": _at(self.checkpoint_recorded_us),
                "behind": self.checkpoint_behind,
                "oldest_unsigned_recorded_at": _at(self.unsigned_since_us),
            },
            "outbox_depth": self.outbox_depth,
        }

    def lines(self) -> list[str]:
        """One screen of it, for an operator without Prometheus."""
        head = self.head
        shown = f"seq {head.seq}, hash {head.hash}" if head.seq else "seq 0: no event yet"
        return [
            f"ledger      {self.db} ({self.kind}), read at {format_recorded(self.read_us)}",
            f"head        {shown}",
            f"last append {_ago(self, self.head_recorded_us) if head.seq else 'none'}",
            f"size        {_size(self.disk_bytes)} on disk",
            f"last walk   {self._walk_line()}",
            f"checkpoint  {self._checkpoint_line()}",
            f"outbox      {self._outbox_line()}",
        ]

    def _walk_line(self) -> str:
        p = self.last_pass
        if p is None:
            return "none recorded: the chain has not been walked in full yet"
        took = (p.finished_us - p.started_us) / 1e6
        walked = f"{p.events} events walked (seqs 1..{p.events})" if p.events else "no event walked"
        result = "ok" if p.ok else f"BROKEN at seq {p.first_bad_seq}: {p.reason}"
        return f"{p.kind} finished {_ago(self, p.finished_us)}: {result}; {walked} in {took:.2f} s"

    def _checkpoint_line(self) -> str:
        if self.checkpoint_problem is not None:
            return f"unreadable: {self.checkpoint_problem}"
        cp = self.checkpoint
        if cp is None:
            behind = f"; {self.checkpoint_behind} events unsigned" if self.checkpoint_behind else ""
            return f"none signed yet{behind}"
        if cp.size > self.head.seq:
            return f"size {cp.size}, MORE than the head's {self.head.seq}: the database lost events it signed"
        newest = f"its newest event recorded {_ago(self, self.checkpoint_recorded_us)}"
        if not self.checkpoint_behind:
            return f"size {cp.size}, covers the head; {newest}"
        return (
            f"size {cp.size}, {self.checkpoint_behind} events behind the head (the oldest of them recorded "
            f"{_ago(self, self.unsigned_since_us)}); {newest}"
        )

    def _outbox_line(self) -> str:
        return f"{self.outbox_depth} deliveries pending"


def read_status(store: Store, clock: Clock, passes: PassLog | None = None) -> Status:
    """Read a ledger's status at `clock`'s now; `passes` adds a server's in-memory walks."""
    with store.verifying.consistent_read():  # the numbers of one state of the database
        return _read(store, clock, passes)


def _read(store: Store, clock: Clock, passes: PassLog | None) -> Status:
    head = store.head()
    checkpoint, problem = _checkpoint(store.tree.last_checkpoint())
    size = checkpoint.size if checkpoint is not None else 0
    unsigned = _recorded(store, size + 1) if size < head.seq else None
    return Status(
        db=store.db,
        kind=store.kind,
        read_us=clock.now_us(),
        head=head,
        head_recorded_us=_recorded(store, head.seq),
        disk_bytes=store.disk_bytes(),
        last_pass=passes.last() if passes is not None else store.scrub.last_pass(),
        checkpoint=checkpoint,
        checkpoint_problem=problem,
        checkpoint_recorded_us=_recorded(store, size) if checkpoint is not None else None,
        unsigned_since_us=unsigned,
        outbox_depth=store.alerts.outbox_depth(),
    )


def _checkpoint(note: str | None) -> tuple[Checkpoint | None, str | None]:
    if note is None:
        return None, None
    try:
        return unsigned_checkpoint(note), None
    except NoteError as e:
        return None, e.message


def _recorded(store: Store, seq: int) -> int | None:
    if seq < 1:
        return None
    us = store.verifying.recorded_us_at(seq)
    return None if us < 0 else us


def _at(us: int | None) -> str | None:
    return None if us is None else format_recorded(us)


def _ago(status: Status, us: int | None) -> str:
    seconds = status.seconds_since(us)
    if seconds is None or us is None:
        return "at an unknown time"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{format_recorded(us)} ({seconds / size:.1f} {unit} ago)"
    return f"{format_recorded(us)} ({seconds:.1f} s ago)"


def _size(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"

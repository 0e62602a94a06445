"""Resolving in the background: a whole-ledger run as a job to poll (`POST /resolve {"all": true}`),
and the watch that re-resolves after each catalogue ingest (`ledger resolve --all --watch`)."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.model.errors import LedgerError
from ledger.model.instants import format_recorded, now_us
from service.ledger import Ledger
from service.resolver.run import Summary

KEEP = 16  # finished jobs kept to poll; the oldest goes first
CATALOGUE_TYPES = ("work.observed", "paper.observed")  # what the catalogue is made of (resolver-v1.md)


def _started() -> str:
    return format_recorded(now_us())


@dataclass
class Job:
    """One whole-ledger run: running, done (with its summary) or failed (with its error)."""

    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    state: str = "running"
    started_at: str = field(default_factory=_started)
    finished_at: str | None = None
    summary: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The job as `GET /resolve/jobs/{id}` answers it."""
        return {**asdict(self), "links": {"self": f"/resolve/jobs/{self.id}"}}


class Jobs:
    """The jobs of one process: one running at a time, the last `keep` kept."""

    def __init__(self, keep: int = KEEP, spawn: Callable[[Callable[[], None]], None] | None = None) -> None:
        self._keep = keep
        # how a job's work is started: a thread of its own (tests pass one that runs it when they say)
        self._spawn = spawn or _thread
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._running: Job | None = None

    def start(self, run: Callable[[], Summary]) -> tuple[Job, bool]:
        """Start `run` in a thread as a new job, or give the one running; and whether it is new."""
        with self._lock:
            if self._running is not None:
                return self._running, False
            job = Job()
            self._running = job
            self._jobs[job.id] = job
            while len(self._jobs) > self._keep:
                self._jobs.popitem(last=False)
        self._spawn(lambda: self._run(job, run))
        return job, True

    def _run(self, job: Job, run: Callable[[], Summary]) -> None:
        try:
            job.summary = run().to_dict()
            job.state = "done"
        except LedgerError as e:
            job.error, job.state = {"code": e.code, "message": str(e)}, "failed"
        except Exception as e:  # a job's failure is its answer; the server goes on
            job.error, job.state = {"code": "internal", "message": type(e).__name__}, "failed"
        finally:
            job.finished_at = format_recorded(now_us())
            with self._lock:
                self._running = None

    def get(self, job_id: str) -> Job | None:
        """The job of this id, if it is still kept."""
        with self._lock:
            return self._jobs.get(job_id)

    def running(self) -> Job | None:
        """The job running now, if any."""
        with self._lock:
            return self._running


def _thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="resolve-job", daemon=True).start()


def catalogue_grew(ledger: Ledger, after: int) -> bool:
    """Whether a catalogue event (a work or a paper observed) was appended after seq `after`."""
    return any(ledger.store.read_log(after=after, limit=1, type=t) for t in CATALOGUE_TYPES)


def watch(
    ledger: Ledger,
    resolve_all: Callable[[], Summary],
    report: Callable[[Summary], None],
    wait: Callable[[], bool],
) -> int:
    """Resolve now, then each time `wait()` returns False (it waits the poll interval; True: stop),
    resolve again if the catalogue grew since the last run; returns how many runs there were."""
    runs = 0
    last = -1
    while True:
        if last < 0 or catalogue_grew(ledger, last):
            last = ledger.head().seq  # what this run sees; an ingest during it is picked up next time
            report(resolve_all())
            runs += 1
        if wait():
            return runs

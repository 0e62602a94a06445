"""Resolving in the background: a whole-ledger run as a job to poll (`POST /resolve {"all": true}`),
and the watch that re-resolves after each catalogue ingest (`ledger resolve --all --watch`).

A job is its token's (its sha256, as a watch's owner is) and is keyed by what it does: a token asking
for a run another of its own already does gets that one; a run that appends runs one at a time across
every token, since two would append the same changes twice."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ledger.model.codec import canonical
from ledger.model.errors import LedgerError
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import JsonInObject, JsonObject
from ledger.storage.state.jobs import DONE, FAILED, RUNNING
from ledger.storage.state.jobs import Job as StoredJob
from service.ledger import Ledger
from service.resolver.bounds import Lease
from service.resolver.run import Summary

KEEP = 16  # jobs of each token kept to poll; the oldest goes first
CATALOGUE_TYPES = ("work.observed", "paper.observed")  # what the catalogue is made of (resolver-v1.md)
BEAT_S = 5.0  # how often the process running a job says it is alive
STALE_S = 60.0  # a running job not heard of for this long stopped with its process


@dataclass
class Job:
    """One whole-ledger run: running, done (with its summary) or failed (with its error)."""

    id: str
    state: str
    started_at: str
    finished_at: str | None = None
    summary: JsonObject | None = None
    error: JsonObject | None = None
    dry_run: bool = False

    @classmethod
    def of(cls, row: StoredJob) -> Job:
        """The job a stored row holds."""
        summary = None if row.summary is None else json.loads(row.summary)
        error = None if row.error is None else json.loads(row.error)
        dry_run = bool(json.loads(row.kind or "{}").get("dry_run", False))
        return cls(row.id, row.state, row.started_at, row.finished_at, summary, error, dry_run)

    def to_dict(self) -> JsonObject:
        """The job as `GET /resolve/jobs/{id}` answers it."""
        return {**asdict(self), "links": {"self": f"/resolve/jobs/{self.id}"}}


def kind_of(params: JsonInObject) -> str:
    """What a job does, as it is keyed: the canonical JSON of its parameters."""
    return canonical(params).decode()


class Jobs:
    """The jobs of one ledger, kept in its database: any server process over it answers for any job,
    one of each token and kind runs at a time across all of them (one that appends, one of any token),
    and the last `keep` of each token are kept."""

    def __init__(
        self,
        ledger: Ledger,
        keep: int = KEEP,
        spawn: Callable[[Callable[[], None]], None] | None = None,
        beat_s: float = BEAT_S,
    ) -> None:
        self._ledger = ledger
        self._keep = keep
        # how a job's work is started: a thread of its own (tests pass one that runs it when they say)
        self._spawn = spawn or _thread
        self._beat_s = beat_s

    def start(
        self,
        run: Callable[[], Summary],
        owner: str,
        params: JsonInObject,
        *,
        appends: bool = True,
        lease: Callable[[], Lease] | None = None,
    ) -> tuple[Job, str]:
        """Start `run` in a thread as `owner`'s new job doing `params`, holding the slot `lease` takes
        while it runs (it raises Busy when none is free); or give `owner`'s job doing the same that
        runs already. The outcome says which: new, running, or busy (a run that `appends` of another
        token runs: the job given is that one, not to be shown)."""
        kind = kind_of(params)
        store = self._ledger.store
        same = store.jobs.running(owner, kind)
        if same is not None and same.beat_us >= self._ledger.clock.now_us() - round(STALE_S * 1e6):
            return Job.of(same), "running"
        held = None if lease is None else lease()
        now = self._ledger.clock.now_us()
        row = StoredJob(str(uuid.uuid4()), RUNNING, format_recorded(now), now, None, now, None, None,
                        owner, kind)  # fmt: skip
        try:
            got = store.jobs.start_job(row, now - round(STALE_S * 1e6), self._keep, exclusive=appends)
        except BaseException:
            if held is not None:
                held.free()
            raise
        if got.outcome != "new":
            if held is not None:
                held.free()
            return Job.of(got.job), got.outcome
        self._spawn(lambda: self._run(row.id, run, held))
        return Job.of(row), "new"

    def _run(self, job_id: str, run: Callable[[], Summary], lease: Lease | None = None) -> None:
        store, stop = self._ledger.store, threading.Event()
        beating = threading.Thread(
            target=self._beat, args=(job_id, stop), name="resolve-job-beat", daemon=True
        )
        beating.start()
        if lease is not None:
            lease.beat_in_background()
        state, summary, error = FAILED, None, None
        try:
            summary, state = canonical(run().to_dict()).decode(), DONE
        except LedgerError as e:
            error = canonical({"code": e.code, "message": str(e)}).decode()
        except Exception as e:  # a job's failure is its answer; the server goes on
            error = canonical({"code": "internal", "message": type(e).__name__}).decode()
        finally:
            stop.set()
            beating.join()
            if lease is not None:
                lease.free()
            store.jobs.finish_job(job_id, state, format_recorded(self._ledger.clock.now_us()), summary, error)

    def _beat(self, job_id: str, stop: threading.Event) -> None:
        while not stop.wait(self._beat_s):
            self._ledger.store.jobs.beat_job(job_id, self._ledger.clock.now_us())

    def get(self, job_id: str, owner: str) -> Job | None:
        """The job of this id, if it is still kept and `owner`'s (another's is as if there were none)."""
        row = self._ledger.store.jobs.job(job_id, owner)
        return None if row is None else Job.of(row)


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

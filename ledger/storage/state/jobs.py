"""The resolver's state shared by every server process, kept in the ledger's database: background
resolve jobs (`POST /resolve {"all": true}`), the slots of the resolves running now, and each token's
budget of references examined.

A job belongs to a token and does one kind of run; a token sees only its own jobs, one job of a token
and kind runs at a time, and one job that appends runs at a time across all tokens. A process running a
job or holding a slot beats its row every few seconds; a row whose beat is older than the caller's limit
is taken as stopped with its process (killed, or its machine gone): a job is marked failed and a slot
freed, so neither holds the next run back for ever.
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.storage.sql import Cursor, DialectStore, SqlParams, integer

JOB_COLUMNS = "id, state, started_at, started_us, finished_at, beat_us, summary, error, owner, kind"
RUNNING, DONE, FAILED = "running", "done", "failed"
# what a stopped job's error says (its process ended without saying how the run went)
STOPPED = '{"code":"stopped","message":"the server process running this job stopped before it ended"}'


class Job(NamedTuple):
    """One whole-ledger run as stored: its summary and error are JSON texts."""

    id: str
    state: str  # running, done or failed
    started_at: str
    started_us: int
    finished_at: str | None
    beat_us: int  # the last time the process running it said it was alive
    summary: str | None
    error: str | None
    owner: str | None = None  # the token's sha256 that started it
    kind: str | None = None  # what it does: the canonical JSON of its parameters


class Started(NamedTuple):
    """What starting a job gave: the job, and whether it is new, the caller's own one running, or
    another token's run that appends (`busy`: the caller's job was not started)."""

    job: Job
    outcome: str  # new, running or busy


_FAIL_STALE = (
    "UPDATE resolve_jobs SET state = ?, finished_at = started_at, error = ? WHERE state = ? AND beat_us < ?"
)
_SAME = f"SELECT {JOB_COLUMNS} FROM resolve_jobs WHERE state = ? AND owner = ? AND kind = ? LIMIT 1"
_OF_KIND = f"SELECT {JOB_COLUMNS} FROM resolve_jobs WHERE state = ? AND kind = ? LIMIT 1"
_INSERT = f"INSERT INTO resolve_jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# the latest `keep` jobs of each token are kept, so one token's jobs never push out another's
_KEEP = (
    "DELETE FROM resolve_jobs WHERE owner = ? AND id NOT IN "
    "(SELECT id FROM resolve_jobs WHERE owner = ? ORDER BY started_us DESC, id DESC LIMIT ?)"
)
# a job of an older layout has no owner: it is nobody's to see, and goes once it ends
_OWNERLESS = "DELETE FROM resolve_jobs WHERE owner IS NULL AND state <> ?"
_BEAT = "UPDATE resolve_jobs SET beat_us = ? WHERE id = ? AND state = ?"
_FINISH = (
    "UPDATE resolve_jobs SET state = ?, finished_at = ?, summary = ?, error = ? WHERE id = ? AND state = ?"
)


class Slot(NamedTuple):
    """A lease held now, as resolve_slots keeps it."""

    slot: int
    holder: str
    owner: str
    beat_us: int
    examined: int


class JobTables:
    """The resolve jobs of one store, over its per-thread connection."""

    def __init__(self, store: DialectStore) -> None:
        self.store = store

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.store.connection(), sql, params)

    def start_job(self, job: Job, stale_us: int, keep: int, exclusive: bool = False) -> Started:
        """Store `job` as running, unless a job of its owner and kind runs (beaten at or after
        `stale_us`): then that one; or, when its kind is `exclusive` (one at a time whoever's: a run
        that appends), a job of its kind runs: then that one, `busy`. Older running jobs are failed
        first, and only the latest `keep` jobs of the owner are kept."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_FAIL_STALE, (FAILED, STOPPED, RUNNING, stale_us))
            row = self._q(_SAME, (RUNNING, job.owner, job.kind)).fetchone()
            if row is not None:
                return Started(Job._make(row), "running")
            if exclusive:
                row = self._q(_OF_KIND, (RUNNING, job.kind)).fetchone()
                if row is not None:
                    return Started(Job._make(row), "busy")
            self._q(_INSERT, tuple(job))
            self._q(_KEEP, (job.owner, job.owner, keep))
            self._q(_OWNERLESS, (RUNNING,))
        return Started(job, "new")

    def running(self, owner: str, kind: str) -> Job | None:
        """The job of this owner and kind running now, if any (it may have stopped unseen)."""
        row = self._q(_SAME, (RUNNING, owner, kind)).fetchone()
        return None if row is None else Job._make(row)

    def job(self, job_id: str, owner: str) -> Job | None:
        """The job of this id if it is still kept and `owner`'s."""
        sql = f"SELECT {JOB_COLUMNS} FROM resolve_jobs WHERE id = ? AND owner = ?"
        row = self._q(sql, (job_id, owner)).fetchone()
        return None if row is None else Job._make(row)

    def beat_job(self, job_id: str, beat_us: int) -> None:
        """Say the process running this job is alive."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_BEAT, (beat_us, job_id, RUNNING))

    def finish_job(self, job_id: str, state: str, at: str, summary: str | None, error: str | None) -> None:
        """End a running job: done with its summary, or failed with its error (JSON texts)."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_FINISH, (state, at, summary, error, job_id, RUNNING))

    # -- the slots of the resolves running now -------------------------------------------

    def take_slot(self, most: int, holder: str, owner: str, now_us: int, stale_us: int) -> int | None:
        """Lease the lowest free of `most` slots to `holder` (a run of `owner`), freeing first the
        leases not beaten since `stale_us`; None when every slot is held."""
        with self.store.transaction(self.store.write_begin()):
            self._q("DELETE FROM resolve_slots WHERE beat_us < ?", (stale_us,))
            held = {r[0] for r in self._q("SELECT slot FROM resolve_slots").fetchall()}
            free = next((n for n in range(most) if n not in held), None)
            if free is None or len(held) >= most:
                return None
            self._q(
                "INSERT INTO resolve_slots (slot, holder, owner, beat_us, examined) VALUES (?, ?, ?, ?, 0)",
                (free, holder, owner, now_us),
            )
        return free

    def beat_slot(self, holder: str, now_us: int, examined: int) -> None:
        """Say the run holding this lease is alive, and how many references it has examined."""
        with self.store.transaction(self.store.write_begin()):
            self._q(
                "UPDATE resolve_slots SET beat_us = ?, examined = ? WHERE holder = ?",
                (now_us, examined, holder),
            )

    def free_slot(self, holder: str) -> None:
        """End a lease (its run is over)."""
        with self.store.transaction(self.store.write_begin()):
            self._q("DELETE FROM resolve_slots WHERE holder = ?", (holder,))

    def slots(self) -> list[tuple[int, str, str, int, int]]:
        """The leases held now: (slot, holder, owner, beat_us, examined)."""
        sql = f"SELECT {', '.join(Slot._fields)} FROM resolve_slots ORDER BY slot"
        return [Slot._make(r) for r in self._q(sql).fetchall()]

    # -- each token's budget of references examined ----------------------------------------

    def paid_by(self, owner: str) -> int | None:
        """The instant (µs) by which `owner`'s spending so far is paid off, if it ever spent."""
        row = self._q("SELECT paid_us FROM resolve_budget WHERE owner = ?", (owner,)).fetchone()
        return None if row is None else integer(row[0])

    def spend(self, owner: str, cost_us: int, now_us: int) -> int:
        """Add `cost_us` of spending to `owner`'s (paying off from now if it was paid off before);
        the new instant it is paid off by."""
        with self.store.transaction(self.store.write_begin()):
            row = self._q("SELECT paid_us FROM resolve_budget WHERE owner = ?", (owner,)).fetchone()
            paid = max(now_us, now_us if row is None else integer(row[0])) + cost_us
            self._q(
                "INSERT INTO resolve_budget (owner, paid_us) VALUES (?, ?) "
                "ON CONFLICT (owner) DO UPDATE SET paid_us = excluded.paid_us",
                (owner, paid),
            )
        return paid

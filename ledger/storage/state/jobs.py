"""Background resolve jobs (`POST /resolve {"all": true}`), kept in the ledger's database so that every
server process answers for every job, and one job runs at a time across all of them.

A process running a job beats its row every few seconds; a job whose beat is older than the caller's
limit is taken as stopped with its process (killed, or its machine gone) and marked failed, so it never
holds the next run back for ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ledger.storage.sql import DialectStore

JOB_COLUMNS = "id, state, started_at, started_us, finished_at, beat_us, summary, error"
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


_FAIL_STALE = (
    "UPDATE resolve_jobs SET state = ?, finished_at = started_at, error = ? WHERE state = ? AND beat_us < ?"
)
_RUNNING = f"SELECT {JOB_COLUMNS} FROM resolve_jobs WHERE state = ? LIMIT 1"
_INSERT = f"INSERT INTO resolve_jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_KEEP = (
    "DELETE FROM resolve_jobs WHERE id NOT IN "
    "(SELECT id FROM resolve_jobs ORDER BY started_us DESC, id DESC LIMIT ?)"
)
_BEAT = "UPDATE resolve_jobs SET beat_us = ? WHERE id = ? AND state = ?"
_FINISH = (
    "UPDATE resolve_jobs SET state = ?, finished_at = ?, summary = ?, error = ? WHERE id = ? AND state = ?"
)


class JobTables:
    """The resolve jobs of one store, over its per-thread connection."""

    def __init__(self, store: DialectStore) -> None:
        self.store = store

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.store.query(self.store.connection(), sql, params)

    def start_job(self, job: Job, stale_us: int, keep: int) -> Job:
        """Store `job` as running unless another job runs (beaten at or after `stale_us`): then that
        one; older running ones are failed first, and only the latest `keep` jobs are kept."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_FAIL_STALE, (FAILED, STOPPED, RUNNING, stale_us))
            row = self._q(_RUNNING, (RUNNING,)).fetchone()
            if row is not None:
                return Job(*row)
            self._q(_INSERT, tuple(job))
            self._q(_KEEP, (keep,))
        return job

    def job(self, job_id: str) -> Job | None:
        """The job of this id, if it is still kept."""
        row = self._q(f"SELECT {JOB_COLUMNS} FROM resolve_jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else Job(*row)

    def beat_job(self, job_id: str, beat_us: int) -> None:
        """Say the process running this job is alive."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_BEAT, (beat_us, job_id, RUNNING))

    def finish_job(self, job_id: str, state: str, at: str, summary: str | None, error: str | None) -> None:
        """End a running job: done with its summary, or failed with its error (JSON texts)."""
        with self.store.transaction(self.store.write_begin()):
            self._q(_FINISH, (state, at, summary, error, job_id, RUNNING))

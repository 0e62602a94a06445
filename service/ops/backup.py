"""Online backup: a consistent copy of a live ledger through SQLite's backup API, then verified.

A PostgreSQL ledger is backed up into a new SQLite file, event for event (backend.copy_ledger):
a portable, verified copy that `ledger migrate` can move back (pg_dump remains the DBA's tool).

The copy is taken from one read snapshot held across all page steps. In WAL mode a reader never
blocks writers, so appends go on during the backup; and because the snapshot does not move, the
backup is never restarted by their commits (a step-wise backup without one restarts after each).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ledger.model.facts import Head
from ledger.storage.backend import copy_ledger, is_pg_url, open_store
from ledger.storage.sqlite.store import SQLiteStore
from ledger.storage.verify import VerifyReport, verify_store
from ledger.tlog.checkpoint import ENV_KEY_FILE

# Files next to the database that belong to it: the signing key (secret, mode 600), the last signed
# checkpoint (the restored ledger must stay consistent with it) and the hashed write tokens.
SIDE_FILES = (".key", ".checkpoint", ".tokens")
STEP_PAGES = 1024


class BackupReport(NamedTuple):
    """What was copied, how long it took, and the copy's own verification."""

    dest: Path
    head: Head
    pages: int
    seconds: float
    side_files: list[str]
    verify: VerifyReport | None
    steps: int = 0
    restarts: int = 0  # times SQLite started the copy over (0: the snapshot held)


class BackupError(Exception):
    """The backup could not be made (the destination exists, the source is missing)."""


def backup(
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    step_pages: int = STEP_PAGES,
    pause: float = 0.0,
    verify: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> BackupReport:
    """Copy the ledger at `src` to `dest` (which must not exist), with its side files; verify the copy."""
    if is_pg_url(src):
        return _backup_postgresql(str(src), Path(dest), verify)
    src_path, dest_path = Path(src), Path(dest)
    if not src_path.exists():
        raise BackupError(f"no ledger at {src_path}")
    if dest_path.exists() or any(_side(dest_path, s).exists() for s in ("-wal", "-shm", *SIDE_FILES)):
        raise BackupError(f"{dest_path} (or a file next to it) already exists; choose a new name")
    started = time.monotonic()
    # Side files first: a checkpoint signed later than the snapshot below could name more events
    # than the copy holds, and the restored ledger would then rightly refuse to sign.
    copied = [s for s in SIDE_FILES if copy_private(_side(src_path, s), _side(dest_path, s))]
    _create_private(dest_path)
    source = sqlite3.connect(src_path, isolation_level=None, timeout=60)
    target = sqlite3.connect(dest_path, isolation_level=None)
    try:
        source.execute("BEGIN")
        source.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
        row = source.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        head = Head(row[0], row[1]) if row else Head(0, "0" * 64)

        done = [0, 0, 0]  # pages copied so far, steps, restarts

        def step(_status: int, remaining: int, total: int) -> None:
            copied = total - remaining
            done[1] += 1
            done[2] += copied < done[0]  # fewer pages copied than before: SQLite started over
            done[0] = copied
            if progress is not None:
                progress(copied, total)
            if pause:
                time.sleep(pause)

        source.backup(target, pages=step_pages, progress=step)
        pages = target.execute("PRAGMA page_count").fetchone()[0]
        source.execute("COMMIT")
    finally:
        source.close()
        target.close()
    for suffix in ("-wal", "-shm"):  # the copy is complete in its main file; SQLite may leave these
        _tighten(_side(dest_path, suffix))
    seconds = time.monotonic() - started
    report = None
    if verify:
        store = SQLiteStore(dest_path)
        try:
            report = verify_store(store)
        finally:
            store.close()
        for suffix in ("-wal", "-shm"):
            _tighten(_side(dest_path, suffix))
    return BackupReport(dest_path, head, pages, seconds, copied, report, done[1], done[2])


def _backup_postgresql(url: str, dest_path: Path, verify: bool) -> BackupReport:
    """Copy a PostgreSQL ledger into a new SQLite file with its key, token file and last checkpoint."""
    if dest_path.exists() or any(_side(dest_path, s).exists() for s in ("-wal", "-shm", *SIDE_FILES)):
        raise BackupError(f"{dest_path} (or a file next to it) already exists; choose a new name")
    started = time.monotonic()
    source = open_store(url)
    key = os.environ.get(ENV_KEY_FILE)
    copied = [
        s
        for s, origin in ((".key", Path(key) if key else None), (".tokens", None))
        if copy_private(origin or source.tree.side_file(s), _side(dest_path, s))
    ]
    # the checkpoint before the events, as above: it never names more events than the copy holds
    note = source.tree.last_checkpoint()
    if note is not None:
        _create_private(_side(dest_path, ".checkpoint"))
        _side(dest_path, ".checkpoint").write_text(note)
        copied.append(".checkpoint")
    target = SQLiteStore(dest_path)
    try:
        head = copy_ledger(source, target)
        report = verify_store(target) if verify else None
        pages = target.connection().execute("PRAGMA page_count").fetchone()[0]
    finally:
        target.close()
        source.close()
    return BackupReport(dest_path, head, pages, time.monotonic() - started, sorted(copied), report)


def _side(db: Path, suffix: str) -> Path:
    return db.with_name(db.name + suffix)


def _create_private(path: Path) -> None:
    """Create an empty file readable by its owner only, before SQLite writes anything into it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)


def copy_private(src: Path, dest: Path) -> bool:
    """Copy `src` to the new file `dest`, mode 600 from its creation and fsynced; False if no `src`."""
    if not src.exists():
        return False
    _create_private(dest)
    with src.open("rb") as fin, dest.open("r+b") as fout:
        shutil.copyfileobj(fin, fout)
        fout.flush()
        os.fsync(fout.fileno())
    return True


def _tighten(path: Path) -> None:
    if path.exists():
        os.chmod(path, 0o600)

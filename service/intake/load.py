"""`ledger import` of one file (ledger-v1.md "Importing a record"): read as a stream, checked whole,
then appended in batches, each its own transaction, that the same command resumes after.

A record file (one JSON object; any file whose first line is not a JSON value of its own) is one unit:
read whole, one batch, as before. Any other file is NDJSON envelopes, read once as a stream and decoded
once: the first pass checks every line (service/intake/check.py), spills each checked event to a
temporary file (service/intake/spill.py) and notes the file's offset, line and running sha256 at each
batch's end; the second appends the spilled events a batch of `batch_size` at a time through the Ledger
facade, the same append path single events take, without reading the file again: what the check proved
is what is appended, even if the file changes meanwhile. The rules the first pass checked are not
checked again unless the ledger's clock went back since. Each batch's transaction also records how far
the file is committed (its identity, the byte offset and line after the batch, the sha256 of those
bytes), so a run stopped anywhere (kill -9, a full disk) is resumed by the same command: it checks that
the file still begins with the committed bytes (their hash, not their lines) and checks and appends the
rest; a file of the same identity that does not is refused, both hashes named, unless told to restart. A
stream that cannot be read twice (a pipe, a FIFO) is first copied to a scratch file.

After every `WALK_EVERY` events committed, and after the last commit, the chain is walked from the
last verified point over what was stored since, read back from the database (ledger/storage/verify.py),
and the verified point moved to the head, so the first integrity report after an import walks nothing:
no anonymous request pays for a bulk load. The walks due while batches remain run in a second process,
alongside the appends (service/intake/beside.py), on another core. One walk runs at a time: a walk due
while one runs is folded into the next, which covers more. After the last commit the import waits for
the walk in flight, then walks the rest itself; that walk's report is the import's. A walker process
that dies or fails loses nothing: the import says so once and walks in its own process from then on.
On one core every walk runs in the importing process. A run killed between two walks leaves what it
committed since the last one to the walk of the run that resumes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, NamedTuple, Protocol

from ledger.model.codec import decode_json
from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.events import Event
from ledger.model.facts import Head, ImportProgress
from ledger.model.importer import parse_input
from ledger.model.instants import format_recorded
from ledger.storage.interface import WriteTx
from service.intake.beside import WalkerGone, WalkerProcess, walk_once
from service.intake.check import FileCheck
from service.intake.inflate import CHUNK, LOCAL, Inflation
from service.intake.spill import Spill
from service.intake.stream import MAX_LINE, iter_lines, open_stream, read_exactly
from service.ledger import AppendResult, Encoded, Ledger, VerifyReport
from service.ops.scrub import PassLog

# events a batch: its decoded events and the rows its append builds take about 3.5 kB an event, so a
# batch of 5,000 holds some 18 MB; 10,000 took 8 MB more at the import's peak, beside its walker, and was
# no faster at 400k lines (47.0 against 44.7 s)
BATCH = 5_000
# events committed between two walks: each walk checks the spans, counts and ids of what it passed, and
# a paper cited in every batch is counted again by each; a walk holds what it passed (touched keys,
# steps), so fewer, longer walks cost memory (400k lines peaked at 131 MB at 30,000, 122 at 20,000)
WALK_EVERY = 20_000
# walks run alongside the appends only where a second core can run them
BESIDE = (os.cpu_count() or 1) >= 2
# a file larger than this starts its walker process before it is checked (when its walks run beside
# the appends): forked then, the walker shares this process's pages and holds none of the check's
# objects; a smaller file (likely one batch, walked here) starts none unless a walk is due beside
EARLY_WALKER_BYTES = 4 << 20
# the part of a file its identity hashes (with its size): enough to tell two files apart, read at once
HEAD_BYTES = 1 << 20
# a file read whole (a record) may hold no more: a larger one that is not NDJSON is refused. Read whole
# it is held twice (its chunks, then joined), and 32 MiB of envelopes decode to some 270 MB of objects;
# a record is kilobytes (the server takes one of LEDGER_MAX_BODY, 8 MiB), a bulk load is NDJSON
WHOLE_MAX = 32 * 1024 * 1024

CHECKING, APPENDING, WALKING = "checking", "appending", "walking"
_log = logging.getLogger("ledger.import")
# told (phase, non-empty lines so far, bytes of the file read so far, the file's size)
Progress = Callable[[str, int, int, int], None]


class _Digest(Protocol):
    """A running hash of the file's bytes (hashlib's sha256)."""

    def update(self, data: bytes, /) -> None: ...
    def hexdigest(self) -> str: ...


class Stopped(LedgerError):
    """An import stopped after some of its batches were committed (the rest refused at its append, or
    the file changed since it was checked): the same command resumes after the last committed batch."""

    code = "import_stopped"


class Differs(LedgerError):
    """An earlier run of this import committed part of a file of the same identity (size, first MiB)
    whose committed bytes are not this file's: resuming would mix two files' events."""

    code = "import_differs"


class Imported(NamedTuple):
    """What one file's import did."""

    name: str
    lines: int  # non-empty lines (events) read, in this run
    appended: int
    duplicates: int
    head: Head
    batches: int
    resumed_at_line: int  # the last line committed by an earlier run (0: none)
    walk: VerifyReport | None  # the last walk after a commit (None: nothing was committed)


def file_key(path: str | os.PathLike[str]) -> str:
    """A file's identity: its size and the sha256 of its first MiB, as stored."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    return f"{os.path.getsize(path)}:{hashlib.sha256(head).hexdigest()}"


def _first_line_alone(path: str | os.PathLike[str], caps: Inflation) -> bool:
    """Whether the file's first line is a JSON value of its own and other lines follow: NDJSON."""
    with open_stream(path, caps=caps) as s:
        lines = iter_lines(s)
        try:
            first = next(lines, None)
            if first is None:
                return False
            decode_json(first[1])
        except InvalidEvent as e:
            if e.where == "file":  # a damaged stream: refused, whatever the file holds
                raise
            return False  # a first line too long, or not JSON by itself: read whole
        return any(line.strip() for _, line in lines)


def import_file(
    ledger: Ledger,
    path: str | os.PathLike[str],
    *,
    batch_size: int = BATCH,
    force: bool = False,
    progress: Progress | None = None,
    scratch_dir: str | None = None,
    walk: bool = True,
    caps: Inflation = LOCAL,
    restart: bool = False,
    keep_resolver_events: bool = False,
) -> Imported:
    """Import one file: check it whole, then append it a batch at a time; raise (a LedgerError naming
    the line) before anything is written if any line is refused. A gzip or zstd file decompresses
    within `caps`; a stream (a pipe, a FIFO) is copied to a scratch file first, within them too. A
    file of the identity of one partly committed earlier whose committed bytes differ is refused
    (`Differs`), unless `restart`: then it is checked and appended from its first line. Resolutions
    claiming the ledger's own resolver or a person are refused unless `keep_resolver_events` (an
    operator moving a ledger)."""
    if batch_size < 1:
        raise InvalidEvent("batch_size", "must be >= 1")
    name = os.fspath(path)
    walker = _Walker(ledger) if walk else None
    try:
        with _rereadable(name, caps, scratch_dir) as readable:
            if not _first_line_alone(readable, caps):
                return _import_whole(ledger, name, readable, force, walker, caps, keep_resolver_events)
            lines = _Lines(ledger, name, readable, batch_size, progress, scratch_dir, walker, caps)
            lines.keep_resolver_events = keep_resolver_events
            return lines.run(restart)
    finally:
        if walker is not None:
            walker.close()  # a walker process left by a failure (or a Ctrl-C) ends with the import


@contextmanager
def _rereadable(name: str, caps: Inflation, scratch_dir: str | None) -> Iterator[str]:
    """A path the import may read twice: the file itself, or for a stream (a pipe, a FIFO,
    /dev/stdin from one) a scratch copy of it, read once as it arrives and no larger than `caps`
    allow what it decompresses to."""
    try:
        regular = stat.S_ISREG(os.stat(name).st_mode)
        f = open(name, "rb")  # noqa: SIM115 - closed below
    except OSError as e:  # a socket, a file it may not read: said in one line
        raise InvalidEvent("file", f"cannot be read: {e.strerror}") from None
    if regular:
        f.close()
        yield name
        return
    spooled = tempfile.NamedTemporaryFile(dir=scratch_dir, prefix="ledger-import-")  # noqa: SIM115
    with f, spooled as spool:
        size = 0
        while data := f.read(CHUNK):
            size += len(data)
            if size > caps.max_bytes:
                raise InvalidEvent(
                    "file",
                    f"a stream of more than {caps.max_bytes:,} bytes (the limit {caps.bytes_setting})",
                )
            spool.write(data)
        spool.flush()
        yield spool.name


def _import_whole(
    ledger: Ledger,
    name: str,
    path: str,
    force: bool,
    walker: _Walker | None,
    caps: Inflation,
    keep: bool,
) -> Imported:
    """A record (or a batch object, a list, one envelope): read whole and appended as one batch."""
    chunks: list[bytes] = []
    with open_stream(path, caps=caps) as s:
        read = read_exactly(s, WHOLE_MAX + 1, chunks.append)
    if read > WHOLE_MAX:
        raise InvalidEvent(
            "file",
            f"neither NDJSON (a JSON value alone on its first line) nor a JSON value of at most "
            f"{WHOLE_MAX:,} bytes",
        )
    batch = parse_input(b"".join(chunks), force=force)
    chunks.clear()
    result = ledger.append_batch(batch, resolver_events=keep)
    report = None
    if walker is not None:
        walker.after_commit()
        report = walker.finish()
    return Imported(name, len(batch.events), result.appended, result.duplicates, result.head, 1, 0, report)


class _Walker:
    """Walks the chain, when told (every WALK_EVERY events committed, and at the end), from the last
    verified point, re-reading what was stored, and moves the point to the head; with no full walk
    recorded yet, the first is from seq 1 and recorded as one (what the first integrity report would
    otherwise walk inside its request). The walks due while batches remain run in a walker process, one
    at a time; the last runs here, after the one in flight."""

    def __init__(self, ledger: Ledger) -> None:
        self.store = ledger.store
        self.url = ledger.url
        self.passes = PassLog(ledger.store, ledger.clock)
        self.report: VerifyReport | None = None  # the last walk's, here or beside
        self.due = False  # a walk was asked for and not started yet
        self.here = not BESIDE  # every walk in this process: one core, or the walker process stopped
        self.beside: WalkerProcess | None = None  # started by `start`, or when a walk is due beside

    def start(self) -> None:
        """Start the walker process now, while this process holds little that it would copy."""
        if self.here or self.beside is not None:
            return
        try:
            self.beside = WalkerProcess(self.url)
        except WalkerGone as e:
            self._fall_back(e)
            self.due = False

    def after_commit(self) -> VerifyReport | None:
        """A walk is due: it runs beside the appends that follow (`ahead`), else here (`finish`); a
        walk due while one runs is folded into the next. The last report so far."""
        self.due = True
        return self.report

    def ahead(self) -> None:
        """More batches are to be appended: collect the walk beside if it ended, and start the due
        walk there if none runs (here, at once, when walks run here)."""
        if self.here:
            self._walk_here()
            return
        try:
            self._collect(wait=False)
            if not self.due or not self._walking() or (self.beside is not None and self.beside.busy):
                return
            if self.beside is None:
                self.beside = WalkerProcess(self.url)
            self.beside.ask()
            self.due = False
        except WalkerGone as e:
            self._fall_back(e)
            self._walk_here()

    def finish(self) -> VerifyReport | None:
        """After the last commit: wait for the walk beside, then run the due walk here; the last
        report (a walk that finds a break stops walking: the break is the answer)."""
        if self.beside is not None:
            try:
                self._collect(wait=True)
            except WalkerGone as e:
                self._fall_back(e)
            self.close()
        self._walk_here()
        return self.report

    def close(self) -> None:
        """End the walker process, if it runs (killed at once if a walk is still in flight)."""
        if self.beside is not None:
            self.beside.close(now=self.beside.busy)
            self.beside = None

    def _walking(self) -> bool:
        return self.report is None or self.report.ok

    def _walk_here(self) -> None:
        if self.due:
            self.due = False
            if self._walking():
                self.report = walk_once(self.store, self.passes)

    def _collect(self, wait: bool) -> None:
        if self.beside is not None and (got := self.beside.done(wait)) is not None:
            self.report = got

    def _fall_back(self, why: WalkerGone) -> None:
        """The walker process ended or failed: its walk in flight runs again here, and every later one."""
        _log.warning("the import's walker process stopped (%s); the rest is walked in this process", why)
        if self.beside is not None:
            self.beside.close(now=True)
            self.beside = None
        self.here = True
        self.due = True


class _Lines:
    """The two passes over an NDJSON file, from where an earlier run's last batch ended: the check reads
    and decodes the file, the append appends the events the check spilled."""

    def __init__(
        self,
        ledger: Ledger,
        name: str,
        path: str,
        batch_size: int,
        progress: Progress | None,
        scratch_dir: str | None,
        walker: _Walker | None,
        caps: Inflation,
    ) -> None:
        self.ledger = ledger
        self.name = name  # as given: what progress and refusals name
        self.path = path  # what is read: the file, or a stream's scratch copy
        self.caps = caps
        self.batch_size = batch_size
        self.progress = progress
        self.scratch_dir = scratch_dir
        self.walker = walker
        self.size = os.path.getsize(path)
        self.key = file_key(path)
        self.checked_at = 0  # the ledger's clock when the first pass checked the rules
        self.start = _Start(0, 0, "", None)  # where the first pass began
        self.read = 0  # bytes of the file read in the current pass (the append: covered by its commits)
        self.lines = 0  # non-empty lines read in the current pass
        self.found = ""  # the sha256 of this file's first bytes where an earlier run's committed ones differ
        self.keep_resolver_events = False  # resolutions claiming the ledger's resolver or a person taken

    def _counted(self, n: int) -> None:
        self.read += n

    def _tell(self, phase: str) -> None:
        if self.progress is not None:
            self.progress(phase, self.lines, self.read, self.size)

    def run(self, restart: bool) -> Imported:
        """Check what is not committed yet, then append it."""
        if self.walker is not None and self.size > EARLY_WALKER_BYTES:
            # a file of several batches: its walker starts before the check fills this process
            self.walker.start()
        prior = self.ledger.store.imports.import_progress(self.key)
        with contextlib.ExitStack() as stack:
            spill = stack.enter_context(contextlib.closing(Spill(self.scratch_dir)))
            start, ends = self._check(prior, spill)
            if start.prior is None and prior is not None:
                # the committed bytes are not this file's beginning: another file of the same size and
                # first MiB, or this one edited since; resuming would mix two files' events
                if not restart:
                    raise Differs(self._differs(prior), details={"line": prior.lines_done})
                stack.close()
                spill = stack.enter_context(contextlib.closing(Spill(self.scratch_dir)))
                start, ends = self._check(None, spill)
            return self._append(start, ends, spill)
        raise AssertionError("unreachable")  # pragma: no cover

    def _differs(self, prior: ImportProgress) -> str:
        return (
            f"not the file an earlier import of this size and first MiB committed up to line "
            f"{prior.lines_done:,} (as {prior.name}): its first {prior.bytes_done:,} bytes have sha256 "
            f"{self.found}, the committed ones had sha256 {prior.prefix_sha256}; --restart checks and "
            "appends it from its first line (events already stored count as duplicates)"
        )

    def _numbered(
        self, s: IO[bytes], sha: _Digest, first: int, ends: list[_End]
    ) -> Iterator[tuple[int, bytes]]:
        """The lines after the start, each taken into the running hash; where each batch of the append
        will end (after every `batch_size` non-empty lines, and at the end): its offset, line, hash."""
        count = since = 0
        offset, n = self.start.offset, first - 1
        for n, line in iter_lines(s, first):
            sha.update(line)
            since += len(line)
            offset += len(line)
            if line.strip():
                count += 1
                self.lines += 1
                if self.lines % 1000 == 0:
                    self._tell(CHECKING)
            yield n, line
            if count == self.batch_size:
                ends.append(_End(offset, n, sha.hexdigest(), count))
                count = since = 0
        if since or not ends:
            # the bytes after the last full batch (blank lines, or the last lines): committed with it
            ends.append(_End(offset, n, sha.hexdigest(), count))

    def _check(self, prior: ImportProgress | None, spill: Spill) -> tuple[_Start, list[_End]]:
        """The first pass from the committed prefix (when the file still begins with it): every line
        checked and its event spilled, where each batch ends noted."""
        sha = hashlib.sha256()
        self.read = self.lines = 0
        start = self.start = _Start(0, 0, "", None)
        with open_stream(self.path, self._counted, caps=self.caps) as s:
            if prior is not None:
                done = read_exactly(s, prior.bytes_done, sha.update)
                if done != prior.bytes_done or sha.hexdigest() != prior.prefix_sha256:
                    self.found = sha.hexdigest()
                    return start, []
                start = self.start = _Start(prior.bytes_done, prior.lines_done, sha.hexdigest(), prior)
            self.checked_at = self.ledger.clock.now_us()
            check = FileCheck(self.ledger.store.imports, self.checked_at, self.scratch_dir, spill)
            check.keep_resolver_events = self.keep_resolver_events
            ends: list[_End] = []
            check.run(self._numbered(s, sha, start.lines + 1, ends))
        self._tell(CHECKING)
        return start, ends

    def _append(self, start: _Start, ends: list[_End], spill: Spill) -> Imported:
        """The second pass: the spilled events a batch at a time, each with the file's progress in its
        transaction; the file itself is not read again."""
        self.read, self.lines = start.offset, 0
        run = _Run(start, len(ends), self.ledger.head())
        try:
            for numbered in spill.read():
                for n, event, encoded in numbered:
                    run.events.append(event)
                    run.encoded.append(encoded)
                    run.places.append(f"line {n}")
                    self.lines += 1
                    if len(run.events) == ends[run.batches].events:
                        self._commit(run, ends[run.batches])
                    elif self.lines % 1000 == 0:
                        self._tell(APPENDING)
            while run.batches < len(ends):  # the bytes after the last full batch, or an empty file's
                self._commit(run, ends[run.batches])
        except LedgerError as e:
            if not run.batches:
                raise
            self._walk(run)
            raise Stopped(
                f"stopped at line {run.line} after {run.batches} committed batch(es) ({run.appended} "
                f"appended, up to line {run.committed_line}): {e.message}; the same command resumes "
                "after the last committed batch",
                details={"line": run.line, "committed_line": run.committed_line},
            ) from None
        if run.batches:
            self._walk(run)
        got = (run.appended, run.duplicates, run.head, run.batches)
        return Imported(self.name, self.lines, *got, start.lines, run.report)

    def _walk(self, run: _Run) -> None:
        """The last walk: of what was committed since the last one was asked for (once more when none
        was: the report), after the one in flight."""
        if self.walker is None:
            return
        if run.unwalked or not run.asked:
            self.walker.after_commit()
        self._tell(WALKING)  # the walk takes time of its own after the last append: said, not hidden
        run.report = self.walker.finish()

    def _commit(self, run: _Run, end: _End) -> None:
        """Append the batch in hand, with how far the file is committed (`end`), in one transaction."""
        run.line = end.line
        at = self.ledger.clock.now_us()
        prior = run.start.prior
        before = (prior.appended, prior.duplicates) if prior is not None else (0, 0)

        def save(tx: WriteTx, result: AppendResult) -> None:
            tx.save_import_progress(
                ImportProgress(self.key, self.name, end.offset, end.line, end.sha256,
                               before[0] + run.appended + result.appended,
                               before[1] + run.duplicates + result.duplicates,
                               result.head.seq, format_recorded(at), at)
            )  # fmt: skip

        # the check refused every resolution claiming the ledger's resolver or a person (unless told to
        # keep them), in these very events: not again here
        result = self.ledger.append(
            run.events, None, run.places, typed=True, within=save, checked_at=self.checked_at,
            resolver_events=True, encoded=run.encoded,
        )  # fmt: skip
        run.appended += result.appended
        run.duplicates += result.duplicates
        run.head = result.head
        run.batches += 1
        run.committed_line = end.line
        run.events, run.places, run.encoded = [], [], []
        run.unwalked += result.appended
        self.read = end.offset
        if self.walker is not None and run.unwalked >= WALK_EVERY:
            self.walker.after_commit()
            run.asked, run.unwalked = True, 0
        self._tell(APPENDING)
        if self.walker is not None and run.batches < run.total:
            self.walker.ahead()  # beside the next batches


class _Run:
    """The second pass's state: the batch in hand, what was committed."""

    def __init__(self, start: _Start, total: int, head: Head) -> None:
        self.start = start
        self.total = total  # the batches to commit
        self.line = self.committed_line = start.lines
        self.events: list[Event] = []
        self.encoded: list[Encoded] = []  # what the check made of each event (spill.py)
        self.places: list[str] = []
        self.appended = self.duplicates = self.batches = 0
        self.unwalked = 0  # events committed since the last walk was asked for
        self.asked = False  # whether a walk was asked for
        self.head = head
        self.report: VerifyReport | None = None


class _Start(NamedTuple):
    """Where this run begins: after the bytes and lines an earlier run committed, and their hash."""

    offset: int
    lines: int
    sha256: str
    prior: ImportProgress | None


class _End(NamedTuple):
    """Where a batch of the append ends: the file's bytes and lines up to there, their sha256, and the
    batch's non-empty lines (its events)."""

    offset: int
    line: int
    sha256: str
    events: int


__all__ = ["BATCH", "Differs", "Imported", "LedgerError", "MAX_LINE", "file_key", "import_file"]

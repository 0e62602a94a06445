"""`kill -9` of the importing process or of a projector beside it, at random points of one `ledger import`.

One NDJSON file (bench/intake.py's synthetic papers) goes into two new ledgers. Ledger A takes it in one
uninterrupted `ledger import`. Ledger B takes it from the same command while `ledger project` runs beside
it again and again (the projector alone, in its own process); at each of the seeded kill points (an
event count the head passes) one of them gets SIGKILL, and the command killed is run again as it was:

- the writer: `ledger import` is killed as soon as the head passes the point; the log must then hold
  exactly the events of the file's first N lines, where N is what the import's resume record says,
  each once (a line repeating an earlier one is a duplicate), in file order; the same command then
  resumes, and says it resumed after line N;
- the projector, either at a random moment of its run ("timed") or just before it writes a batch's new
  position ("before-save", the batch's rows written and not yet committed): the spans' position must be
  at most the head, and the next run resumes from it.

At the end B must hold every event of the file exactly once (ids in the file's order, as A holds them),
its verified point at the head (the import that finished walked what the killed ones left unwalked),
every projection at the head after one more `ledger project`, `ledger verify` OK, and every paper's
record byte-identical to A's at a fixed "now" and at three instants inside the file's span of time.

    python -m reliability.import_kill --lines 400000 --kills 10 --backend sqlite|postgresql [--seed 44]

prints the plan, then the figures as JSON; exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliability.check import LedgerRows
from reliability.server import ROOT, is_url, ledger_cmd

# a projector run that kills itself just before its Nth new position (the batch's rows written in the
# transaction): what is committed must be the batch and its position together, or neither
_DIE_BEFORE_SAVE = """
import os, signal, sys
from ledger.storage import projector
from ledger.storage.sql_store import SqlStore
at, seen, query = int(sys.argv[1]), [0], SqlStore.query
def query_or_die(self, conn, sql, params=()):
    if sql == projector._SAVE:
        seen[0] += 1
        if seen[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
    return query(self, conn, sql, params)
SqlStore.query = query_or_die
from entry.main import main
sys.argv = ["ledger", *sys.argv[2:]]
main()
"""
POLL_S = 0.02  # how often the driver reads B's head
NO_LAG_LIMIT = "1000000"  # B's appends leave the projecting to the projector beside them (and the exit)


@dataclass
class Kill:
    """One kill point: the head it waits for, whom it kills and how."""

    seq: int
    target: str  # "writer" or "projector"
    mode: str = "timed"  # a projector's: "timed" (SIGKILL from outside) or "before-save"
    delay_s: float = 0.0  # "timed": how long after the point (or the run's start)
    nth_save: int = 1  # "before-save": which of the run's position writes it dies before
    landed: dict[str, Any] = field(default_factory=dict)


def plan(rng: random.Random, events: int, kills: int) -> list[Kill]:
    """`kills` points, each the writer's (between 5% and 90% of the file's events) or a projector's
    (between 5% and 60%: it must land while the import still gives it work); at least one of each,
    and the first projector kill comes just before a position is written."""
    targets = [rng.choice(("writer", "projector")) for _ in range(kills)]
    if kills >= 2 and len(set(targets)) == 1:
        targets[rng.randrange(kills)] = "projector" if targets[0] == "writer" else "writer"
    out = []
    for target in targets:
        top = events * (9 if target == "writer" else 6) // 10
        out.append(Kill(rng.randrange(max(1, events // 20), max(2, top)), target))
    out.sort(key=lambda k: k.seq)
    first = True
    for k in out:
        if k.target == "projector":
            k.mode = "before-save" if first else rng.choice(("timed", "before-save"))
            k.delay_s = round(rng.uniform(0.0, 1.5), 3)
            k.nth_save = rng.randint(1, 2)
            first = False
    return out


def make_file(path: Path, lines: int) -> None:
    """bench/intake.py's file of synthetic papers, one envelope a line."""
    from bench.intake import make_file as bench_file

    bench_file(path, lines)


@dataclass
class FileFacts:
    """What the driver knows of the file: each line's event id, the papers, the span of its instants."""

    ids: list[str]  # each distinct event once, in the order of its first line (the log's order)
    after_lines: list[int]  # after_lines[n]: how many of them the first n lines hold
    papers: list[str]
    instants: list[int]  # three observed_at instants inside the file's span (quartiles)


def file_facts(path: Path) -> FileFacts:
    """Read the file once: the ids the ledger gives its events (ledger-v1: uuid5 of the content when
    the line has none), every arXiv id a record can be asked for, and three instants within it."""
    from ledger.model.codec import derived_event_id
    from ledger.model.importer import parse_input
    from ledger.model.instants import parse_ts

    ids: list[str] = []
    seen: set[str] = set()
    after_lines = [0]
    papers: set[str] = set()
    observed: list[int] = []
    with path.open("rb") as f:
        for line in f:
            (event,) = parse_input(line).events
            eid = event.event_id or derived_event_id(event)
            if eid not in seen:  # a line repeating an earlier one is a duplicate: not appended again
                seen.add(eid)
                ids.append(eid)
            after_lines.append(len(ids))
            observed.append(parse_ts(event.observed_at))
            for key in ("arxiv_id", "citing_arxiv_id", "cited_arxiv_id"):
                paper = getattr(event.data, key, None)
                if isinstance(paper, str):
                    papers.add(paper)
    observed.sort()
    quarters = [observed[len(observed) * q // 4] for q in (1, 2, 3)]
    return FileFacts(ids, after_lines, sorted(papers), quarters)


class Db:
    """B's rows the driver reads while it runs, straight from the database."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        if is_url(self.url):
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as pg:
                yield pg
        else:
            conn = sqlite3.connect(f"file:{self.url}?mode=ro", uri=True, timeout=60)
            try:
                yield conn
            finally:
                conn.close()

    def one(self, sql: str) -> Any:
        """The first column of the first row (None if none, or if the table is not made yet)."""
        try:
            with self._conn() as c:
                row = c.execute(sql).fetchone()
        except Exception as e:  # an empty ledger's tables come with the first command
            if any(m in str(e) for m in ("no such table", "does not exist", "unable to open")):
                return None
            raise
        return None if row is None else row[0]

    def head(self) -> int:
        """The last seq (0 when empty)."""
        return int(self.one("SELECT max(seq) FROM events") or 0)

    def spans_at(self) -> int:
        """The spans' position."""
        return int(self.one("SELECT seq FROM projections WHERE name = 'inbound_spans'") or 0)

    def progress_lines(self) -> int:
        """The lines the import's resume record says are committed."""
        return int(self.one("SELECT max(lines_done) FROM import_progress") or 0)

    def ids(self) -> list[str]:
        """Every event id in seq order."""
        with self._conn() as c:
            return [str(r[0]) for r in c.execute("SELECT event_id FROM events ORDER BY seq").fetchall()]


class Runs:
    """The child processes of one ledger: environment, CPU and the count of each kind of run."""

    def __init__(self, db: str, state: Path, lag: str | None = None) -> None:
        self.db = db
        state.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        env["PYTHONPATH"] = str(ROOT)
        if is_url(db):  # the ledger's key and checkpoint files
            env["LEDGER_STATE_DIR"] = str(state)
        if lag is not None:
            env["LEDGER_PROJECTOR_MAX_LAG"] = lag
        self.env = env
        self.cwd = state
        self.started: dict[str, int] = {}

    def start(self, kind: str, argv: list[str]) -> subprocess.Popen[str]:
        """A child in its own process group (a kill reaches the import's walker with it)."""
        self.started[kind] = self.started.get(kind, 0) + 1
        return subprocess.Popen(
            argv,
            env=self.env,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def run(self, kind: str, argv: list[str], timeout: float = 3600) -> str:
        """A child run to its end; its stdout, asserting exit 0."""
        p = self.start(kind, argv)
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"{' '.join(argv[3:])} exited {p.returncode}: {out}{err}"
        return out


def kill9(p: subprocess.Popen[str]) -> bool:
    """SIGKILL to the child's whole group; whether it was still running (the kill landed)."""
    alive = p.poll() is None
    with suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)
    return alive and p.returncode == -signal.SIGKILL


def children_cpu() -> float:
    """CPU seconds of every child process ended so far (and the children they waited for)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Killing:
    """Ledger B: the import and a projector beside it, killed at the plan's points."""

    def __init__(self, runs: Runs, import_argv: list[str], facts: FileFacts, kills: list[Kill]) -> None:
        self.runs, self.db = runs, Db(runs.db)
        self.import_argv = import_argv
        self.project_argv = [*ledger_cmd(), "project", "--db", runs.db]
        self.facts = facts
        self.pending = list(kills)
        self.writer: subprocess.Popen[str] | None = None
        self.projector: subprocess.Popen[str] | None = None
        self.projector_started = 0.0
        self.dying = False  # the projector running is one that kills itself before a position
        # the projector running was stopped (SIGTERM) so that a dying run starts while there is work:
        # a run started before the kill was armed follows the import to its end
        self.stopping = False
        self.armed: Kill | None = None  # a projector kill waiting for its run
        self.timed_from = 0.0
        self.checks: list[str] = []
        self.resumed_after: list[int] = []  # what each import run that ended said it resumed after
        self.committed_lines: list[int] = []  # what the resume record said at each writer kill

    def run(self) -> None:
        """Until the import has ended well and every kill has landed."""
        self.writer = self.runs.start("import", self.import_argv)
        while self.writer is not None or self.pending or self.armed is not None:
            self._projector_turn()
            if self.writer is not None and self.writer.poll() is not None:
                out, err = self.writer.communicate()
                assert self.writer.returncode == 0, f"import exited {self.writer.returncode}: {out}{err}"
                self.resumed_after += [
                    int(s.split()[0].replace(",", "")) for s in out.split("resumed after line ")[1:]
                ]
                self.writer = None
            head = self.db.head()
            for k in [k for k in self.pending if head >= k.seq]:
                if k.target == "writer":
                    self.pending.remove(k)
                    self._kill_writer(k, head)
                elif self.armed is None:
                    self.pending.remove(k)
                    self.armed, self.timed_from = k, time.monotonic()
                    if k.mode == "before-save" and self.projector is not None and not self.dying:
                        self.stopping = True
                        self.projector.terminate()
            if self.writer is None:
                late = [k for k in self.pending if k.target == "writer"]
                assert not late, f"the import ended before the kill at seq {late[0].seq}"
                armed = self.armed
                if armed is not None and armed.mode == "before-save" and self.db.spans_at() >= head:
                    raise AssertionError(
                        f"the projector had nothing left to do at the kill at seq {armed.seq}"
                    )
            time.sleep(POLL_S)
        self._stop_projector()

    def _kill_writer(self, k: Kill, head: int) -> None:
        assert self.writer is not None
        if not kill9(self.writer):
            self.writer.communicate()
            raise AssertionError(f"the import had ended before the kill at seq {k.seq}")
        # nothing else appends: the log is now exactly what the import committed
        ids = self.db.ids()
        lines = self.db.progress_lines()
        want = self.facts.after_lines[lines]
        assert ids == self.facts.ids[:want], (
            f"writer kill at {k.seq}: the resume record says {lines} lines, whose {want} events the log "
            f"should hold in order; it holds {len(ids)} ({len(set(ids))} distinct)"
        )
        self.committed_lines.append(lines)
        k.landed = {"head_seen": head, "events_after": len(ids), "resume_record_lines": lines}
        self.checks.append(f"writer kill at {k.seq}: log = the first {lines} lines' {len(ids)} events")
        self.writer = self.runs.start("import", self.import_argv)

    def _projector_turn(self) -> None:
        """Keep one projector run going (a new one each time the last ends), and land an armed kill."""
        p, k = self.projector, self.armed
        if p is not None and p.poll() is not None:
            out, err = p.communicate()
            if k is not None and self.dying and p.returncode == -signal.SIGKILL:
                self._landed(k)
            elif self.stopping and p.returncode == -signal.SIGTERM:
                self.stopping = False  # stopped mid-run: what it committed stands, the rest rolls back
            else:
                self.stopping = False
                assert p.returncode == 0, f"ledger project exited {p.returncode}: {out}{err}"
                if k is not None and self.dying:
                    # it had fewer batches than asked: the next run dies before its first position
                    k.nth_save = 1
            self.projector = p = None
            k = self.armed
        waited = time.monotonic() - max(self.timed_from, self.projector_started)
        if p is not None and k is not None and k.mode == "timed" and waited >= k.delay_s:
            if kill9(p):
                self._landed(k)
            self.projector = None
            return
        if self.projector is None and (self.writer is not None or self.armed is not None):
            argv = self.project_argv
            self.dying = self.armed is not None and self.armed.mode == "before-save"
            if self.armed is not None and self.dying:
                argv = [sys.executable, "-c", _DIE_BEFORE_SAVE, str(self.armed.nth_save), *argv[3:]]
            self.projector = self.runs.start("project", argv)
            self.projector_started = time.monotonic()

    def _landed(self, k: Kill) -> None:
        head, at = self.db.head(), self.db.spans_at()
        assert at <= head, f"projector kill at {k.seq}: the spans' position {at} is past the head {head}"
        k.landed = {"head": head, "spans_position": at}
        self.checks.append(f"projector kill ({k.mode}) at {k.seq}: spans at {at} of head {head}")
        self.armed = None

    def _stop_projector(self) -> None:
        if self.projector is not None:
            out, err = self.projector.communicate(timeout=3600)
            assert self.projector.returncode == 0, f"ledger project exited {self.projector.returncode}: {err}"
            self.projector = None


def records(db: str, state: Path, papers: list[str], instants: list[int | None]) -> dict[str, str]:
    """Every paper's record at each instant, as canonical bytes' sha256 (read through the library)."""
    import hashlib

    from ledger.model.errors import LedgerError
    from service.ledger import Ledger

    old = os.environ.get("LEDGER_STATE_DIR")
    if is_url(db):
        os.environ["LEDGER_STATE_DIR"] = str(state)
    ledger = Ledger(db, project_on_read=False)
    try:
        out = {}
        for pid in papers:
            for at in instants:
                try:
                    body, _ = ledger.record_bytes(pid, at)
                except LedgerError as e:  # a paper not yet seen at that instant: the same refusal
                    body = f"{e.code}: {e.message}".encode()
                out[f"{pid}@{at}"] = hashlib.sha256(body).hexdigest()
        return out
    finally:
        ledger.close()
        if old is None:
            os.environ.pop("LEDGER_STATE_DIR", None)
        else:
            os.environ["LEDGER_STATE_DIR"] = old


def verify_json(runs: Runs) -> dict[str, Any]:
    """`ledger verify --json` as a user runs it, asserting exit 0."""
    out = runs.run("verify", [*ledger_cmd(), "verify", "--json", "--db", runs.db])
    return dict(json.loads(out))


def run(
    workdir: Path,
    lines: int,
    *,
    kills: int = 10,
    seed: int = 44,
    batch_size: int | None = None,
    db_a: str | None = None,
    db_b: str | None = None,
    say: Callable[[str], None] = lambda s: None,
    server_cpu: Callable[[], float] = lambda: 0.0,
) -> dict[str, Any]:
    """The whole run (new SQLite files in `workdir` unless given two empty ledgers); the figures.
    `server_cpu`: the CPU seconds a database server has used so far (PostgreSQL's share of the work)."""
    from ledger.model.instants import SYSTEM_CLOCK

    # "now" for both ledgers' records (the default would differ between reads)
    fixed_now = SYSTEM_CLOCK.now_us()
    path = workdir / f"import-{lines}.ndjson"
    t0 = time.monotonic()
    make_file(path, lines)
    facts = file_facts(path)
    say(f"file: {lines:,} lines, {path.stat().st_size / 1e6:.0f} MB, {len(facts.papers):,} papers, "
        f"{time.monotonic() - t0:.1f} s")  # fmt: skip
    rng = random.Random(seed)
    kill_plan = plan(rng, len(facts.ids), kills)
    say(f"seed {seed}: " + "; ".join(f"{k.seq} {k.target} {k.mode if k.target == 'projector' else ''}"
                                     for k in kill_plan))  # fmt: skip

    db_a = db_a or str(workdir / "a.db")
    db_b = db_b or str(workdir / "b.db")
    runs_a = Runs(db_a, workdir / "a")
    cpu, server, t = children_cpu(), server_cpu(), time.monotonic()
    batches = [] if batch_size is None else ["--batch-size", str(batch_size)]
    runs_a.run("import", [*ledger_cmd(), "import", str(path), "--db", db_a, *batches])
    a = {"seconds": round(time.monotonic() - t, 1), "cpu_seconds": round(children_cpu() - cpu, 1),
         "server_cpu_seconds": round(server_cpu() - server, 1)}  # fmt: skip
    say(f"A, uninterrupted: {a}")

    runs_b = Runs(db_b, workdir / "b", lag=NO_LAG_LIMIT)
    killing = Killing(runs_b, [*ledger_cmd(), "import", str(path), "--db", db_b, *batches], facts, kill_plan)
    cpu, server, t = children_cpu(), server_cpu(), time.monotonic()
    killing.run()
    b = {"seconds": round(time.monotonic() - t, 1), "cpu_seconds": round(children_cpu() - cpu, 1),
         "server_cpu_seconds": round(server_cpu() - server, 1),
         "runs": dict(runs_b.started)}  # fmt: skip
    for line in killing.checks:
        say("  " + line)
    say(f"B, killed {kills} times: {b}")
    landed = [k for k in kill_plan if k.landed]
    assert len(landed) == kills, f"{kills - len(landed)} kills did not land"

    # the projector resumes: one more run brings every projection to the head
    last = runs_b.run("project", [*ledger_cmd(), "project", "--db", db_b])
    failures: list[str] = []
    unknown = [n for n in killing.resumed_after if n not in killing.committed_lines]
    if unknown:
        failures.append(f"imports resumed after lines {unknown}, not where a kill left the resume record")
    b_db = Db(db_b)
    ids_b, ids_a = b_db.ids(), Db(db_a).ids()
    if ids_b != facts.ids:
        failures.append(
            f"B holds {len(ids_b):,} events ({len(set(ids_b)):,} distinct), the file {len(facts.ids):,}"
        )
    if ids_a != facts.ids:
        failures.append(f"A holds {len(ids_a):,} events; the file {len(facts.ids):,} distinct")
    # the walk of the run that ended covered what the killed runs committed since their last walk
    walked = {name: Db(url).one("SELECT seq FROM verified_point WHERE id = 1") for name, url in
              (("A", db_a), ("B", db_b))}  # fmt: skip
    for name, seq in walked.items():
        if seq != len(facts.ids):
            failures.append(f"{name}: the import left the verified point at {seq}, not the head")
    structure = LedgerRows(db_b).check_structure() if lines <= 50_000 else {}
    verified = {name: verify_json(r) for name, r in (("A", runs_a), ("B", runs_b))}
    for name, v in verified.items():
        head = v["head"]["seq"]
        if not v["ok"]:
            failures.append(f"{name}: ledger verify: {v}")
        behind = {p: at for p, at in v["projections"].items() if at != head}
        if name == "B" and behind:
            failures.append(f"B: projections behind the head {head} after `ledger project`: {behind}")
    t = time.monotonic()
    instants: list[int | None] = [fixed_now, *facts.instants]
    rec_a = records(db_a, workdir / "a", facts.papers, instants)
    rec_b = records(db_b, workdir / "b", facts.papers, instants)
    differ = sorted(k for k in rec_a if rec_a[k] != rec_b.get(k))
    if differ:
        failures.append(f"{len(differ)} of {len(rec_a)} records differ between A and B, e.g. {differ[:3]}")
    figures = {
        "lines": lines,
        "seed": seed,
        "kills": [
            {
                "seq": k.seq,
                "target": k.target,
                **({"mode": k.mode} if k.target == "projector" else {}),
                **k.landed,
            }
            for k in kill_plan
        ],  # fmt: skip
        "uninterrupted": a,
        "killed": b,
        "restarts": {
            "writer": sum(k.target == "writer" for k in kill_plan),
            "projector": sum(k.target == "projector" for k in kill_plan),
        },  # fmt: skip
        "resumed_after_lines": killing.resumed_after,
        "events": {
            "file_lines": lines,
            "file_distinct": len(facts.ids),
            "A": len(ids_a),
            "B": len(ids_b),
            "B_distinct": len(set(ids_b)),
        },
        "structure_B": structure,
        "verified_point_after_import": walked,
        "last_project": last.strip(),
        "verify": {
            n: {"ok": v["ok"], "events": v.get("events_checked"), "projections": v["projections"]}
            for n, v in verified.items()
        },  # fmt: skip
        "records_compared": len(rec_a),
        "records_differing": len(differ),
        "records_seconds": round(time.monotonic() - t, 1),
        "failures": failures,
    }
    return figures


def main() -> None:
    """Parse, run in a new temporary directory (PostgreSQL: a throwaway server), print, exit 1 on failure."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=400_000)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--seed", type=int, default=44)
    p.add_argument("--batch-size", type=int, default=None, help="the import's (default: its own)")
    p.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    a = p.parse_args()
    say: Callable[[str], None] = lambda s: print(s, flush=True)  # noqa: E731
    cluster = None
    with tempfile.TemporaryDirectory(prefix="ledger-import-kill-") as tmp:
        try:
            kw: dict[str, Any] = {}
            if a.backend == "postgresql":
                from tests.pg_harness import PgCluster

                cluster = PgCluster.start(fsync=True)
                from bench.intake import server_cpu

                data_dir = cluster.data_dir
                kw = {"db_a": cluster.create_db("killa"), "db_b": cluster.create_db("killb")}
                if data_dir is not None:  # a server this run started: its CPU is counted too
                    kw["server_cpu"] = lambda: server_cpu(data_dir)
            figures = run(
                Path(tmp), a.lines, kills=a.kills, seed=a.seed, batch_size=a.batch_size, say=say, **kw
            )
        except AssertionError as e:
            print(f"FAILED: {e}", flush=True)
            sys.exit(1)
        finally:
            if cluster is not None:
                cluster.stop()
    print(json.dumps(figures, indent=2))
    if figures["failures"]:
        sys.exit(1)


if __name__ == "__main__":
    main()

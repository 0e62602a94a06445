"""Intake, killed and resumed: what the same command costs after a kill -9, against the part of an
uninterrupted run it had left to do.

    .venv/bin/python -m bench.intake_resume FILE [--backend sqlite|postgresql] [--at 0.5]

Runs of `ledger import FILE` (this checkout), each into its own empty ledger:

1. **whole** (skipped with `--no-whole`): the file in one run, for the head seq an uninterrupted run
   reaches (every event once) and its wall time.
2. **killed**: the same file, killed with SIGKILL (it and its child processes) once its progress row
   (`import_progress`, written in each batch's transaction) passes `--at` of the file's lines. The
   bytes and lines committed when it died are read back afterwards.
3. **reference** (twice, before and after the resumed run; their mean): what the part not committed
   costs by itself. The killed run's ledger is copied (the SQLite backup API; PostgreSQL `CREATE
   DATABASE ... TEMPLATE`) and the file's bytes after the committed offset, written to a file of their
   own, are imported into the copy: a check of those lines and their appends and walks, into a ledger
   in the same state, with no resuming to do.
4. **resumed**: the same command as the killed run, into its ledger.

Runs 3 and 4 are under `/usr/bin/time -v` (wall, user + system of the process and its children, peak
RSS). The target (issue 31): the resumed run takes at most the reference's time plus 10%. Then
`ledger verify` must pass on the resumed ledger, and its head seq must equal the reference's and the
whole run's. Results go to bench/intake.json (who "resume").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.intake import OUT, ROOT, _env, _ledger, proc_stats, timed

POLL = 0.05


def _descendants(pid: int, procs: dict[int, tuple[int, int, int, int, int]] | None = None) -> list[int]:
    """The live processes below `pid`."""
    procs = proc_stats() if procs is None else procs
    found = {pid}
    grew = True
    while grew:
        grew = False
        for p, (ppid, *_) in procs.items():
            if ppid in found and p not in found:
                found.add(p)
                grew = True
    return sorted(found - {pid})


class Progress:
    """Reads an import's committed line from its ledger."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.conn: Any = None

    def line(self) -> int:
        """The line the import has committed up to (0 before its first batch)."""
        try:
            if self.conn is None:
                self.conn = self._connect()
            row = self.conn.execute("SELECT max(lines_done) FROM import_progress").fetchone()
        except Exception:  # the table is made by the import's first open; until then nothing is done
            self.close()
            return 0
        return int(row[0] or 0)

    def _connect(self) -> Any:
        if self.db.startswith("postgresql"):
            import psycopg

            return psycopg.connect(self.db, autocommit=True)
        import sqlite3

        if not Path(self.db).exists():
            raise FileNotFoundError(self.db)
        return sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, isolation_level=None)

    def close(self) -> None:
        """Drop the reading connection."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def killed(path: Path, db: str, cwd: Path, at_line: int) -> dict[str, Any]:
    """Run until the committed line passes `at_line`, then SIGKILL; the line committed when it died."""
    proc = subprocess.Popen([*_ledger(), "import", str(path), "--db", db], env=_env(None), cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    started = time.perf_counter()
    seen = Progress(db)
    while proc.poll() is None and seen.line() < at_line:
        time.sleep(POLL)
    if proc.poll() is not None:
        raise SystemExit("the run to be killed ended first: lower --at")
    for pid in _descendants(proc.pid):
        os.kill(pid, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wall = time.perf_counter() - started
    seen.close()
    committed = Progress(db).line()
    return {"seconds": round(wall, 2), "committed_line": committed}


def run(path: Path, backend: str, at: float, work: Path, with_whole: bool) -> dict[str, Any]:
    """The runs and their comparison."""
    lines = sum(1 for raw in path.open("rb") if raw.strip())
    cluster = None
    if backend == "postgresql":
        from tests.pg_harness import PgCluster

        cluster = PgCluster.start(fsync=True)
    try:
        w = None
        if with_whole:
            whole_db = _new_db(backend, work, "whole", cluster)
            w = timed([*_ledger(), "import", str(path), "--db", whole_db], _env(None), work) | {
                "db": whole_db
            }
        dbs = {"killed": _new_db(backend, work, "killed", cluster)}
        k = killed(path, dbs["killed"], work, int(lines * at))
        offset, done = _committed(dbs["killed"])
        tail = work / "resume-tail.ndjson"
        with path.open("rb") as src, tail.open("wb") as out:
            src.seek(offset)
            while chunk := src.read(1 << 20):
                out.write(chunk)
        # two copies, run before and after the resumed run: a shared machine's load, or a server's
        # checkpoint after the first run's writes, moves a single figure
        refs = []
        for n in (1, 2):
            dbs[f"reference{n}"] = _copy_db(dbs["killed"], work, cluster, n)
        refs.append(timed([*_ledger(), "import", str(tail), "--db", dbs["reference1"]], _env(None), work))
        res = timed([*_ledger(), "import", str(path), "--db", dbs["killed"]], _env(None), work)
        refs.append(timed([*_ledger(), "import", str(tail), "--db", dbs["reference2"]], _env(None), work))
        ref = {x: round(sum(r[x] for r in refs) / 2, 2) for x in ("seconds", "cpu_seconds", "peak_rss_mb")}
        ref["tail"] = refs[0]["tail"]
        tail.unlink()
        verify = subprocess.run([*_ledger(), "verify", "--json", "--db", dbs["killed"]], capture_output=True,
                                text=True, env=_env(None), cwd=work, check=False)  # fmt: skip
        report = json.loads(verify.stdout) if verify.stdout.strip().startswith("{") else {}
        heads = {name: _head(db) for name, db in dbs.items()}
        if w is not None:
            heads["whole"] = _head(w["db"])
    finally:
        if cluster is not None:
            cluster.stop()
    return {
        "who": "resume",
        "backend": backend,
        "lines": lines,
        "bytes": path.stat().st_size,
        "whole": {x: w[x] for x in ("seconds", "cpu_seconds", "peak_rss_mb", "tail")} if w else None,
        "killed_seconds": k["seconds"],
        "committed_line": done,
        "committed_bytes": offset,
        "reference": ref,
        "references": [{x: r[x] for x in ("seconds", "cpu_seconds", "peak_rss_mb")} for r in refs],
        "resumed": {x: res[x] for x in ("seconds", "cpu_seconds", "peak_rss_mb", "tail")},
        "resumed_over_reference": {
            "wall": round(res["seconds"] / ref["seconds"], 3),
            "cpu": round(res["cpu_seconds"] / ref["cpu_seconds"], 3),
        },
        "verify_ok": verify.returncode == 0,
        "verify": {x: report.get(x) for x in ("ok", "head_seq", "events", "first_bad_seq") if x in report},
        "head_seqs": heads,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": os.getloadavg()[0],
    }


def _committed(db: str) -> tuple[int, int]:
    """The bytes and lines the killed run committed."""
    reader = Progress(db)
    try:
        reader.conn = reader._connect()
        row = reader.conn.execute("SELECT bytes_done, lines_done FROM import_progress").fetchone()
        return int(row[0]), int(row[1])
    finally:
        reader.close()


def _copy_db(db: str, work: Path, cluster: Any, n: int) -> str:
    """A copy of the ledger `db` (and its key files), to import the reference into."""
    if cluster is not None:
        import psycopg

        name = db.rsplit("/", 1)[1]
        url = db.rsplit("/", 1)[0] + "/" + name + f"_ref{n}"
        with psycopg.connect(db.rsplit("/", 1)[0] + "/postgres", autocommit=True) as c:
            for _ in range(100):  # the killed client's server process may linger a moment
                try:
                    c.execute(f'CREATE DATABASE "{name}_ref{n}" TEMPLATE "{name}"')
                    break
                except psycopg.errors.ObjectInUse:
                    time.sleep(0.1)
        return url
    import sqlite3

    target = _new_db("sqlite", work, f"reference{n}", None)
    src, dst = sqlite3.connect(db), sqlite3.connect(target)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    for suffix in (".checkpoint", ".key"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", f"{target}{suffix}")
    return target


def _new_db(backend: str, work: Path, name: str, cluster: Any) -> str:
    if cluster is not None:
        return str(cluster.create_db(name))
    db = work / f"resume-{name}.db"
    for suffix in ("", "-wal", "-shm", ".checkpoint", ".key"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return str(db)


def _head(db: str) -> int:
    reader = Progress(db)
    try:
        if reader.conn is None:
            reader.conn = reader._connect()
        return int(reader.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])
    finally:
        reader.close()


def main() -> None:
    """Parse the arguments, run, record."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--backend", default="sqlite", choices=["sqlite", "postgresql"])
    ap.add_argument("--at", type=float, default=0.5, help="share of lines at the kill")
    ap.add_argument("--no-whole", action="store_true", help="skip the uninterrupted run")
    ap.add_argument("--work", type=Path, default=None, help="where the ledgers go (default: a temporary dir)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="intake-resume-"))
    work.mkdir(parents=True, exist_ok=True)
    r = run(args.file.resolve(), args.backend, args.at, work, not args.no_whole)
    print(json.dumps(r, indent=1), flush=True)
    results = json.loads(OUT.read_text()) if OUT.exists() else []
    same = ("resume", r["backend"], r["lines"])
    results = [x for x in results if (x["who"], x["backend"], x["lines"]) != same]
    OUT.write_text(json.dumps([*results, r], indent=1) + "\n")
    print(f"resumed {r['resumed']} against the reference {r['reference']}: {r['resumed_over_reference']}; "
          f"verify ok {r['verify_ok']}; heads {r['head_seqs']}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

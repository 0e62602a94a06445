"""Intake: `ledger import` of NDJSON files of 25k, 400k (and 4M) lines on SQLite and PostgreSQL, beside
`sqlite-utils insert --nl` of the same file and the eventsourcing peer reading and storing the same lines.

    .venv/bin/python -m bench.intake [--sizes 25000,400000] [--backend sqlite|postgresql|both]
                                     [--before /work/main] [--keep DIR] [--profile]

The lines are the events of bench/synth.py's papers (the shapes of the fixture record), one client
envelope a line, as `ledger import` takes them. Each figure is one process run under `/usr/bin/time -v`,
whose "Maximum resident set size" is the peak RSS of its largest process (wait4 of a small parent, so no
floor from the bench's own memory), beside the peak of all its processes' memory together (an import
runs a walker process beside it: their PSS sum, and their RSS sum, sampled every 50 ms), into an empty
ledger (or table) made for it:

- `ledger import FILE` (this checkout), and the same command of `--before` (a checkout of main, run with
  its code first on the path), both at their defaults (synchronous=FULL; batches of 5,000 now);
- `sqlite-utils insert DB events FILE --nl` (SQLite only): rows of the envelope's fields, no chain,
  no index, one transaction per 100 rows (its default batch), journal_mode as SQLite's default;
- `keyed` (bench/intake_keyed.py, SQLite only): each line under a unique index of its sha256, 10,000 a
  transaction, WAL at synchronous=FULL: the cheapest store that refuses a duplicate, so what one index
  over random keys costs as the file grows;
- the peer (bench/intake_peer.py): eventsourcing's application recorder storing each line's data as a
  StoredEvent of its stream, 10,000 a call, WAL at synchronous=FULL (PostgreSQL: synchronous_commit on).

Results go to bench/intake.json (one object per figure) and a table on stdout. `--profile` runs
py-spy on this checkout's import of the largest file and keeps the flame graph's top frames.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "intake.json"
VENV = Path(sys.executable).parent
# the figures that have no PostgreSQL side
SQLITE_ONLY = ("sqlite-utils", "keyed")


def make_file(path: Path, lines: int) -> int:
    """`lines` NDJSON envelopes of synthetic papers; the file's size."""
    from bench.synth import Synth
    from ledger.model.codec import event_to_dict

    encode = msgspec.json.encode
    n = 0
    with path.open("wb") as f:
        for _, events in Synth().events():
            for e in events:
                f.write(encode(event_to_dict(e)) + b"\n")
                n += 1
                if n == lines:
                    return path.stat().st_size
    raise AssertionError("unreachable")


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run `cmd` under /usr/bin/time -v: wall seconds, peak RSS (MB) of its largest process, exit code,
    its last output; and the peak memory of all its processes together, sampled (`TreeMemory`)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-v", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=cwd,
    )  # fmt: skip
    tree = TreeMemory(proc.pid)
    tree.start()
    stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - started
    tree.join()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", stderr))
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mb": round(int(rss.group(1)) / 1024, 1) if rss else None,
        "tree_peak_pss_mb": round(tree.peak_pss_kb / 1024, 1),
        "tree_peak_rss_mb": round(tree.peak_rss_kb / 1024, 1),
        "processes": tree.most,
        "exit": proc.returncode,
        "tail": (stdout.strip().splitlines() or [""])[-1][:300] if proc.returncode == 0 else stderr[-600:],
    }


class TreeMemory(threading.Thread):
    """Every `every` seconds, the memory of a process's descendants together (not the process itself:
    /usr/bin/time): the peak of their PSS sum (each shared page counted once, split among the processes
    that map it: the memory they take together) and of their RSS sum (shared pages counted in each).
    /usr/bin/time's figure is the largest single process's peak; an import that runs a walker process
    beside it is two processes."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.every = every
        self.peak_pss_kb = self.peak_rss_kb = self.most = 0

    def run(self) -> None:
        """Sample until the process ends."""
        while Path(f"/proc/{self.pid}").exists() and _state(self.pid) != "Z":
            pids = _descendants(self.pid)
            rss = pss = 0
            for pid in pids:
                r, p = _rollup(pid)
                rss, pss = rss + r, pss + p
            self.peak_rss_kb, self.peak_pss_kb = max(self.peak_rss_kb, rss), max(self.peak_pss_kb, pss)
            self.most = max(self.most, len(pids))
            time.sleep(self.every)


def _state(pid: int) -> str:
    fields = _stat(pid)
    return "X" if fields is None else fields[0]


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, from each one's /proc children list."""
    out: list[int] = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return out
    for c in map(int, children):
        out += [c, *_descendants(c)]
    return out


def _rollup(pid: int) -> tuple[int, int]:
    """A process's (RSS, PSS) in kB, from /proc/PID/smaps_rollup ((0, 0) once it is gone)."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def proc_stats() -> dict[int, tuple[int, int, int, int, int]]:
    """Every process: (ppid, utime, stime, cutime, cstime) in clock ticks, from /proc/PID/stat."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        rest = _stat(int(entry))
        if rest is not None:
            out[int(entry)] = (int(rest[1]), int(rest[11]), int(rest[12]), int(rest[13]), int(rest[14]))
    return out


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: state (field 3), ppid (4), ... utime (14) to
    cstime (17); None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def server_cpu(data_dir: str) -> float:
    """CPU seconds the PostgreSQL server of `data_dir` has used: the postmaster's own and its ended
    backends' (reaped into its children's times), plus every live backend's."""
    postmaster = int(Path(data_dir, "postmaster.pid").read_text().split()[0])
    ticks = 0
    for pid, (ppid, utime, stime, cutime, cstime) in proc_stats().items():
        if pid == postmaster:
            ticks += utime + stime + cutime + cstime
        elif ppid == postmaster:
            ticks += utime + stime
    return ticks / os.sysconf("SC_CLK_TCK")


def _env(before: Path | None) -> dict[str, str]:
    # the code measured first on the path: main's packages ahead of this checkout's editable install
    return {**os.environ, "PYTHONPATH": str(before or ROOT)}


def _ledger() -> list[str]:
    return [sys.executable, "-c", "import sys; from entry.main import main; sys.argv[0] = 'ledger'; main()"]


def run(
    sizes: list[int],
    backends: list[str],
    before: Path | None,
    work: Path,
    profile: bool,
    whos: tuple[str, ...] = ("after", "before", "sqlite-utils", "keyed", "peer"),
) -> None:
    """Every figure for every size and backend."""
    results: list[dict[str, Any]] = json.loads(OUT.read_text()) if OUT.exists() else []
    cluster = None
    if "postgresql" in backends:
        from tests.pg_harness import PgCluster

        cluster = PgCluster.start(fsync=True)
    try:
        for lines in sizes:
            path = work / f"intake-{lines}.ndjson"
            if not path.exists():
                make_file(path, lines)
            size = path.stat().st_size
            print(f"{lines:,} lines, {size / 1e6:.0f} MB: {path}", flush=True)
            for backend in backends:
                for who in whos:
                    if who == "before" and before is None or who in SQLITE_ONLY and backend != "sqlite":
                        continue
                    db = _db(backend, work, who, cluster)
                    cmd = _command(who, path, db)
                    data_dir = cluster.data_dir if cluster is not None and backend == "postgresql" else None
                    server = server_cpu(data_dir) if data_dir is not None else 0.0
                    r = timed(cmd, _env(before if who == "before" else None), work)
                    if data_dir is not None:
                        # the server does the rows' work that SQLite does inside the importing process
                        r["server_cpu_seconds"] = round(server_cpu(data_dir) - server, 2)
                    r |= {"who": who, "backend": backend, "lines": lines, "bytes": size,
                          "lines_per_s": round(lines / r["seconds"]) if r["exit"] == 0 else None,
                          "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "load": os.getloadavg()[0]}  # fmt: skip
                    results = [
                        x for x in results if (x["who"], x["backend"], x["lines"]) != (who, backend, lines)
                    ]
                    results.append(r)
                    OUT.write_text(json.dumps(results, indent=1) + "\n")
                    _say(r)
                    _drop(backend, db, cluster)
            if profile and lines == max(sizes):
                _profile(path, work)
    finally:
        if cluster is not None:
            cluster.stop()


def _say(r: dict[str, Any]) -> None:
    server = f"(server cpu {r['server_cpu_seconds']:.1f} s)  " if "server_cpu_seconds" in r else ""
    print(
        f"  {r['backend']:<10} {r['who']:<12} {r['seconds']:8.1f} s (cpu {r['cpu_seconds']:6.1f} s)  {server}"
        f"{r['lines_per_s'] or 0:>8,} lines/s  "
        f"peak RSS {r['peak_rss_mb']:>7} MB (all {r.get('processes', 1)} together: PSS "
        f"{r.get('tree_peak_pss_mb')}, RSS {r.get('tree_peak_rss_mb')} MB)  "
        f"exit {r['exit']}  {r['tail'][:120]}",
        flush=True,
    )


def _db(backend: str, work: Path, who: str, cluster: Any) -> str:
    if backend == "postgresql":
        return str(cluster.create_db("intake"))
    db = work / f"{who}.db"
    for suffix in ("", "-wal", "-shm", ".checkpoint", ".key"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return str(db)


def _drop(backend: str, db: str, cluster: Any) -> None:
    if backend == "postgresql":
        cluster.drop_db(db)


def _command(who: str, path: Path, db: str) -> list[str]:
    if who in ("after", "before"):
        return [*_ledger(), "import", str(path), "--db", db]
    if who == "sqlite-utils":
        return [str(VENV / "sqlite-utils"), "insert", db, "events", str(path), "--nl"]
    if who == "keyed":
        return [sys.executable, "-m", "bench.intake_keyed", str(path), db]
    return [sys.executable, "-m", "bench.intake_peer", str(path), db]


def _profile(path: Path, work: Path) -> None:
    """py-spy over this checkout's import of `path` (SQLite): the frames that take its time."""
    db = _db("sqlite", work, "profile", None)
    out = ROOT / "bench" / "profiles" / "intake-import.txt"
    spy = VENV / "py-spy"
    subprocess.run(
        [str(spy), "record", "--format", "raw", "-o", str(out), "--rate", "50", "--",
         *_ledger(), "import", str(path), "--db", db],
        capture_output=True, check=False, cwd=work, env=_env(None),
    )  # fmt: skip
    print(f"  profile: {out}", flush=True)


def main() -> None:
    """Parse the arguments, run, keep or remove the work directory."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="25000,400000")
    ap.add_argument("--backend", default="both", choices=["sqlite", "postgresql", "both"])
    ap.add_argument("--before", type=Path, default=None, help="a checkout of main, measured beside this one")
    ap.add_argument("--keep", type=Path, default=None, help="write the files and ledgers here and keep them")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--only", default="after,before,sqlite-utils,keyed,peer", help="the figures to run")
    args = ap.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    work = args.keep or Path(tempfile.mkdtemp(prefix="intake-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        run(sizes, backends, args.before, work, args.profile, tuple(args.only.split(",")))
    finally:
        if args.keep is None:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()

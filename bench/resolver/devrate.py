"""`ledger resolve --all` of the development set (shared/fixtures/resolver-dev), end to end, for the
working tree and a baseline commit in one run, on SQLite and on PostgreSQL.

    python -m bench.resolver.devrate --dev ../shared/fixtures/resolver-dev [--baseline 4bbdadf]
        [--backend sqlite --backend postgresql] [--rounds 3] [--out bench/resolver]

One reference ledger is built once, by the working tree: the set's catalogue through `ledger ingest
works`, and each query as a citation.observed carrying its reference object, or its string as one
(`resolve_throughput.citations`: a citing paper per 50). Each code (the working tree; the baseline,
checked out into a temporary git worktree) copies it with its own `ledger migrate` into a ledger of
each backend and brings the catalogue up to the head with a first, untimed resolve. Then each round
times `ledger resolve --all --dry-run` as a subprocess on each ledger, the codes taking turns first.

The rate is references / wall seconds of the whole command (start, selection, deciding on the pool's
workers, comparing). CPU is user+sys of the command and every process it waited for (its workers),
and on PostgreSQL the server's: what its postmaster's children (the command's backends) used, read
once they have ended. The machine may be shared: the load average is kept beside each run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEV = REPO.parent / "shared" / "fixtures" / "resolver-dev"
BASELINE = "4bbdadf"
AT = "2026-09-01T00:00:00Z"
# runs the code of the directory it is started in (the interpreter's own install is shadowed by it)
_CLI = "import sys; from entry.main import main; sys.argv[0] = 'ledger'; main()"


def dev_rows(queries: Path) -> list[dict[str, Any]]:
    """Each query as a reference row `citations` takes: its reference object, or its string as one."""
    rows = []
    with queries.open() as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                ref = q["reference"] if "reference" in q else {"unstructured": q["unstructured"]}
                rows.append({"id": q["id"], "reference": ref})
    return rows


def build(db: str, dev: Path) -> int:
    """The reference ledger: the catalogue, then every query as a citation; returns how many."""
    from bench.resolver.resolve_throughput import citations
    from service.ledger import Ledger

    cli(REPO, ["ingest", "works", str(dev / "catalogue.json"), "--observed-at", AT, "--db", db])
    rows = dev_rows(dev / "queries.jsonl")
    events = citations(rows)
    ledger = Ledger(db)
    for i in range(0, len(events), 1000):
        ledger.append(events[i : i + 1000])
    ledger.close()
    return len(rows)


def cli(code: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`ledger ARGS` run by the code in `code` (a checkout of this repository)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    run = subprocess.run(
        [sys.executable, "-c", _CLI, *args], cwd=code, env=env, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise SystemExit(f"ledger {' '.join(args)} in {code} failed:\n{run.stdout}\n{run.stderr}")
    return run


def imported_from(code: Path) -> Path:
    """Where the code started in `code` imports the ledger's packages from (checked: the baseline's)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    out = subprocess.run(
        [sys.executable, "-c", "import service.resolver.match as m; print(m.__file__)"],
        cwd=code, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


@contextmanager
def checkout(commit: str, where: Path) -> Iterator[Path | None]:
    """`commit` checked out into a temporary git worktree, removed afterwards."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), commit],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                       capture_output=True)  # fmt: skip


class Server:
    """A throwaway PostgreSQL server (tests/pg_harness.py) whose processes' CPU can be read."""

    def __init__(self) -> None:
        from tests.pg_harness import PgCluster

        self.cluster = PgCluster.start(fsync=True)
        self.pid = None
        if self.cluster.data_dir is not None:
            self.pid = int((Path(self.cluster.data_dir) / "postmaster.pid").read_text().split()[0])

    def cpu_s(self) -> float | None:
        """User+sys seconds of the server's processes that have ended (its postmaster's children), and
        of the postmaster itself."""
        if self.pid is None:
            return None
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime, stime, cutime, cstime: fields 14-17 of stat, counted from the state (field 3)
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def quiet(self, url: str) -> None:
        """Wait until no backend serves the database at `url` (the command's have ended and were reaped)."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.cluster.admin_url, autocommit=True) as conn:
            for _ in range(100):
                sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                n = conn.execute(sql, (name,)).fetchone()
                if n is not None and n[0] == 0:
                    break
                time.sleep(0.05)
        time.sleep(0.2)  # the postmaster reaps an ended backend when told of it

    def stop(self) -> None:
        self.cluster.stop()


def load() -> float:
    """The one-minute load average."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def timed(code: Path, db: str, server: Server | None) -> dict[str, Any]:
    """One `ledger resolve --all --dry-run`: references, wall seconds, CPU seconds, load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = server.cpu_s() if server else None
    load_before = load()
    t = time.perf_counter()
    run = cli(code, ["resolve", "--all", "--dry-run", "--db", db])
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    first = run.stdout.splitlines()[0]
    refs = int(first.split()[1].rstrip(","))
    out: dict[str, Any] = {
        "references": refs,
        "wall_s": round(wall, 2),
        "references_per_s": round(refs / wall, 1),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "load": [load_before, load()],
        "summary": first,
    }
    if server is not None:
        server.quiet(db)
        end = server.cpu_s()
        if server_before is not None and end is not None:
            out["server_cpu_s"] = round(end - server_before, 2)
    return out


def median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def summarise(runs: dict[str, dict[str, list[dict[str, Any]]]], codes: list[str]) -> dict[str, Any]:
    """Median rates, the working tree over the baseline per backend (round by round), and PostgreSQL
    over SQLite per code (round by round)."""
    out: dict[str, Any] = {"rates": {}, "tree_over_baseline": {}, "postgresql_over_sqlite": {}}
    for code in codes:
        for backend, rs in runs[code].items():
            out["rates"].setdefault(code, {})[backend] = {
                "references_per_s": median([r["references_per_s"] for r in rs]),
                "cpu_s": median([r["cpu_s"] for r in rs]),
                **(
                    {"server_cpu_s": median([r["server_cpu_s"] for r in rs])}
                    if "server_cpu_s" in rs[0]
                    else {}
                ),
            }
    if len(codes) == 2:
        tree, base = codes
        for backend in runs[tree]:
            pairs = zip(runs[tree][backend], runs[base][backend], strict=True)
            out["tree_over_baseline"][backend] = median(
                [a["references_per_s"] / b["references_per_s"] for a, b in pairs]
            )
    for code in codes:
        if {"sqlite", "postgresql"} <= runs[code].keys():
            pairs = zip(runs[code]["postgresql"], runs[code]["sqlite"], strict=True)
            out["postgresql_over_sqlite"][code] = median(
                [p["references_per_s"] / s["references_per_s"] for p, s in pairs]
            )
    return out


def markdown(results: dict[str, Any]) -> str:
    """The runs and their medians as tables."""
    s = results["summary"]
    lines = [
        "# `ledger resolve --all` of the development set: the working tree against a baseline",
        "",
        f"{results['references']} references (the development split's queries, a citing paper per 50) "
        f"against {results['works']} works; `ledger resolve --all --dry-run`, {results['workers']} workers; "
        f"baseline `{results['baseline']}`, working tree at `{results['tree_commit']}`"
        f"{' (with uncommitted changes)' if results['tree_dirty'] else ''}; measured {results['started']} to "
        f"{results['ended']}. Development figures.",
        "",
        "| code | backend | references/s (median) | CPU s, command and workers | CPU s, server |",
        "|---|---|---|---|---|",
    ]
    for code, by in s["rates"].items():
        for backend, r in by.items():
            server = r.get("server_cpu_s", "")
            lines.append(f"| {code} | {backend} | {r['references_per_s']:,.0f} | {r['cpu_s']} | {server} |")
    lines += ["", "| ratio (median of the rounds' ratios) | value |", "|---|---|"]
    for backend, v in s["tree_over_baseline"].items():
        lines.append(f"| working tree / baseline, {backend} | {v} |")
    for code, v in s["postgresql_over_sqlite"].items():
        lines.append(f"| PostgreSQL / SQLite, {code} | {v} |")
    lines += [
        "",
        "| round | code | backend | references/s | wall s | CPU s | server CPU s | load before, after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, rnd in enumerate(results["rounds"], 1):
        for r in rnd:
            lines.append(
                f"| {n} | {r['code']} | {r['backend']} | {r['references_per_s']:,.0f} | {r['wall_s']} "
                f"| {r['cpu_s']} | {r.get('server_cpu_s', '')} | {r['load'][0]}, {r['load'][1]} |"
            )
    lines += ["", "What each run answered (its first line):", ""]
    seen = {(r["code"], r["summary"]) for rnd in results["rounds"] for r in rnd}
    lines += [f"- {code}: `{summary}`" for code, summary in sorted(seen)]
    return "\n".join(lines) + "\n"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=DEV, help="the development set's folder")
    ap.add_argument("--baseline", default=BASELINE, help="the commit to compare with ('' for none)")
    ap.add_argument("--backend", action="append", choices=["sqlite", "postgresql"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).parent, help="devrate.json and devrate.md here"
    )
    a = ap.parse_args(argv)
    backends = a.backend or ["sqlite", "postgresql"]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    # the tree as the run starts, its own results files aside (the last run's, rewritten at the end)
    changed = _git("status", "--porcelain", "--untracked-files=no").splitlines()
    dirty = any(not line.endswith(("devrate.json", "devrate.md")) for line in changed)
    with tempfile.TemporaryDirectory(prefix="devrate-") as tmp_:
        tmp = Path(tmp_)
        ref = str(tmp / "reference.db")
        n = build(ref, a.dev)
        print(f"built: {n} references", file=sys.stderr)
        server = Server() if "postgresql" in backends else None
        try:
            with checkout(a.baseline, tmp / "baseline") if a.baseline else _none() as base:
                codes: dict[str, Path] = {"working tree": REPO}
                if base is not None:
                    codes["baseline"] = base
                for name, code in codes.items():
                    got = imported_from(code)
                    if not got.is_relative_to(code):
                        raise SystemExit(f"{name}: the code run from {code} imports {got}")
                dbs: dict[tuple[str, str], str] = {}
                for name, code in codes.items():
                    for backend in backends:
                        if backend == "sqlite":
                            db = str(tmp / f"{name.replace(' ', '-')}.db")
                        else:
                            assert server is not None
                            db = server.cluster.create_db("devrate")
                        cli(code, ["migrate", "--from", ref, "--to", db])
                        cli(code, ["resolve", "--all", "--dry-run", "--db", db])  # the catalogue brought up
                        dbs[name, backend] = db
                runs: dict[str, dict[str, list[dict[str, Any]]]] = {
                    c: {b: [] for b in backends} for c in codes
                }
                rounds = []
                for r in range(a.rounds):
                    order = list(codes) if r % 2 == 0 else list(reversed(codes))
                    done = []
                    for backend in backends:
                        for name in order:
                            run = timed(
                                codes[name], dbs[name, backend], server if backend == "postgresql" else None
                            )
                            runs[name][backend].append(run)
                            done.append({"code": name, "backend": backend, **run})
                            print(
                                f"round {r + 1} {name} {backend}: {run['references_per_s']} refs/s",
                                file=sys.stderr,
                            )
                    rounds.append(done)
        finally:
            if server is not None:
                server.stop()
    from service.resolver.pool import WORKERS

    results = {
        "references": n,
        "works": sum(1 for _ in json.loads((a.dev / "catalogue.json").read_text())["message"]["items"]),
        "workers": WORKERS,
        "baseline": a.baseline,
        "tree_commit": _git("rev-parse", "--short", "HEAD"),
        "tree_dirty": dirty,
        "started": started,
        "ended": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rounds": rounds,
        "summary": summarise(runs, list(codes)),
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "devrate.json").write_text(json.dumps(results, indent=1) + "\n")
    (a.out / "devrate.md").write_text(markdown(results))
    print(markdown(results))


@contextmanager
def _none() -> Iterator[Path | None]:
    yield None


if __name__ == "__main__":
    main()

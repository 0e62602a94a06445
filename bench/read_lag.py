"""Record reads with the projector at its largest allowed lag, against another checkout, in one run.

    .venv/bin/python -m bench.read_lag [--events 1000000] [--before 1ccaba9] [--lag N] [--sample 200]
                                       [--rounds 5] [--cache /tmp/read-lag] [--check 1200]

One synthetic SQLite ledger of `--events` events (bench/synth.py's papers, built once per layout and kept
in `--cache`), every projection at the head. Then exactly `--lag` more events (default
LEDGER_PROJECTOR_MAX_LAG: the most an appender lets the projector fall behind) are appended as the next
papers' imports with the projector held where it was, into a copy: the lagging ledger. A copy of that,
projected to the head, is the caught-up ledger: the same events. The sample is `--sample` papers the
lagging events cite (their resolutions name them, so each read folds something in).

The reads: `Ledger.record_bytes` of each sampled paper, warm, in four long-lived processes (this
checkout and `--before`'s code, on the caught-up and the lagging ledger), one pass of the sample in
each in turn, `--rounds` times, so the machine's load falls on all four alike. The older checkout is
`git archive` of the ref, run with its code first on PYTHONPATH; it reads the same files when its
layout matches this checkout's (the same tables and indexes), else ledgers its own code built from the
same events with the same recording clock. Printed: p50 and p95 of each, the ratios, and the SQL
statements a record runs on the lagging ledger (the budget is 6).

`--check N`: also the records of N random papers of the ledger and the two real records (the shared
fixture and 2506.06472, built as tests/service/resolver/test_resolver_fixture.py builds them), at every
as_of the tests use (with a K before the lag), rendered by both checkouts on both ledgers and compared by
their sha256: every one must be the same bytes. Results go to bench/read_lag.json. No time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.read_lag_worker import BUILD_START_US

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "bench" / "read_lag_worker.py"
OUT = ROOT / "bench" / "read_lag.json"
MEASURE_AS_OF = "2025-01-01T00:00:00Z"  # after every synthetic event (bench/run.py's)
# every as_of the tests read a record at (literal instants and days in tests/), then instants inside
# the synthetic ledgers' history (2024) where inbound spans open and close
TEST_AS_OF = [
    "2026-01-01T09:00:00Z", "2026-02-05", "2026-03-01", "2026-06-01", "2026-08-01", "2026-08-06",
    "2026-08-07T16:39:03.985890Z", "2026-08-07T17:00:00Z", "2026-08-08", "2026-08-08T08:47:00Z",
    "2026-08-08T23:00:00Z", "2026-08-09", "2026-11-02", "2027-01-15T08:00:00Z", "2999-01-01",
]  # fmt: skip
SYNTH_AS_OF = ["2024-01-15T00:00:00Z", "2024-02-20T12:00:00Z", "2024-04-01T00:00:00Z", MEASURE_AS_OF]


def python() -> str:
    """This checkout's interpreter (its venv's, if there is one)."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def worker(code: Path, *args: str) -> dict[str, Any]:
    """One command of read_lag_worker.py under `code`'s packages; its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    got = subprocess.run([python(), str(WORKER), *args], env=env, capture_output=True, text=True, cwd=code)
    if got.returncode != 0:
        raise SystemExit(f"worker {args[0]} under {code} failed:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def checkout(ref: str, cache: Path) -> Path:
    """The tree of `ref` (git archive), extracted once under the cache."""
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True, check=True)
    dest = cache / f"src-{sha.stdout.strip()[:12]}"
    if not (dest / "service" / "ledger.py").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def fingerprint(code: Path, cache: Path) -> str:
    """The layout `code` writes."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        return str(worker(code, "schema", str(Path(tmp) / "s.db"))["fingerprint"])


def _copy(src: Path, dst: Path) -> None:
    tmp = dst.with_suffix(".part")
    shutil.copyfile(src, tmp)
    tmp.rename(dst)


class Ledgers:
    """The caught-up and the lagging ledger of one layout, built once by a checkout that writes it."""

    def __init__(self, code: Path, cache: Path, events: int, lag: int) -> None:
        self.fp = fingerprint(code, cache)
        stem = cache / f"{self.fp}-{events}"
        self.base, self.lagging, self.caught = (
            Path(f"{stem}.db"),
            Path(f"{stem}-lag{lag}.db"),
            Path(f"{stem}-lag{lag}-head.db"),
        )
        meta = Path(f"{stem}-lag{lag}.json")
        if not self.base.exists():
            print(f"building {events:,} events with {code} (layout {self.fp}) ...", flush=True)
            built = worker(code, "build", str(self.base.with_suffix(".part")), str(events))
            self.base.with_suffix(".part").rename(self.base)
            Path(f"{stem}.json").write_text(json.dumps(built))
        built = json.loads(Path(f"{stem}.json").read_text())
        if not meta.exists():
            part = self.lagging.with_suffix(".part")
            shutil.copyfile(self.base, part)
            lagged = worker(
                code, "lag", str(part), str(built["next_paper"]), str(lag), str(built["clock_us"])
            )
            part.rename(self.lagging)
            meta.write_text(json.dumps(lagged))
        self.built = built
        self.lagged = json.loads(meta.read_text())
        if not self.caught.exists():
            part = self.caught.with_suffix(".part")
            shutil.copyfile(self.lagging, part)
            worker(code, "project", str(part))
            part.rename(self.caught)


class Reader:
    """A long-lived read_lag_worker.py `serve` process: one ledger, one checkout."""

    def __init__(self, name: str, code: Path, db: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.proc = subprocess.Popen([python(), str(WORKER), "serve", str(db)], env=env, cwd=code, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert self.proc.stdout is not None
        self.ready = json.loads(self.proc.stdout.readline())
        self.seconds: list[float] = []
        self.cpu: list[float] = []

    def ask(self, papers: list[str], as_of: str, statements: bool = False) -> dict[str, Any]:
        """One pass of the sample; its answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"papers": papers, "as_of": as_of, "statements": statements}) + "\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        """End the process (its stdin closed: it closes its ledger and exits)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def quantile_ms(values: list[float], q: float) -> float:
    """The q-quantile of these seconds, in milliseconds."""
    s = sorted(values)
    return round(s[min(len(s) - 1, int(len(s) * q))] * 1e3, 3)


def measure(
    readers: list[Reader], papers: list[str], rounds: int, slow: Reader | None = None, chunk: int = 10
) -> dict[str, Any]:
    """Every reader warmed by one pass, then `rounds` passes each, interleaved `chunk` papers at a time
    (each chunk read by every reader in turn, the order turning each time), so a change in the
    machine's load falls on all alike; `slow` takes part in the first pass only (its reads take tens of
    times the others'). p50 and p95 of each, and the statements a record runs."""
    for r in readers:
        r.ask(papers[:chunk], MEASURE_AS_OF)
    turn = 0
    for n in range(rounds):
        for at in range(0, len(papers), chunk):
            part = papers[at : at + chunk]
            turn += 1
            now = [r for r in readers if n == 0 or r is not slow]
            for r in now[turn % len(now) :] + now[: turn % len(now)]:
                got = r.ask(part, MEASURE_AS_OF)
                r.seconds += got["seconds"]
                r.cpu += got["cpu_seconds"]
    out: dict[str, Any] = {}
    for r in readers:
        st = r.ask(papers[: 2 * chunk], MEASURE_AS_OF, statements=True)["statements"]
        out[r.name] = {"p50_ms": quantile_ms(r.seconds, 0.5), "p95_ms": quantile_ms(r.seconds, 0.95),
                       "mean_ms": round(statistics.fmean(r.seconds) * 1e3, 3), "reads": len(r.seconds),
                       "cpu_p50_ms": quantile_ms(r.cpu, 0.5), "cpu_p95_ms": quantile_ms(r.cpu, 0.95),
                       "statements_max": max(st), "statements_p50": sorted(st)[len(st) // 2],
                       "positions": r.ready["positions"], "head": r.ready["head"]}  # fmt: skip
    return out


# -- byte for byte against another checkout (--check N) ----------------------------------------------

BEFORE_LAGGING = 50  # the random papers the other checkout also reads from its lagging ledger


def _rendered(code: Path, db: Path, spec: dict[str, Any], out: Path) -> dict[str, tuple[int, str]]:
    """(paper, as_of, known_at) -> (length, sha256) of each record `code` reads from `db`."""
    spec_file = out.with_suffix(".spec.json")
    spec_file.write_text(json.dumps(spec))
    worker(code, "render", str(db), str(spec_file), str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {f"{r['paper']} {r['as_of']} {r['known_at']}": (r["len"], r["sha256"]) for r in rows}


def _compare(name: str, got: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    differ = sorted(k for k in want if got.get(k) != want[k])
    print(f"  {name}: {len(want):,} records, {len(differ)} differ", flush=True)
    return {"records": len(want), "differ": len(differ), "first_differing": differ[:10]}


def check(
    mine_code: Path,
    before: Path,
    mine: Ledgers,
    theirs: Ledgers,
    n: int,
    cache: Path,
    before_lagging: int = BEFORE_LAGGING,
) -> dict[str, Any]:
    """Render and compare; a summary of each comparison."""
    work = cache / "check"
    work.mkdir(exist_ok=True)
    out: dict[str, Any] = {}
    papers_total = int(mine.lagged["papers"]) + int(mine.built["next_paper"])
    from bench.synth import arxiv_id

    rng = random.Random(1200)
    picked = sorted(rng.sample(range(papers_total), min(n, papers_total)))
    papers = [arxiv_id(i) for i in picked]
    spec: dict[str, Any] = {"papers": papers, "as_of": [*TEST_AS_OF, *SYNTH_AS_OF], "known_at": [None]}
    print(f"check: {len(papers):,} synthetic papers x {len(spec['as_of'])} instants", flush=True)
    want = _rendered(before, theirs.caught, spec, work / "before-caught.ndjson")
    out["synthetic, this lagging"] = _compare(
        "this checkout, lagging", _rendered(mine_code, mine.lagging, spec, work / "mine-lag.ndjson"), want
    )
    out["synthetic, this caught up"] = _compare(
        "this checkout, caught up", _rendered(mine_code, mine.caught, spec, work / "mine-caught.ndjson"), want
    )
    first = papers[:before_lagging]
    few = {**spec, "papers": first}
    few_want = {k: v for k, v in want.items() if k.split()[0] in set(first)}
    out["synthetic, before lagging"] = _compare(
        f"before, lagging ({len(first)} papers)",
        _rendered(before, theirs.lagging, few, work / "before-lag.ndjson"),
        few_want,
    )
    out["real"] = _real(mine_code, before, work)
    return out


def _real(mine_code: Path, before: Path, work: Path) -> dict[str, Any]:
    """The real records' ledger built by each checkout; every paper of it, as built and projected."""
    rendered: dict[str, dict[str, Any]] = {}
    for name, code in (("this", mine_code), ("before", before)):
        built = work / f"real-{name}.db"
        for stale in work.glob(f"real-{name}*"):
            stale.unlink()
        worker(code, "real", str(built))
        projected = work / f"real-{name}-projected.db"
        shutil.copyfile(built, projected)
        worker(code, "project", str(projected))
        spec = {"papers": "all", "as_of": TEST_AS_OF, "known_at": [None, _before_resolving()]}
        rendered[f"{name}, as built"] = _rendered(code, built, spec, work / f"real-{name}.ndjson")
        rendered[f"{name}, projected"] = _rendered(code, projected, spec, work / f"real-{name}-p.ndjson")
    want = rendered["before, projected"]
    return {name: _compare(f"real records, {name}", got, want) for name, got in rendered.items()}


def _before_resolving() -> str:
    """An instant after the real records' import and before their resolution (as a known_at)."""
    from ledger.model.instants import format_recorded

    return format_recorded(BUILD_START_US + 1_500)


def main() -> None:
    """Parse the arguments, build (or reuse) the ledgers, measure, print and save."""
    from service.ops.projector import max_lag

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--before", default="1ccaba9", help="the git ref to compare with")
    ap.add_argument("--lag", type=int, default=None, help="default: LEDGER_PROJECTOR_MAX_LAG's value")
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "read-lag")
    ap.add_argument("--check", type=int, default=0, help="random records to compare byte for byte")
    ap.add_argument(
        "--check-before-lagging",
        type=int,
        default=50,
        help="of those, how many the other checkout reads from its lagging ledger too",
    )
    ap.add_argument("--no-measure", action="store_true")
    args = ap.parse_args()
    lag = args.lag or max_lag()
    args.cache.mkdir(parents=True, exist_ok=True)
    before = checkout(args.before, args.cache)
    started = time.time()
    mine = Ledgers(ROOT, args.cache, args.events, lag)
    theirs = Ledgers(before, args.cache, args.events, lag)
    same_files = mine.fp == theirs.fp
    print(f"ledger: {mine.built['head']:,} events + {mine.lagged['appended']:,} lagging "
          f"(projections at {mine.lagged['positions']}); before's layout "
          f"{'the same: same files' if same_files else 'differs: its own files, same events'}",
          flush=True)  # fmt: skip
    result: dict[str, Any] = {"events": args.events, "lag": lag, "before": args.before,
                              "same_files": same_files, "built": mine.built, "lagged": {
                                  k: v for k, v in mine.lagged.items() if k != "cited"}}  # fmt: skip
    if not args.no_measure:
        cited = mine.lagged["cited"]  # the papers the lagging events resolve to: each read folds some in
        papers = sorted(random.Random(44).sample(cited, min(args.sample, len(cited))))
        readers = [
            Reader("this, caught up", ROOT, mine.caught),
            Reader("this, lagging", ROOT, mine.lagging),
            Reader("before, caught up", before, theirs.caught),
            Reader("before, lagging", before, theirs.lagging),
        ]
        try:
            figures = measure(readers, papers, args.rounds, slow=readers[3])
        finally:
            for r in readers:
                r.close()
        result["sample"] = len(papers)
        result["reads"] = figures
        result["ratios"] = {}
        for kind in ("p50_ms", "cpu_p50_ms"):
            p50 = {k: v[kind] for k, v in figures.items()}
            result["ratios"][kind] = {
                "this lagging / before caught up": round(p50["this, lagging"] / p50["before, caught up"], 3),
                "this lagging / before lagging": round(p50["this, lagging"] / p50["before, lagging"], 3),
                "this caught up / before caught up": round(
                    p50["this, caught up"] / p50["before, caught up"], 3
                ),
            }
        for name, f in figures.items():
            print(f"  {name:20s} p50 {f['p50_ms']:8.3f} ms  p95 {f['p95_ms']:8.3f} ms  "
                  f"CPU p50 {f['cpu_p50_ms']:8.3f} ms  statements {f['statements_p50']} "
                  f"(max {f['statements_max']})", flush=True)  # fmt: skip
        for name, v in result["ratios"]["p50_ms"].items():
            print(f"  {name:36s} {v:.3f} (p50), {result['ratios']['cpu_p50_ms'][name]:.3f} (CPU p50)",
                  flush=True)  # fmt: skip
    if args.check:
        result["check"] = check(ROOT, before, mine, theirs, args.check, args.cache, args.check_before_lagging)
    result["seconds"] = round(time.time() - started, 1)
    result["load_average"] = os.getloadavg()
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

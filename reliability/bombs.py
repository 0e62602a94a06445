"""Decompression bombs and odd inputs against every place that reads a compressed file, full size.

`python -m reliability.bombs [--only NAME...] [--timeout S]` builds each bomb in a temporary folder,
runs `ledger import`, `ledger ingest` and `ledger serve` (POST /ingest/...) on it as their own
processes, and prints one JSON line per case: the exit or HTTP status, the first line of the refusal,
seconds, CPU seconds and the peak resident memory (ru_maxrss of the CLI; VmHWM of the server's
processes). A case past `--timeout` is killed and said so. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import zstandard

from reliability.server import ROOT, ledger_cmd, serving

GIB = 1 << 30
MIB = 1 << 20
TOKEN = "bomb-token"


def _zstd_of(path: Path, piece: bytes, total: int) -> Path:
    """`total` bytes of `piece` repeated, zstandard-compressed as a stream (all-equal bytes become RLE
    blocks: about 4 bytes a 128 KiB block)."""
    block = piece * (MIB // len(piece))
    with path.open("wb") as f, zstandard.ZstdCompressor(level=1).stream_writer(f) as w:
        for _ in range(total // len(block)):
            w.write(block)
    return path


def _gzip_of(path: Path, piece: bytes, total: int) -> Path:
    block = piece * (MIB // len(piece))
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as w:
        for _ in range(total // len(block)):
            w.write(block)
    return path


def _cli(args: list[str], timeout: float, stdin: Any = None) -> dict[str, Any]:
    """Run the `ledger` CLI; its status, the first line of stderr, seconds, CPU and peak memory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    proc = subprocess.Popen(
        [*ledger_cmd(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=stdin,
        env=env,
        start_new_session=True,
    )
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    out = proc.stdout.read() if proc.stdout else b""  # type: ignore[union-attr]
    err = proc.stderr.read() if proc.stderr else b""  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = (err or out).decode(errors="replace").strip().splitlines()
    return {
        "exit": "killed at timeout" if killed.is_set() else proc.returncode,
        "said": lines[-1][:300] if lines else "",
        "seconds": round(time.monotonic() - began, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # of the process itself (not its walker)
    }


def _group_usage(pgid: int) -> tuple[float, float]:
    """CPU seconds and the largest peak RSS (MB) of the processes of a process group, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, peak = 0.0, 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) != pgid:
                continue
            cpu += (int(stat[11]) + int(stat[12])) / tick
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, IndexError, ValueError):
            continue
    return cpu, peak


def _post(base: str, pgid: int, route: str, body: Path, timeout: float) -> dict[str, Any]:
    """POST a file to the server; the answer, seconds and the server's CPU and peak memory."""
    cpu0, _ = _group_usage(pgid)
    began = time.monotonic()
    try:
        with body.open("rb") as f:
            r = httpx.post(
                f"{base}{route}",
                content=f.read(),
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=timeout,
            )
        status, said = r.status_code, r.text[:300]
    except httpx.TimeoutException:
        status, said = "timed out", ""
    seconds = time.monotonic() - began
    time.sleep(0.5)  # the server's thread may still be working on a request the client gave up
    cpu1, peak = _group_usage(pgid)
    return {
        "status": status,
        "said": said,
        "seconds": round(seconds, 1),
        "server_cpu_s": round(cpu1 - cpu0, 1),
        "server_peak_rss_mb": round(peak, 1),
    }


def cases(work: Path) -> Iterator[tuple[str, Callable[[float], dict[str, Any]]]]:
    """(name, run) for each case; each builds its file when run."""

    def zst_4g() -> Path:
        return work / "4g.zst" if (work / "4g.zst").exists() else _zstd_of(work / "4g.zst", b" ", 4 * GIB)

    def gz_newlines() -> Path:
        p = work / "nl.gz"
        return p if p.exists() else _gzip_of(p, b"\n", 256 * MIB)

    def zst_1g() -> Path:
        p = work / "1g.zst"
        return p if p.exists() else _zstd_of(p, b" ", GIB)

    def db(name: str) -> str:
        return str(work / f"{name}.db")

    def events() -> bytes:
        """The sample record's events as NDJSON (a ledger's own export)."""
        p = work / "events.ndjson"
        if not p.exists():
            record, store = work / "sample.json", work / "sample.db"
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            record.write_bytes(
                subprocess.run([*ledger_cmd(), "sample"], check=True, capture_output=True, env=env).stdout
            )
            subprocess.run(
                [*ledger_cmd(), "import", "--db", str(store), str(record)],
                check=True,
                capture_output=True,
                env=env,
            )
            stored = subprocess.run(
                [*ledger_cmd(), "events", "--db", str(store)], check=True, capture_output=True, env=env
            ).stdout.splitlines()
            # what an import takes of a stored envelope (the chain's fields are the ledger's own)
            keep = ("type", "data", "observed_at", "event_id")
            p.write_bytes(
                b"".join(
                    json.dumps({k: v for k, v in json.loads(e).items() if k in keep}).encode() + b"\n"
                    for e in stored
                )
            )
        return p.read_bytes()

    def ndjson_newlines() -> Path:
        """An event line, 256 MiB of newlines, then the rest of the events: NDJSON to its checker."""
        p = work / "ndjson-nl.gz"
        if not p.exists():
            first, rest = events().split(b"\n", 1)
            block = b"\n" * MIB
            with gzip.GzipFile(p, "wb", compresslevel=9, mtime=0) as w:
                w.write(first + b"\n")
                for _ in range(256):
                    w.write(block)
                w.write(rest)
        return p

    def plain_ndjson_newlines() -> Path:
        p = work / "ndjson-nl.ndjson"
        if not p.exists():
            with gzip.open(ndjson_newlines()) as r, p.open("wb") as w:
                while chunk := r.read(MIB):
                    w.write(chunk)
        return p

    yield "import-zst-4GiB-spaces", lambda t: _cli(["import", "--db", db("a"), str(zst_4g())], t)
    yield "import-gz-256MiB-newlines", lambda t: _cli(["import", "--db", db("b"), str(gz_newlines())], t)
    yield (
        "import-ndjson-gz-256MiB-newlines",
        lambda t: _cli(["import", "--db", db("e"), str(ndjson_newlines())], t),
    )
    # the same bomb let through its caps: what reading 256 MiB of blank lines costs by itself
    yield (
        "import-ndjson-gz-256MiB-newlines-caps-lifted",
        lambda t: _cli(["import", "--db", db("g"), "--max-expansion", "1000000", str(ndjson_newlines())], t),
    )
    yield (
        "import-ndjson-plain-256MiB-newlines",
        lambda t: _cli(["import", "--db", db("f"), str(plain_ndjson_newlines())], t),
    )
    yield (
        "ingest-works-cli-zst-1GiB",
        lambda t: _cli(
            ["ingest", "works", str(zst_1g()), "--observed-at", "2026-01-01T00:00:00Z", "--db", db("c")], t
        ),
    )
    yield (
        "ingest-crossref-cli-gz-newlines",
        lambda t: _cli(
            [
                "ingest",
                "crossref",
                str(gz_newlines()),
                "--observed-at",
                "2026-01-01T00:00:00Z",
                "--db",
                db("d"),
            ],
            t,
        ),
    )

    def served(route: str, body: Callable[[], Path]) -> Callable[[float], dict[str, Any]]:
        def run(t: float) -> dict[str, Any]:
            path = body()
            with serving(work / "s.db", env={"LEDGER_TOKENS": TOKEN}, workdir=work) as server:
                got = _post(server.base, server.proc.pid, route, path, t)
            return {"body_bytes": path.stat().st_size, **got}

        return run

    at = "observed_at=2026-01-01T00:00:00Z"
    yield "post-ingest-works-zst-1GiB", served(f"/ingest/works?{at}", zst_1g)
    yield "post-ingest-crossref-zst-1GiB", served(f"/ingest/crossref?{at}", zst_1g)
    yield "post-ingest-works-gz-newlines", served(f"/ingest/works?{at}", gz_newlines)

    def rw_rows() -> Path:
        """The Retraction Watch header, then 256 MiB of blank rows: each one a row of the CSV reader."""
        p = work / "rw.csv.gz"
        if not p.exists():
            header = b"Record ID,Title,Subject,Institution,Journal,Publisher,Country,Author,URLS,ArticleType,"
            header += b"RetractionDate,RetractionDOI,RetractionPubMedID,OriginalPaperDate,OriginalPaperDOI,"
            header += b"OriginalPaperPubMedID,RetractionNature,Reason,Paywalled,Notes\n"
            block = b"\n" * MIB
            with gzip.GzipFile(p, "wb", compresslevel=9, mtime=0) as w:
                w.write(header)
                for _ in range(256):
                    w.write(block)
        return p

    yield "post-ingest-retraction-watch-gz-blank-rows", served(f"/ingest/retraction-watch?{at}", rw_rows)


def main() -> None:
    """Run the cases named (all by default) and print a JSON line for each."""
    p = argparse.ArgumentParser()
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--keep", type=Path, default=None, help="build the bombs here and keep them")
    a = p.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with tempfile.TemporaryDirectory() as tmp:
        work = a.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name, run in cases(work):
            if a.only and name not in a.only:
                continue
            print(json.dumps({"case": name, **run(a.timeout)}), flush=True)
            for f in work.glob("*.db*"):
                f.unlink()
    sys.exit(0)


if __name__ == "__main__":
    main()

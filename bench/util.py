"""Shared helpers: paths, subprocess workers with their peak RSS, the machine, profiles."""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.profiles import ROOT, summarise_raw

BENCH = ROOT / "bench"
DATA = BENCH / ".data"
PROFILES = BENCH / "profiles"
PYTHON = sys.executable


def remove_db(path: Path) -> None:
    """Delete a SQLite file and its WAL companions."""
    for suffix in ("", "-wal", "-shm", ".key", ".checkpoint"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a ledger file (WAL checkpointed into it first)."""
    remove_db(dst)
    conn = sqlite3.connect(src)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copyfile(src, dst)


def run_worker(*args: str, timeout: float = 3600, spy: str | None = None) -> dict[str, Any]:
    """Run `python -m bench.worker ARGS` and return its JSON answer plus its peak RSS (its VmHWM).

    With `spy`, the worker runs under py-spy (every thread sampled) and bench/profiles/SPY.txt
    summarises where the samples are (the timing of such a run is not a figure).
    """
    cmd = [PYTHON, "-m", "bench.worker", *args]
    raw = PROFILES / f"{spy}.raw.txt"
    if spy:
        PROFILES.mkdir(parents=True, exist_ok=True)
        cmd = [str(Path(PYTHON).with_name("py-spy")), "record", "--rate", "250", "--format", "raw",
               "--nonblocking", "-o", str(raw), "--", *cmd]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"worker {args} timed out")
        time.sleep(0.05)
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"worker {args} failed: {err[-2000:]}")
    answer: dict[str, Any] = json.loads(next(x for x in reversed(out.splitlines()) if x.startswith("{")))
    # the worker's own VmHWM: wait4's ru_maxrss is at least this (the parent's) process's peak RSS
    answer["ru_maxrss_mb"] = round(usage.ru_maxrss / 1024, 1)
    hwm = answer.pop("vm_hwm_kb", None)
    answer["peak_rss_mb"] = round(hwm / 1024, 1) if hwm else answer["ru_maxrss_mb"]
    if spy:
        answer["profile"] = summarise_raw(raw, PROFILES / f"{spy}.txt")
    return answer


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def p50(samples: list[float]) -> float:
    """The median."""
    return statistics.median(samples)


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def machine() -> dict[str, Any]:
    """What this machine is: CPU, cores, memory, OS, Python, SQLite."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "filesystem": _fs(DATA),
    }


def _fs(path: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True, timeout=10).stdout
        return " ".join(out.splitlines()[-1].split()[:2])
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def vm_hwm_kb() -> int | None:
    """This process's own peak RSS (VmHWM). wait4's ru_maxrss cannot tell it: Linux floors a child's
    ru_maxrss at its parent's peak RSS when the child is forked and exec'd (run_worker)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def pyinstrument_profile(name: str, fn: Callable[[], Any]) -> str:
    """Run fn under pyinstrument; write bench/profiles/NAME.txt; return its path."""
    from pyinstrument import Profiler

    PROFILES.mkdir(parents=True, exist_ok=True)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    try:
        fn()
    finally:
        profiler.stop()
    text = PROFILES / f"{name}.txt"
    text.write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    return str(text.relative_to(ROOT))

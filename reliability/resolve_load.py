"""Resolves against a real `ledger serve --workers 2`, full size: at once, abandoned, over budget, jobs
and person names of two tokens.

Build the ledger first (the evaluation catalogue and 5,000 references, 50 per paper):
`python -m bench.resolver.resolve_throughput --db /tmp/resolve.db --build`; then
`python -m reliability.resolve_load /tmp/resolve.db WHAT [N | OBSERVATION_ID]` with WHAT one of
`concurrent N` (N dry-run resolves of 100 papers at once from two tokens: their statuses, the wall, and
the peak of resolver worker processes, processes and resident memory of the server's tree), `gone` (a
client closing its socket once the workers started: how long they stay busy), `jobs` (token B asks for a
real whole-ledger job while A's dry run runs), `budget` (four 100-paper resolves back to back from one
token) or `names OBSERVATION_ID` (look-alike and reserved person names). LEDGER_RESOLVE_* settings in the
environment are passed to the server. Prints one JSON line; nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.api_fixtures import running_server

A, B = "tok-a", "tok-b"
PAPERS = [f"2601.{n:05d}" for n in range(100)]


def tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for t in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                kids = [int(k) for k in t.read_text().split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def workers(pid: int) -> list[int]:
    found = []
    direct = {int(k) for t in Path(f"/proc/{pid}/task").glob("*/children") for k in t.read_text().split()}
    for p in tree(pid):
        if p in direct:
            continue  # uvicorn's own workers
        try:
            if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(p)
        except OSError:
            pass
    return found


def rss_mb(pid: int) -> float:
    total = 0
    for p in [pid, *tree(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main() -> None:
    """Run the case named on the command line against a server on DB."""
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    DB, WHAT = sys.argv[1], sys.argv[2]  # noqa: N806
    env = {
        "LEDGER_TOKENS": f"{A},{B}",
        **{k: v for k, v in os.environ.items() if k.startswith("LEDGER_RESOLVE")},
    }
    with running_server(DB, env=env, args=["--workers", "2"], timeout=120) as server:
        pid = server.proc.pid
        if WHAT == "concurrent":
            n = int(sys.argv[3])
            statuses: list[int] = []
            peak = {"workers": 0, "rss": 0.0, "procs": 0}
            done = threading.Event()

            def watch() -> None:
                while not done.is_set():
                    peak["workers"] = max(peak["workers"], len(workers(pid)))
                    peak["procs"] = max(peak["procs"], len(tree(pid)) + 1)
                    peak["rss"] = max(peak["rss"], rss_mb(pid))
                    time.sleep(0.2)

            def one(token: str) -> None:
                r = httpx.post(
                    f"{server.base}/resolve",
                    json={"papers": PAPERS, "dry_run": True},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=600,
                )
                statuses.append(r.status_code)

            w = threading.Thread(target=watch)
            w.start()
            t0 = time.monotonic()
            ts = [threading.Thread(target=one, args=(A if i % 2 else B,)) for i in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            wall = time.monotonic() - t0
            done.set()
            w.join()
            print(json.dumps({"n": n, "statuses": sorted(statuses), "wall_s": round(wall, 1), **peak}))
        elif WHAT == "gone":
            body = json.dumps({"papers": PAPERS}).encode()
            port = int(server.base.rsplit(":", 1)[1])
            c = socket.create_connection(("127.0.0.1", port))
            c.sendall(
                (
                    f"POST /resolve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {A}\r\nContent-Type: "
                    f"application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode()
                + body
            )
            while not workers(pid):
                time.sleep(0.02)
            c.close()
            t0 = time.monotonic()
            while workers(pid):
                time.sleep(0.05)
            print(json.dumps({"workers_busy_after_close_s": round(time.monotonic() - t0, 2)}))
        elif WHAT == "jobs":
            a = httpx.post(
                f"{server.base}/resolve",
                json={"all": True, "dry_run": True},
                headers={"Authorization": f"Bearer {A}"},
                timeout=60,
            ).json()
            b = httpx.post(
                f"{server.base}/resolve",
                json={"all": True},
                headers={"Authorization": f"Bearer {B}"},
                timeout=60,
            )
            seen = httpx.get(
                f"{server.base}/resolve/jobs/{a['id']}", headers={"Authorization": f"Bearer {B}"}
            )
            print(
                json.dumps(
                    {
                        "b_status": b.status_code,
                        "b_got_a_job": b.json().get("id") == a["id"],
                        "b_sees_a_job": seen.status_code,
                    }
                )
            )
        elif WHAT == "budget":
            out = []
            t0 = time.monotonic()
            for _ in range(4):
                r = httpx.post(
                    f"{server.base}/resolve",
                    json={"papers": PAPERS, "dry_run": True},
                    headers={"Authorization": f"Bearer {A}"},
                    timeout=600,
                )
                out.append((r.status_code, r.json().get("examined"), r.headers.get("retry-after")))
            print(json.dumps({"requests": out, "s": round(time.monotonic() - t0, 1)}))
        elif WHAT == "names":
            oid = sys.argv[3]
            names: dict[str, int] = {}
            for name in ["\u0410da Lovelace", "citation-ledger/forged", "Ada L\u03bfvelace"]:
                r = httpx.post(
                    f"{server.base}/resolve/person",
                    json={"observation_id": oid, "by": name, "none": True},
                    headers={"Authorization": f"Bearer {A}"},
                    timeout=60,
                )
                names[name] = r.status_code
            print(json.dumps(names, ensure_ascii=False))


if __name__ == "__main__":
    main()

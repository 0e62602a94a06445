"""A bounded, self-stopping HTTP load on 127.0.0.1: N threads with keep-alive connections.

Reads a JSON spec on stdin: port, method, path, bodies_file (one body a line, or null), headers,
concurrency, max_requests, max_seconds, collect_seqs. Prints one JSON line: requests, seconds,
requests/s, status counts, latency p50/p99 (ms) and, with collect_seqs, the seqs acknowledged.
"""

from __future__ import annotations

import http.client
import itertools
import json
import sys
import threading
import time
from collections import Counter
from typing import Any


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Drive the load described by `spec` and summarise it."""
    bodies: list[bytes] | None = None
    if spec.get("bodies_file"):
        with open(spec["bodies_file"], "rb") as f:
            bodies = [line.rstrip(b"\n") for line in f if line.strip()]
    limit = min(spec["max_requests"], len(bodies)) if bodies is not None else spec["max_requests"]
    threads_n = spec["concurrency"]
    counter = itertools.count()
    barrier = threading.Barrier(threads_n + 1)
    results: list[tuple[Counter[int], list[float], list[int], str | None]] = []
    lock = threading.Lock()
    deadline = [0.0]

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", spec["port"], timeout=120)
        statuses: Counter[int] = Counter()
        lat: list[float] = []
        seqs: list[int] = []
        error = None
        barrier.wait()
        try:
            while True:
                i = next(counter)
                if i >= limit or time.perf_counter() > deadline[0]:
                    break
                body = bodies[i] if bodies is not None else None
                t0 = time.perf_counter()
                conn.request(spec["method"], spec["path"], body=body, headers=spec.get("headers", {}))
                resp = conn.getresponse()
                data = resp.read()
                lat.append(time.perf_counter() - t0)
                statuses[resp.status] += 1
                if spec.get("collect_seqs") and resp.status == 201:
                    seqs.extend(e["seq"] for e in json.loads(data)["events"] if not e["duplicate"])
        except Exception as e:  # reported, never hidden
            error = repr(e)
        finally:
            conn.close()
        with lock:
            results.append((statuses, lat, seqs, error))

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for t in threads:
        t.start()
    deadline[0] = time.perf_counter() + spec["max_seconds"]
    start = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    statuses: Counter[int] = Counter()
    lat: list[float] = []
    seqs: list[int] = []
    errors = []
    for s, latency, q, err in results:
        statuses.update(s)
        lat.extend(latency)
        seqs.extend(q)
        if err:
            errors.append(err)
    lat.sort()
    n = len(lat)
    return {
        "requests": n,
        "seconds": round(seconds, 4),
        "requests_per_s": round(n / seconds, 1) if seconds else None,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "p50_ms": round(lat[n // 2] * 1e3, 3) if n else None,
        "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1e3, 3) if n else None,
        "seqs": seqs,
        "errors": errors,
    }


def main() -> None:
    """Spec on stdin, summary on stdout."""
    print(json.dumps(run(json.loads(sys.stdin.read()))))


if __name__ == "__main__":
    main()

"""One command: build synthetic ledgers of 10k, 100k and 1M events on SQLite and on PostgreSQL, measure
each figure beside its bare reference on the same engine, on this machine, in the same run, print the
table (one column per size and backend) and write bench/results.json.

    .venv/bin/python -m bench            # 10k, 100k, 1M on both backends
    .venv/bin/python -m bench --quick    # 10k and 100k
    .venv/bin/python -m bench --backend sqlite    # or postgresql; default both
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import pools
from bench.backends import Engine, SQLiteEngine
from bench.results import RESULTS, Results
from bench.server import AUTH, Server
from bench.synth import TARGET, arxiv_id
from bench.util import DATA, machine, run_worker
from bench.why import explain

AS_OF = "2025-01-01T00:00:00Z"  # after every synthetic event: the target's whole history is in view
SIZES = [10_000, 100_000, 1_000_000]
LIBRARY_BATCHES = 25  # 1000-event batches of the library append stage


def _k(x: float) -> str:
    return f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


class Bench:
    """The stages of one backend's column and what they share (the growing ledger, results, profiles)."""

    def __init__(self, engine: Engine, sizes: list[int], profile: bool, results: Results, idle: float):
        self.engine = engine
        self.sizes = sizes
        self.profile = profile
        self.db = engine.ledger
        self.scratch = ""  # the copy the writes append to (set by writes)
        self.next_paper = 0
        self.results = results
        self.idle_rss = idle
        self.p50_first: float | None = None
        self.append_first: dict[str, Any] | None = None  # append_library at the smallest size

    def _profile_name(self, key: str, size: int) -> str | None:
        last = self.profile and size == self.sizes[-1]
        return f"{self.engine.prefix}{key}-{size}" if last else None

    def add(self, key: str, size: int, headline: float, absolute: str, value: Any, baseline: Any) -> None:
        """Record one figure and print it."""
        name = self.engine.name
        fig = self.results.add(name, key, size, headline, value, baseline, absolute=absolute)
        print(f"  {key:16s} {headline:8.3f} {'ok' if fig['met'] else 'MISS':4s} {absolute}", flush=True)
        if not fig["met"]:
            why, prof = explain(key, size, value, baseline, name)
            self.results.explain(fig, why, prof or value.get("profile"))

    def stage(self, size: int) -> None:
        """Grow the ledger to `size` events, then measure every figure on it."""
        built = run_worker("build", self.db, str(size), str(self.next_paper))
        self.next_paper = built["next_paper"]
        info = {"events": built["head"], "papers": self.next_paper, "build": built}
        info |= self.engine.after_build()
        print(f"{size:,} events, {self.engine.label}: built {built['added']:,} in {built['seconds']} s",
              flush=True)  # fmt: skip
        self.results.stage(self.engine.name, size, info)
        load_before = os.getloadavg()[0]
        self.reads(size, built["head"])
        self.writes(size)
        # other work on the machine skews every ratio: say how busy it was
        info["load_average_1min"] = [load_before, os.getloadavg()[0]]
        self.results.save()

    def reads(self, size: int, events: int) -> None:
        """Projection, verify and GET record on the ledger itself."""
        pr = run_worker("project", self.db, arxiv_id(TARGET), AS_OF, "200", *self._flag("projection", size))
        self.p50_first = self.p50_first or pr["p50_ms"]
        self.add(
            "projection",
            size,
            pr["p50_ms"] / self.p50_first,
            projection_cell(pr, self.p50_first),
            pr,
            {"p50_ms": self.p50_first},
        )
        self.add("statements", size, pr["statements"], f"{pr['statements']} statements", pr, None)
        v = run_worker("verify", self.db, *self._flag("verify", size))
        c = run_worker("chain", self.db)
        self.add(
            "verify",
            size,
            v["events_per_s"] / c["events_per_s"],
            f"{_k(v['events_per_s'])} vs {_k(c['events_per_s'])} ev/s",
            v,
            c,
        )
        self.add(
            "rss_verify",
            size,
            v["peak_rss_mb"],
            f"{v['peak_rss_mb']:.0f} MB, {v['peak_rss_mb'] / self.idle_rss:.1f}x idle {self.idle_rss:.0f} MB",
            v,
            {"idle_rss_mb": self.idle_rss},
        )
        from ledger.model.instants import parse_ts
        from service.ledger import Ledger

        ledger = Ledger(self.db)
        body, _ = ledger.record_bytes(arxiv_id(TARGET), parse_ts(AS_OF))
        ledger.close()
        static = DATA / f"record-{self.engine.name}.json"
        static.write_bytes(body)
        path = f"/paper/{arxiv_id(TARGET)}/citation-record.json?as_of={AS_OF}"
        with Server(self.db, static) as server:
            status, got = server.request("GET", path)
            assert status == 200 and got == body, (status, got[:200])
            spec = {"method": "GET", "max_requests": 20_000, "max_seconds": 4.0}
            server.load(path="/bench/static", **{**spec, "max_requests": 200})  # warm both
            server.load(path=path, **{**spec, "max_requests": 200})
            st = server.load(path="/bench/static", **spec)
            rec = server.load(path=path, **spec)
            prof = None
            if self._profile_name("get_record", size) and rec["requests_per_s"] < 0.5 * st["requests_per_s"]:
                prof = _try(lambda: server.profile(f"{self.engine.prefix}get_record-{size}", 4,
                                                   lambda: server.load(path=path, **spec)))  # fmt: skip
        rec["profile"] = prof
        self.add(
            "get_record",
            size,
            rec["requests_per_s"] / st["requests_per_s"],
            f"{rec['requests_per_s']:.0f} vs {st['requests_per_s']:.0f} req/s",
            rec,
            st,
        )

    def _flag(self, key: str, size: int) -> list[str]:
        name = self._profile_name(key, size)
        return [f"--profile={name}"] if name else []

    def writes(self, size: int) -> None:
        """Appends (library, HTTP, concurrent) on a copy of the ledger, each beside its bare reference."""
        eng = self.engine
        self.scratch, schema = eng.copy("scratch"), eng.copy("schema")
        first = {k: self.next_paper + off for k, off in pools.OFFSETS.items()}
        # 25 batches: a window of 25,000 events always holds one move of the key levels (derived/keys.py)
        a = run_worker("append", self.scratch, str(first["library_batches"]), str(LIBRARY_BATCHES))
        rows = eng.stored_rows(self.scratch, a["after"])
        bare = eng.bare_batches(rows)
        # the same rows, no ledger code, into the product's schema at this size: what the schema costs
        bare["into_product_schema"] = eng.bare_batches(rows, into=schema)
        self.add(
            "append_library",
            size,
            a["events_per_s"] / bare["events_per_s"],
            f"{_k(a['events_per_s'])} vs {_k(bare['events_per_s'])} ev/s",
            a,
            bare,
        )
        self.add(
            "rss_import",
            size,
            a["peak_rss_mb"],
            f"{a['peak_rss_mb']:.0f} MB, {a['peak_rss_mb'] / self.idle_rss:.1f}x idle",
            a,
            {"idle_rss_mb": self.idle_rss},
        )
        c = run_worker("concurrent", self.scratch, str(first["library_singles"]), "20000", "4")
        assert c["acked_all_stored"], c
        rows = eng.stored_rows(self.scratch, c["after"])[:3000]
        one = eng.bare_one_row(rows)
        one["into_product_schema"] = eng.bare_one_row(rows, into=schema)
        eng.drop(schema)
        self.add(
            "library_singles",
            size,
            c["events_per_s"] / one["events_per_s"],
            f"{_k(c['events_per_s'])} vs {_k(one['events_per_s'])} ev/s",
            c,
            one,
        )
        self.peer(size, a, bare, c)
        self._profile_writes(size, first, a, bare, c, one)
        self.http_writes(size, first)
        eng.drop(self.scratch)

    def peer(self, size: int, a: dict[str, Any], bare: dict[str, Any], c: dict[str, Any]) -> None:
        """The peer (eventsourcing's application recorder, bench/peer.py) given the rows the ledger stored
        in its two append stages, its store pre-filled with the ledger's events at this size; and, at the
        largest size, the library append's rate over its rate at the smallest."""
        eng = self.engine
        store = eng.fresh("peer")
        try:
            heads = ",".join(map(str, a["heads"]))
            p = run_worker("peer", store, self.scratch, str(a["after"]), heads, "4")
        finally:
            eng.drop(store)
        raw = {k: p[k] for k in ("peer", "durability", "fill", "peak_rss_mb")}
        for key, ours, theirs in (("append_vs_peer", a, p["batches"]), ("singles_vs_peer", c, p["singles"])):
            self.add(
                key,
                size,
                ours["events_per_s"] / theirs["events_per_s"],
                f"{_k(ours['events_per_s'])} vs {_k(theirs['events_per_s'])} ev/s",
                {k: ours[k] for k in ("events", "seconds", "events_per_s")},
                theirs | raw,
            )
        schema = bare["into_product_schema"]["events_per_s"]
        flat = {"events_per_s": a["events_per_s"], "size": size, "schema_events_per_s": schema}
        first = self.append_first = self.append_first or flat
        if size == self.sizes[-1] and size != first["size"]:
            self.add(
                "append_flat",
                size,
                flat["events_per_s"] / first["events_per_s"],
                f"{_k(flat['events_per_s'])} vs {_k(first['events_per_s'])} ev/s at {first['size']:,}",
                flat,
                first,
            )

    def _profile_writes(self, size: int, first: dict[str, int], a: Any, bare: Any, c: Any, one: Any) -> None:
        """Profile runs (fresh events, not timed as figures) for the append figures that missed."""
        name = self._profile_name("append_library", size)
        if name and a["events_per_s"] < 0.5 * bare["events_per_s"]:
            a["profile"] = run_worker("append", self.scratch, str(first["profile_batches"]), "5",
                                      f"--profile={name}")["profile"]  # fmt: skip
        name = self._profile_name("library_singles", size)
        if name and c["events_per_s"] < 1.5 * one["events_per_s"]:
            args = ("concurrent", self.scratch, str(first["profile_singles"]), "10000", "3")
            c["profile"] = _try(lambda: run_worker(*args, spy=name)["profile"])
        for key, fig in (("append_library", a), ("library_singles", c)):
            if fig.get("profile"):
                done = next(
                    f
                    for f in self.results.data["figures"]
                    if f["figure"] == key and f["size"] == size and f["backend"] == self.engine.name
                )
                self.results.explain(done, done.get("why", ""), fig["profile"])

    def http_writes(self, size: int, first: dict[str, int]) -> None:
        """POST /events: 1000-event batches from one client, then single events from 8 clients."""
        eng = self.engine
        batches = DATA / "batches.ndjson"
        batches.write_bytes(
            b"\n".join(pools.body(b) for b in pools.batches(first["http_batches"], 10)) + b"\n"
        )
        singles = DATA / "singles.ndjson"
        bodies = [pools.body([e]) for e in pools.singles(first["http_singles"], 20_000)]
        singles.write_bytes(b"\n".join(bodies) + b"\n")
        with Server(self.scratch) as server:
            before = server_head(server)
            b = server.load(
                path="/events",
                method="POST",
                bodies_file=str(batches),
                headers=AUTH,
                concurrency=1,
                max_requests=10,
                max_seconds=120.0,
            )
            assert b["statuses"] == {"201": 10}, b
            b["events"] = server_head(server) - before  # cited snapshots repeated in a batch are duplicates
            b["events_per_s"] = round(b["events"] / b["seconds"])
            bare = eng.bare_batches(eng.stored_rows(self.scratch, before))
            name = self._profile_name("append_http", size)
            if name and b["events_per_s"] < 0.25 * bare["events_per_s"]:
                more = DATA / "batches2.ndjson"
                more.write_bytes(
                    b"\n".join(pools.body(x) for x in pools.batches(first["profile_batches_http"], 5))
                )
                b["profile"] = _try(lambda: server.profile(name, 3, lambda: server.load(
                    path="/events", method="POST", bodies_file=str(more), headers=AUTH, concurrency=1,
                    max_requests=5, max_seconds=60.0)))  # fmt: skip
            self.add(
                "append_http",
                size,
                b["events_per_s"] / bare["events_per_s"],
                f"{_k(b['events_per_s'])} vs {_k(bare['events_per_s'])} ev/s",
                b,
                bare,
            )
            spec = {
                "method": "POST",
                "bodies_file": str(singles),
                "headers": AUTH,
                "max_requests": 20_000,
                "max_seconds": 4.0,
            }
            noop = server.load(path="/bench/noop", **spec)
            mid = server_head(server)
            real = server.load(path="/events", collect_seqs=True, **spec)
            seqs = real.pop("seqs")
            stored = {r[0] for r in eng.stored_rows(self.scratch, mid)}
            real["acked_all_stored"] = set(seqs) <= stored and len(set(seqs)) == len(seqs) == real["requests"]
            assert real["acked_all_stored"] and real["statuses"] == {"201": real["requests"]}, real
            noop.pop("seqs")
            if (
                self._profile_name("http_singles", size)
                and real["requests_per_s"] < 0.6 * noop["requests_per_s"]
            ):
                more = DATA / "singles2.ndjson"
                more.write_bytes(
                    b"\n".join(pools.body([e]) for e in pools.singles(first["profile_http"], 20_000)) + b"\n"
                )
                real["profile"] = _try(lambda: server.profile(
                    f"{eng.prefix}http_singles-{size}", 4,
                    lambda: server.load(path="/events", **{**spec, "bodies_file": str(more)})))  # fmt: skip
        self.add(
            "http_singles",
            size,
            real["requests_per_s"] / noop["requests_per_s"],
            f"{real['requests_per_s']:.0f} vs {noop['requests_per_s']:.0f} req/s",
            real,
            noop,
        )


def projection_cell(pr: dict[str, Any], first: float) -> str:
    """The table's absolutes for the projection: p50s now and at the smallest size, and on PostgreSQL
    the same number of bare round trips (the network floor under it)."""
    cell = f"{pr['p50_ms']:.2f} vs {first:.2f} ms"
    if "round_trips" not in pr:
        return cell
    return cell + f"; {pr['round_trips']} bare round trips: {pr['bare_round_trips_p50_ms']:.2f} ms"


def _try(profile: Any) -> str | None:
    """A profile's path, or None (with a warning) when the profiler cannot run here (e.g. no ptrace)."""
    try:
        path: str | None = profile()
        return path
    except Exception as e:  # a profile explains a figure; its absence must not lose the figures
        print(f"  (profile not taken: {e!r:.200})", flush=True)
        return None


def server_head(server: Server) -> int:
    """The head seq the server reports."""
    import json

    status, body = server.request("GET", "/healthz")
    assert status == 200, body
    seq: int = json.loads(body)["head"]["seq"]
    return seq


def main() -> None:
    """Parse the options, run each backend's stages, print the table."""
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="10k and 100k events only")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiles of unmet figures")
    ap.add_argument(
        "--backend",
        choices=["sqlite", "postgresql", "both"],
        default="both",
        help="the table's columns (default both; PostgreSQL's say why when no server starts)",
    )
    args = ap.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    names = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    start = time.perf_counter()
    DATA.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python -m bench " + " ".join(sys.argv[1:]), "machine": machine(), "sizes": sizes,
            "backends": {n: {"label": LABELS[n], "sizes": sizes} for n in names}}  # fmt: skip
    results = Results(RESULTS, meta)
    idle = run_worker("idle")["peak_rss_mb"]
    for name in names:
        run_backend(name, sizes, not args.no_profile, results, idle)
    results.finish(time.perf_counter() - start)
    print()
    print(results.table())
    print(f"\nwrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


LABELS = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def run_backend(name: str, sizes: list[int], profile: bool, results: Results, idle: float) -> None:
    """Every stage on one backend. PostgreSQL may be absent or fail: its column then says why."""
    if name == "sqlite":
        engine: Engine = SQLiteEngine()
    else:
        from bench import pg

        started, reason = pg.start()
        if started is None:
            print(f"PostgreSQL not measured: {reason}", flush=True)
            results.missing(name, reason)
            return
        engine = started
        results.data["backends"][name] |= {**started.meta(), "note": started.note()}
    bench = Bench(engine, sizes, profile, results, idle)
    try:
        for size in sizes:
            try:
                bench.stage(size)
            except Exception as e:
                if name == "sqlite":
                    raise
                traceback.print_exc()
                results.missing(name, f"the {size:,}-event stage failed: {e!r:.300}")
                return
    finally:
        engine.close()


if __name__ == "__main__":
    main()

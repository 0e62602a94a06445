"""The figures, their targets, results.json (written after every figure) and the printed table."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.util import BENCH

RESULTS = BENCH / "results.json"

# key: (label, comparison, target)
TARGETS: dict[str, tuple[str, str, float]] = {
    "append_library": ("append, library, 1000-event batches", ">=", 0.5),
    "append_http": ("append over HTTP, 1000-event batches", ">=", 0.25),
    "http_singles": ("single-event POST /events, 8 clients", ">=", 0.6),
    "library_singles": ("single-event appends, 8 threads, library", ">=", 1.5),
    "projection": ("record projection p50 (100 refs, 30 inbound)", "<=", 1.5),
    "statements": ("SQL statements per record", "<=", 6),
    "verify": ("ledger verify, full chain", ">=", 0.5),
    "get_record": ("GET record over HTTP, 8 clients", ">=", 0.5),
    "rss_import": ("peak RSS MB, import (1000-event batches)", "<", 300),
    "rss_verify": ("peak RSS MB, ledger verify", "<", 100),
    "append_vs_peer": ("append, library, over eventsourcing's recorder (same batches)", ">=", 1.5),
    "singles_vs_peer": ("single-event appends, 8 threads, over eventsourcing one at a time", ">=", 3.0),
    "append_flat": ("append, library, largest size over smallest", ">=", 0.7),
}
# targets that differ on a backend: {backend: {key: target}} (same comparison)
BACKEND_TARGETS: dict[str, dict[str, float]] = {"postgresql": {"append_vs_peer": 1.0}}

_RSS = "MB, absolute (beside it: over an idle interpreter with the package imported)"
# what each headline ratio is on SQLite (results.json: targets; PostgreSQL's are pg.RATIOS)
RATIOS = {
    "append_library": "events/s over bare executemany of the same rows into a plain table (WAL, FULL)",
    "append_http": "events/s over the same bare executemany",
    "http_singles": "requests/s over a no-op POST route of the same app, same bodies",
    "library_singles": "events/s over bare one-row transactions at synchronous=FULL",
    "projection": "p50 at this size over p50 at the smallest size",
    "statements": "statements counted by sqlite3's trace callback",
    "verify": "events/s over a bare blake3 chain over the same rows",
    "get_record": "requests/s over a static route of the same app returning the same bytes",
    "rss_import": _RSS,
    "rss_verify": _RSS,
    "append_vs_peer": "events/s of append_library over events/s of eventsourcing's "
    "SQLiteApplicationRecorder.insert_events of the same rows, 1000 per call, into its store pre-filled "
    "with the ledger's events at this size (WAL, FULL)",
    "singles_vs_peer": "events/s of library_singles (8 threads, group commit) over events/s of one "
    "eventsourcing insert_events call per event, one caller, back to back (WAL, FULL)",
    "append_flat": "append_library events/s at the largest size over its events/s at the smallest",
}


def target(key: str, backend: str = "sqlite") -> float:
    """A figure's target on a backend."""
    return BACKEND_TARGETS.get(backend, {}).get(key, TARGETS[key][2])


def met(key: str, value: float, backend: str = "sqlite") -> bool:
    """Whether a figure meets its target (on that backend)."""
    op, target_ = TARGETS[key][1], target(key, backend)
    return {"<=": value <= target_, ">=": value >= target_, "<": value < target_}[op]


class Results:
    """Everything measured in one run, saved to bench/results.json as it goes."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        targets = {k: {"label": label, "target": f"{op} {t}", "ratio": RATIOS[k]}
                   for k, (label, op, t) in TARGETS.items()}  # fmt: skip
        for backend, override in BACKEND_TARGETS.items():
            for k, t in override.items():
                targets[k][f"target_{backend}"] = f"{TARGETS[k][1]} {t}"
        self.data: dict[str, Any] = {**meta, "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "targets": targets, "stages": {}, "figures": []}  # fmt: skip
        self.save()

    def stage(self, backend: str, size: int, info: dict[str, Any]) -> None:
        """Facts about one backend's ledger at one stage (events, build rate, file size)."""
        self.data["stages"].setdefault(backend, {})[str(size)] = info
        self.save()

    def missing(self, backend: str, reason: str) -> None:
        """Why a backend's column is (partly) empty: it could not start, or a stage failed."""
        self.data["backends"][backend]["missing"] = reason
        self.save()

    def add(
        self, backend: str, key: str, size: int, headline: float, value: Any, baseline: Any, **extra: Any
    ) -> dict[str, Any]:
        """One figure: the headline number compared with the target, and the absolutes beside it."""
        fig = {"backend": backend, "figure": key, "size": size, "headline": round(headline, 3),
               "met": met(key, headline, backend), "value": value, "baseline": baseline, **extra}  # fmt: skip
        self.data["figures"].append(fig)
        self.save()
        return fig

    def explain(self, fig: dict[str, Any], why: str, profile: str | None) -> None:
        """The reason an unmet figure is unmet, and the profile that shows it."""
        fig["why"] = why
        if profile:
            fig["profile"] = profile
        self.save()

    def finish(self, seconds: float) -> None:
        """Total wall time of the run."""
        self.data["wall_seconds"] = round(seconds, 1)
        self.save()

    def save(self) -> None:
        """Write results.json now (so a stopped run still leaves what it measured)."""
        self.path.write_text(json.dumps(self.data, indent=1, sort_keys=False) + "\n")

    def table(self) -> str:
        """The markdown table: one row per figure, one column per size and backend; notes below it."""
        backends: dict[str, Any] = self.data["backends"]
        cols = [(s, b) for s in sorted({s for b in backends.values() for s in b["sizes"]})
                for b in backends if s in backends[b]["sizes"]]  # fmt: skip
        head = ["figure", "target", *[f"{self._n(s)} events, {backends[b]['label']}" for s, b in cols]]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for key, (label, op, t) in TARGETS.items():
            other = [
                f"{v['label']} {op} {target(key, b):g}" for b, v in backends.items() if target(key, b) != t
            ]
            cells = [label, f"{op} {t:g}" + (f" ({', '.join(other)})" if other else "")]
            for s, b in cols:
                fig = next((f for f in self.data["figures"]
                            if (f["figure"], f["size"], f["backend"]) == (key, s, b)), None)  # fmt: skip
                cells.append(self._cell(fig) if fig else "not measured" if "missing" in backends[b] else "")
            lines.append("| " + " | ".join(cells) + " |")
        for name, b in backends.items():
            if b.get("note"):
                lines.append(f"\n{b['label']}: {b['note']}")
            if b.get("missing"):
                lines.append(f"\n{b['label']} not measured: {b['missing']}")
            stages = self.data["stages"].get(name, {})
            load = [f"{self._n(int(s))} {v['load_average_1min'][0]:.2f} -> {v['load_average_1min'][1]:.2f}"
                    for s, v in stages.items() if "load_average_1min" in v]  # fmt: skip
            if load:
                what = "load average (1 min) before -> after each stage"
                lines.append(f"\n{b['label']}, {what}: " + ", ".join(load))
        return "\n".join(lines)

    @staticmethod
    def _n(size: int) -> str:
        return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"

    @staticmethod
    def _cell(fig: dict[str, Any] | None) -> str:
        if fig is None:
            return ""
        mark = "ok" if fig["met"] else "**MISS**"
        return f"{fig['headline']:g} {mark} ({fig.get('absolute', '')})"

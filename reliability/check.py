"""Checks on a ledger after a load: gapless seq, chain verified, acknowledged exactly once.

A ledger is a SQLite file or a postgresql:// URL; its rows are read directly, not through the ledger code.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reliability.server import is_url, workdir_of

ROOT = Path(__file__).resolve().parent.parent
_ROWS_SQL = "SELECT seq, event_id, hash, stream, stream_version, recorded_us, data FROM events ORDER BY seq"


class LedgerRows:
    """What the database holds: seq -> (event_id, hash, stream, version, recorded_us), and by event_id."""

    def __init__(self, db: str | Path) -> None:
        if is_url(db):
            import psycopg

            with psycopg.connect(str(db), autocommit=True) as pg:
                self.rows: list[tuple[Any, ...]] = [tuple(r) for r in pg.execute(_ROWS_SQL).fetchall()]
        else:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                self.rows = conn.execute(_ROWS_SQL).fetchall()
            finally:
                conn.close()
        self.by_id: dict[str, tuple[int, str]] = {r[1]: (r[0], r[2]) for r in self.rows}

    def check_structure(self) -> dict[str, Any]:
        """Seq 1..N with no gap, unique event ids, per-stream versions 1..n, recorded_at never decreasing."""
        seqs = [r[0] for r in self.rows]
        assert seqs == list(range(1, len(seqs) + 1)), f"seq has gaps: {_first_gap(seqs)}"
        ids = Counter(r[1] for r in self.rows)
        twice = [i for i, n in ids.items() if n > 1]
        assert not twice, f"event ids stored more than once: {twice[:5]}"
        versions: dict[str, int] = {}
        for seq, _, _, stream, version, _, _ in self.rows:
            expected = versions.get(stream, 0) + 1
            assert version == expected, f"seq {seq}: {stream} version {version}, expected {expected}"
            versions[stream] = version
        recorded = [r[5] for r in self.rows]
        assert recorded == sorted(recorded), "recorded_at decreases along seq"
        return {"events": len(seqs), "streams": len(versions)}


def _first_gap(seqs: list[int]) -> str:
    for i, s in enumerate(seqs, start=1):
        if s != i:
            return f"position {i} holds seq {s}"
    return "none"


def verify_cli(db: str | Path, workdir: Path | None = None) -> str:
    """`ledger verify --db DB` as a user runs it; its first line, asserting exit 0."""
    env = None
    if is_url(db):  # the ledger's side files live in its state directory
        env = {**os.environ, "LEDGER_STATE_DIR": str(workdir_of(db, workdir))}
    cmd = [sys.executable, "-c", "from entry.main import main; main()", "verify", "--db", str(db)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert r.returncode == 0, f"ledger verify exited {r.returncode}: {r.stdout}{r.stderr}"
    return r.stdout.splitlines()[0]


def check_attempts(
    rows: LedgerRows, logs: Iterable[list[dict[str, Any]]], baseline: set[str] | None = None
) -> dict[str, Any]:
    """Every acknowledged event present once at its seq and hash; every refused batch absent.

    With no fault injected, also: nothing is stored that was not acknowledged, and every attempt got
    the status it expected.
    """
    attempts = [a for log in logs for a in log]
    acked: dict[str, tuple[int, str]] = {}
    by_kind: Counter[str] = Counter()
    unexpected = []
    for log in logs:
        for a in log:
            by_kind[f"{a['kind']} {a['status']}"] += 1
            if a["status"] != a["expect"]:
                unexpected.append((a["kind"], a["expect"], a["status"], a["error"]))
            if a["status"] >= 300:
                continue
            for item in a["answer"]["events"]:
                got = (item["seq"], item["hash"])
                first = acked.setdefault(item["event_id"], got)
                assert first == got, f"{item['event_id']} acknowledged at {first} and at {got}"
            if a["kind"] == "resend":  # the retry answers exactly what the first answer said
                original = log[a["of"]]["answer"]["events"]
                assert all(i["duplicate"] for i in a["answer"]["events"]), "a re-sent batch appended"
                assert [(i["seq"], i["hash"]) for i in a["answer"]["events"]] == [
                    (i["seq"], i["hash"]) for i in original
                ]
    assert not unexpected, f"{len(unexpected)} attempts got an unexpected status, e.g. {unexpected[:3]}"
    missing = {e: s for e, s in acked.items() if rows.by_id.get(e) != s}
    assert not missing, f"{len(missing)} acknowledged events missing or changed, e.g. {list(missing)[:3]}"
    refused_ids = {e for a in attempts if a["status"] >= 300 for e in a["event_ids"] if e not in acked}
    leaked = refused_ids & rows.by_id.keys()
    assert not leaked, f"{len(leaked)} events of refused batches were stored, e.g. {sorted(leaked)[:3]}"
    extra = rows.by_id.keys() - acked.keys() - (baseline or set())
    assert not extra, f"{len(extra)} events stored that nobody was told of, e.g. {sorted(extra)[:3]}"
    return {
        "attempts": len(attempts),
        "acknowledged_events": len(acked),
        "refused_batches": sum(a["status"] >= 300 for a in attempts),
        "refused_events_absent": len(refused_ids),
        "by_kind": dict(sorted(by_kind.items())),
    }


def interleaving(rows: LedgerRows, writer_of: Mapping[str, int]) -> int:
    """How many times the writing client changes along seq (≈ clients - 1 if they ran one by one)."""
    writers = [writer_of.get(r[1], -1) for r in rows.rows]
    return sum(a != b for a, b in zip(writers, writers[1:], strict=False))

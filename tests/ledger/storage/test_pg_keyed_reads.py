"""PostgreSQL reads the facts of a list of observations by probing the events table once a key, never
by walking its whole index (the screen's and the works' reads; bench/pg_keyed.py measures them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.pg_plans import modes, plan_of, recording
from ledger.storage.postgresql.store import PostgresStore
from service.ledger import Ledger
from tests.factories import paper, ts
from tests.pg_harness import planner_store

FAR = 2**62
EVENTS = 150_000


def _big(store: PostgresStore) -> list[str]:
    """An events table of 150,000 events (the first one's copies: the rows, not their meaning, are
    what is planned), each with a key in a level (the merged level most, the small ones as full as
    they get), analyzed; 500 of those keys."""
    conn = store.connection()
    conn.execute(
        "INSERT INTO events (seq, event_id, stream, stream_version, type, observed_at, observed_us, "
        "recorded_at, recorded_us, data, prev_hash, hash) "
        "SELECT i, 'ev' || i, 'paper:p' || i, 1, type, observed_at, i, recorded_at, i, data, prev_hash, hash "
        f"FROM events, generate_series(10, {EVENTS}) AS i WHERE seq = 1"
    )
    levels = {"event_keys": (10, 99_999), "event_keys_middle": (100_000, 139_999)}
    levels["event_keys_recent"] = (140_000, EVENTS)
    for level, (first, last) in levels.items():
        conn.execute(
            f"INSERT INTO {level} (key, seq) SELECT 'o:' || md5(i::text), i "
            f"FROM generate_series({first}, {last}) AS i"
        )
    for table in ("events", *levels):
        conn.execute(f"ANALYZE {table}")
    return [r[0] for r in conn.execute(f"SELECT md5(i::text) FROM generate_series(10, {EVENTS}, 300) AS i")]


def _whole_events(plan: str) -> bool:
    """Whether a plan reads the events table other than by a condition on its index."""
    lines = plan.splitlines()
    for n, line in enumerate(lines):
        if not line.rstrip().split("(")[0].rstrip().endswith(" on events"):
            continue
        depth = len(line) - len(line.lstrip(" ->"))
        below = []
        for more in lines[n + 1 :]:
            if len(more) - len(more.lstrip(" ->")) <= depth or more.lstrip().startswith("->"):
                break
            below.append(more)
        if "Seq Scan" in line or not any("Index Cond" in b for b in below):
            return True
    return False


def _by_observation(store: PostgresStore, oids: list[str]) -> list[Any]:
    with store.snapshot(FAR, FAR) as reader:
        return list(reader.screen_facts(oids))


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(_by_observation, id="screen-facts"),
        pytest.param(
            lambda store, oids: store.works.observation_facts(oids, -FAR, FAR), id="observation-facts"
        ),
    ],
)
def test_facts_of_observations_probe_the_events(
    fresh_ledger: Ledger, read: Callable[[PostgresStore, list[str]], list[Any]]
) -> None:
    store = planner_store(fresh_ledger)
    fresh_ledger.append([paper("2101.00001", ts(0))])
    oids = _big(store)
    assert len(oids) == 500
    with recording() as seen:
        facts = read(store, oids)
    assert [f.seq for f in facts] == sorted(f.seq for f in facts)  # in seq order, as the readers expect
    assert len(facts) == 500
    conn = store.connection()
    # On a 1M-event ledger the planner put the matches at hundreds of thousands of rows (a list's
    # rows joined to the levels: 1/200 of the keys each), whose sort cost more than walking the whole
    # events index in seq order. Here sorting is priced out, as it was there.
    conn.execute("SET enable_sort = off")
    try:
        found = [
            f"{mode}: {s.sql}\n{plan}"
            for s in seen.values()
            if "FROM events" in s.sql
            for mode in modes(s.params)
            if _whole_events(plan := plan_of(conn, s.sql, s.params, mode))
        ]
    finally:
        conn.execute("RESET enable_sort")
    assert any("FROM events" in s.sql for s in seen.values()), "no statement read the events"
    assert found == []

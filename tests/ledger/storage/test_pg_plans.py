"""PostgreSQL reads what a walk and an append look up by index, not by scanning a large table
(bench/pg_plans.py checks every statement on a 4M-event ledger; these check two of them on tables
made large enough here)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from bench.pg_plans import modes, plan_of, recording, seq_scans, table_sizes
from ledger.storage.postgresql.store import PostgresStore
from service.ledger import Ledger
from tests.factories import paper, ts
from tests.pg_harness import planner_store


def _scans(store: PostgresStore, seen: dict[str, Any], table: str) -> list[str]:
    """The plans (each way PostgreSQL may plan it) of each statement seen that scan `table` whole,
    on the store's own connection, so its session's settings apply."""
    conn = store.connection()
    conn.execute(f"ANALYZE {table}")
    sizes = table_sizes(conn)
    found = []
    for s in seen.values():
        if table not in s.sql:
            continue
        for mode in modes(s.params):
            plan = plan_of(conn, s.sql, s.params, mode)
            found += [f"{mode}: {s.sql}\n{plan}"] if seq_scans(plan, sizes, 1000) else []
    assert any(table in s.sql for s in seen.values()), f"no statement read {table}"
    return found


@pytest.mark.parametrize(
    ("spans", "count", "step"),
    [
        pytest.param(100_000, 1_000, 3, id="1,000-of-100k"),
        # a walk's 6,400 observations among the spans of a 1M-event ledger
        pytest.param(143_000, 6_400, 22, id="6,400-of-143k"),
    ],
)
def test_a_walk_finds_the_spans_of_its_observations_by_index(
    fresh_ledger: Ledger, spans: int, count: int, step: int
) -> None:
    store = planner_store(fresh_ledger)
    conn = store.connection()
    conn.execute(
        "INSERT INTO inbound_spans (cited, citing, reference_index, observation_id, t_from, t_to, "
        "citation_seq, resolution_seq, k_from, k_to) SELECT 'c' || (i % 2000), 'p' || i, 1, md5(i::text), "
        f"i, 9223372036854775807, i, i, i, 9223372036854775807 FROM generate_series(1, {spans}) AS i"
    )
    oids = [
        r[0]
        for r in conn.execute(f"SELECT md5(i::text) FROM generate_series(1, {step * count}, {step}) AS i")
    ]
    with recording() as seen:
        assert len(list(store.spans.span_rows(oids, ordered=False))) == len(oids)
        assert len(list(store.spans.span_rows(oids))) == len(oids)
    assert _scans(store, seen, "inbound_spans") == []


def test_an_append_finds_stored_event_ids_by_index(fresh_ledger: Ledger) -> None:
    store = planner_store(fresh_ledger)
    fresh_ledger.append([paper("2101.00001", ts(0))])
    conn = store.connection()
    # a merged key level of 300,000 keys, as a ledger of some 150,000 events holds
    conn.execute(
        "INSERT INTO event_keys (key, seq) "
        "SELECT 'e:' || md5(i::text), i + 10 FROM generate_series(1, 300000) AS i"
    )
    wanted = [r[0] for r in conn.execute("SELECT md5(i::text) FROM generate_series(1, 300000, 100) AS i")]
    with recording() as seen:
        assert fresh_ledger.store.imports.stored_events(wanted) == {}  # keys of no stored event
    assert _scans(store, seen, "event_keys") == []


def _small_levels_full(store: PostgresStore) -> None:
    """The two small key levels as full as they get (derived/keys.py: about the keys of 5,000 and
    45,000 events), with their statistics renewed as a move renews them."""
    conn = store.connection()
    for level, (first, count) in {"middle": (1_000, 90_000), "recent": (200_000, 10_000)}.items():
        conn.execute(
            f"INSERT INTO event_keys_{level} (key, seq) SELECT (CASE WHEN i % 2 = 0 THEN 'e:' ELSE 'o:' END) "
            f"|| md5(i::text), i FROM generate_series({first}, {first + count - 1}) AS i"
        )
        conn.execute(f"ANALYZE event_keys_{level}")


def _small_level_scans(store: PostgresStore, seen: dict[str, Any]) -> list[str]:
    """The plans of the statements seen that read a small key level whole (either way they may run)."""
    conn = store.connection()
    sizes = table_sizes(conn)
    found = []
    for s in seen.values():
        for mode in modes(s.params):
            plan = plan_of(conn, s.sql, s.params, mode)
            small = [t for t in seq_scans(plan, sizes, 1000) if t.endswith(("_recent", "_middle"))]
            found += [f"{mode}: {s.sql}\n{plan}"] if small else []
    assert any("event_keys" in s.sql for s in seen.values()), "no statement read the key levels"
    return found


def _some(prefix: str, first: int, last: int, step: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(first, last, step)]


def test_a_walk_checks_its_ids_by_probing_every_level(fresh_ledger: Ledger) -> None:
    store = planner_store(fresh_ledger)
    fresh_ledger.append([paper("2101.00001", ts(0))])
    _small_levels_full(store)
    conn = store.connection()
    # 6,400 ids, half of them stored (in either small level), as a walk's list
    stored = conn.execute("SELECT key FROM event_keys_all WHERE mod(seq, 7) = 0 AND key LIKE 'e:%%'")
    wanted = [k[2:] for (k,) in stored][:3_200] + _some("missing-", 0, 3_200, 1)
    assert len(wanted) == 6_400
    with recording() as seen:
        assert store.verifying.repeated_event_id(wanted) is None
    assert _small_level_scans(store, seen) == []


def test_a_walk_reads_the_small_levels_after_its_point_by_index(fresh_ledger: Ledger) -> None:
    store = planner_store(fresh_ledger)
    fresh_ledger.append([paper("2101.00001", ts(0))])
    _small_levels_full(store)
    conn = store.connection()
    for level, first in {"middle": 1_000, "recent": 200_000}.items():
        conn.execute(
            f"INSERT INTO check_works_{level} (work_id, source, observed_us, seq, recorded_us, notices) "
            f"SELECT 'w' || i, 'crossref', i, i, i, '[]' FROM generate_series({first}, {first + 29_999}) AS i"
        )
        conn.execute(f"ANALYZE check_works_{level}")
    # the walk's point a little before the head: the last rows of each level are what it reads
    with recording() as seen:
        assert sum(1 for _ in store.keys.index_after(205_000)) == 4_999 + 24_999
        assert sum(1 for _ in store.keys.index_after(25_000)) > 60_000
    assert _small_level_scans(store, seen) == []


def _levels_as_in_a_big_ledger(store: PostgresStore) -> None:
    """The small levels full and a merged level of 300,000 keys (a ledger of some 150,000 events)."""
    _small_levels_full(store)
    conn = store.connection()
    conn.execute(
        "INSERT INTO event_keys (key, seq) SELECT (CASE WHEN i % 2 = 0 THEN 'e:' ELSE 'o:' END) "
        "|| md5(i::text), i FROM generate_series(300000, 599999) AS i"
    )
    conn.execute("ANALYZE event_keys")


@pytest.mark.parametrize(
    "lookup",
    [
        pytest.param(lambda store, ids: store.imports.stored_events(ids), id="stored-event-ids"),
        pytest.param(lambda store, ids: store.imports.citing_papers(ids), id="steps-of-observations"),
    ],
)
def test_an_append_finds_its_keys_by_probing_every_level(fresh_ledger: Ledger, lookup: Any) -> None:
    store = planner_store(fresh_ledger)
    fresh_ledger.append([paper("2101.00001", ts(0))])
    _levels_as_in_a_big_ledger(store)
    # 6,400 ids (an append's batch), a third of them in each level that holds keys, none stored
    # as an event here (the levels' seqs are past the head): the lookup's plan is what is checked
    ids = _some("", 1_000, 91_000, 45) + _some("", 200_000, 210_000, 5) + _some("", 300_000, 600_000, 140)
    wanted = [hashlib.md5(str(i).encode()).hexdigest() for i in ids]
    with recording() as seen:
        assert lookup(store, wanted) == {}
    assert _scans(store, seen, "event_keys") == []

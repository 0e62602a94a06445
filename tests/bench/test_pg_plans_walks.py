"""bench/pg_plans.py finds a large table read through an index with no condition on it (a whole
index walk, which is not a `Seq Scan`), and not one probed by its index."""

from __future__ import annotations

import pytest

from bench.pg_plans import index_walks

SIZES = {"events": 1_000_000, "event_keys": 1_000_000, "projections": 4}

MERGED = """Merge Join  (cost=2086.00..112623.52 rows=492723 width=335)
  Merge Cond: (events.seq = event_keys.seq)
  ->  Index Scan using events_pkey on events  (cost=0.42..97393.95 rows=992821 width=335)
        Filter: ((observed_us > '-4611686018427387904'::bigint))
  ->  Sort  (cost=2085.58..2086.08 rows=200 width=8)
        ->  Index Only Scan using event_keys_pkey on event_keys  (cost=0.42..2.20 rows=1 width=43)
              Index Cond: (key = (u.key)::text)"""

PROBED = """Nested Loop  (cost=2076.36..3474.88 rows=492723 width=335)
  ->  HashAggregate  (cost=2075.93..2077.93 rows=200 width=8)
        ->  Index Only Scan using event_keys_pkey on event_keys  (cost=0.42..2.20 rows=1 width=43)
              Index Cond: (key = (u.key)::text)
  ->  Index Scan using events_pkey on events  (cost=0.42..8.30 rows=1 width=315)
        Index Cond: (seq = event_keys.seq)
        Filter: ((observed_us > '-4611686018427387904'::bigint))"""

SMALL = """Index Scan using projections_pkey on projections  (cost=0.15..8.17 rows=1 width=8)
  Filter: (name = 'spans'::text)"""


@pytest.mark.parametrize(
    ("plan", "walked"),
    [
        pytest.param(MERGED, ["events"], id="merge-join-walks-the-events-index"),
        pytest.param(PROBED, [], id="probes-by-index-condition"),
        pytest.param(SMALL, [], id="small-table"),
        pytest.param("Seq Scan on events  (cost=0.00..1.00 rows=1 width=8)", [], id="seq-scan-counted-apart"),
    ],
)
def test_index_walks(plan: str, walked: list[str]) -> None:
    assert index_walks(plan, SIZES, 5_000) == walked

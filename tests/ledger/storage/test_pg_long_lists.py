"""PostgreSQL plans a statement bound to a long list for that list (postgresql/store.py): never a
prepared generic plan, which compares `= ANY` with each element for every row."""

from __future__ import annotations

import uuid

import pytest

from ledger.storage.backend import is_pg_url
from ledger.storage.postgresql.store import PLAN_FOR_LIST, PostgresStore
from service.ledger import Ledger
from tests.factories import paper, ts


def _prepared(ledger: Ledger) -> list[str]:
    store = ledger.store
    assert isinstance(store, PostgresStore)
    conn = store.connection()
    return [r[0] for r in conn.execute("SELECT statement FROM pg_prepared_statements")]


@pytest.mark.parametrize(
    ("ids", "prepared"),
    [(1, True), (PLAN_FOR_LIST - 1, True), (PLAN_FOR_LIST, False), (10 * PLAN_FOR_LIST, False)],
)
def test_a_lookup_is_prepared_only_while_its_list_is_short(
    fresh_ledger: Ledger, ids: int, prepared: bool
) -> None:
    if not is_pg_url(fresh_ledger.url):
        pytest.skip("SQLite prepares every statement and binds lists as JSON text")
    fresh_ledger.append([paper("2101.00001", ts(0))])
    lookup = fresh_ledger.store.imports.stored_events
    known = fresh_ledger.store.read_log()[0].event_id
    wanted = [known] + [str(uuid.uuid4()) for _ in range(ids - 1)]
    for _ in range(8):  # psycopg prepares a statement on its fifth run
        assert set(lookup(wanted)) == {known}
    found = [s for s in _prepared(fresh_ledger) if "event_keys_all" in s]
    assert bool(found) == prepared

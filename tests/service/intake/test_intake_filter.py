"""service/intake/check.py: the filter in front of the scratch file only spares lookups; whether it
holds every key (saturated), almost none (wide) or some, the check remembers and refuses exactly alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.intake import check
from service.intake.load import import_file
from service.ledger import Ledger
from tests.service.intake.test_intake_load import history, line

# (bits of the filter, ids and observations held in memory, lines a chunk): saturated (one bit: every
# key may be there), a few bits (false hits and misses mixed), the real size
_FILTERS = [(0, 0, 4), (4, 7, 4), (check.FILTER_BITS, 0, 4), (check.FILTER_BITS, 7, 3)]

KEYS = st.binary(min_size=16, max_size=16)


@pytest.mark.parametrize(("bits", "held", "chunk"), _FILTERS)
def test_repeated_lines_are_duplicates_whatever_the_filter_holds(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bits: int, held: int, chunk: int
) -> None:
    monkeypatch.setattr(check, "FILTER_BITS", bits)
    monkeypatch.setattr(check, "HELD", held)
    monkeypatch.setattr(check, "CHUNK", chunk)
    events = history(8)  # 22 events; the first 10 again, far from where they were first
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(line(e) for e in [*events, *events[:10], *events[15:]]))
    got = import_file(fresh_ledger, path, batch_size=6)
    assert (got.appended, got.duplicates) == (22, 17)
    assert fresh_ledger.verify().ok


@settings(max_examples=60, deadline=None)
@given(bits=st.integers(0, 12), added=st.sets(KEYS, max_size=60), others=st.sets(KEYS, max_size=60))
def test_the_filter_holds_every_key_added(bits: int, added: set[bytes], others: set[bytes]) -> None:
    f = check._Filter(bits)
    f.add(added)
    assert set(f.maybe([*added, *others])) >= added
    assert f.maybe(sorted(added)) == sorted(added)  # in the order asked


@settings(max_examples=60, deadline=None)
@given(
    bits=st.integers(0, 10),
    held=st.integers(0, 12),
    chunks=st.lists(st.lists(st.integers(0, 40), max_size=8), max_size=10),
)
def test_what_is_remembered_is_answered_exactly(bits: int, held: int, chunks: list[list[int]]) -> None:
    """Chunks of keys from a small pool: each is asked for (ids and owners), then its new ones added;
    the answers are the model's, in memory, spilled, and with any filter."""
    check.FILTER_BITS, saved = bits, check.FILTER_BITS
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE ids (id BLOB PRIMARY KEY, fingerprint BLOB NOT NULL, line INTEGER NOT NULL)")
    conn.execute("CREATE TABLE owners (oid BLOB PRIMARY KEY, paper TEXT NOT NULL)")
    try:
        remembered = check._Remembered(conn, held)
        ids: dict[bytes, tuple[bytes, int]] = {}
        owners: dict[bytes, str] = {}
        for n, chunk in enumerate(chunks):
            keys = {i.to_bytes(16, "big") for i in chunk}
            asked = keys | {(i + 100).to_bytes(16, "big") for i in chunk}  # and some never added
            assert remembered.ids(asked) == {k: ids[k] for k in asked if k in ids}
            assert remembered.owners(asked) == {k: owners[k] for k in asked if k in owners}
            new = sorted(keys - ids.keys())
            rows = [(k, k[::-1], n) for k in new]
            remembered.add_ids(rows)
            ids.update((k, (f, w)) for k, f, w in rows)
            papers = [(k, f"2101.{n:05d}") for k in new if k[-1] % 2]
            remembered.add_owners(papers)
            owners.update(papers)
        every = {i.to_bytes(16, "big") for i in range(0, 141)}
        assert remembered.ids(every) == ids
        assert remembered.owners(every) == owners
    finally:
        check.FILTER_BITS = saved
        conn.close()

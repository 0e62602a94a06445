"""Instants (ledger/model/instants.py): one parser; a big cache for reads, a small one for writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.model.instants import parse_instant, parse_near, parse_ts
from service.ledger import Ledger
from tests.factories import paper, ts

_INSTANTS = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.text(alphabet="0123456789-:.TZz+ ", max_size=40),
)


def _parsed(parse: object, text: str) -> tuple[str, object]:
    try:
        return "us", parse(text)  # type: ignore[operator]
    except ValueError as e:
        return "refused", str(e)


@given(_INSTANTS)
def test_the_cached_and_the_plain_parsers_agree_on_every_text(text: str) -> None:
    assert _parsed(parse_ts, text) == _parsed(parse_instant, text) == _parsed(parse_near, text)


def test_appends_and_walks_leave_the_read_cache_alone(imported_ledger: Ledger) -> None:
    # a bulk import parses each event's instants once: were they cached, millions of them would
    # push out what the read paths parse again on every request
    parse_ts.cache_clear()
    imported_ledger.append([paper("2601.00001", ts(5)), paper("2601.00002", ts(6, style=2))])
    report = imported_ledger.verify()
    assert report.ok and report.events_checked > 1
    assert parse_ts.cache_info().currsize == 0
    near = parse_near.cache_info()
    assert near.hits > 0 and near.maxsize == 1024 and near.currsize <= 1024  # met again close by
    imported_ledger.record("2509.02480")
    assert parse_ts.cache_info().currsize > 0


@pytest.mark.parametrize("text", ["2026-13-01T00:00:00Z", "2026-01-01T00:00:00", "yesterday"])
def test_a_refused_instant_is_refused_by_both(text: str) -> None:
    with pytest.raises(ValueError, match=r"timestamp|2026"):
        parse_instant(text)
    with pytest.raises(ValueError, match=r"timestamp|2026"):
        parse_ts(text)

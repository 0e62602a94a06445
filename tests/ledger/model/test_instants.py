"""Instants (ledger/model/instants.py): one parser; a big cache for reads, a small one for writes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.model import instants
from ledger.model.instants import parse_instant, parse_instants, parse_near, parse_ts
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


# instants as the ledger writes them and as others may spell them: a page of them mixes the two
_SPELLED = st.one_of(
    _INSTANTS,
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat().replace("+00:00", "Z")),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dt%H:%M:%Sz")),
)


def _each(texts: list[str]) -> tuple[str, object]:
    try:
        return "us", [parse_instant(t) for t in texts]
    except ValueError:
        return "refused", None


@given(st.lists(_SPELLED, max_size=8))
def test_a_page_of_instants_parses_as_each_one_does(texts: list[str]) -> None:
    """The page parser's compiled path answers what parse_instant answers of each text, or refuses
    the page when parse_instant refuses any of them."""
    try:
        got: tuple[str, object] = "us", parse_instants(texts)
    except ValueError:
        got = "refused", None
    assert got == _each(texts)


@given(_SPELLED)
def test_the_common_spelling_parses_as_every_check_would(text: str) -> None:
    """parse_instant's short path for the common spelling answers what its full path (each check
    made and named) answers, refusals with the same message."""
    assert _parsed(parse_instant, text) == _parsed(instants._parse_spelled, text)


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00+00:01",  # before the first instant in UTC
        "9999-12-31T23:59:59-00:01",  # after the last
        "2026-01-01T00:00:00.1234567Z",  # seven fractional digits
        "2026-01-01T00:00:00+24:00",  # an offset of a day
        "2026-01-01T00:00:00\n2026-01-01T00:00:00Z",  # two instants in one text
        "\u0662026-01-01T00:00:00Z",  # a digit that is not ASCII
        "2026-02-30T00:00:00Z",  # no such day
        "2026-01-01T00:00Z",  # no seconds: ISO 8601 allows it, RFC 3339 does not
    ],
)
def test_a_page_with_one_refused_instant_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_instant(text)
    assert refused.value.args == pytest.raises(ValueError, instants._parse_spelled, text).value.args
    with pytest.raises(ValueError, match=re.escape(str(refused.value))):
        parse_instants(["2026-01-01T00:00:00Z", text])


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

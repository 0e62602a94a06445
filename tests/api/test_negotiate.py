"""Accept weights by RFC 9110 §12.5.1: the most specific matching range gives the weight; malformed
ranges are left out, never the whole header."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.negotiate import prefers_html, prefers_json, quality

CHROMIUM = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,"
    "application/signed-exchange;v=b3;q=0.7"
)
FIREFOX = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize(
    ("accept", "html", "json"),
    [
        (None, 1.0, 1.0),  # no Accept: anything
        ("*/*", 1.0, 1.0),  # curl
        ("", 0.0, 0.0),  # an empty list: nothing
        (CHROMIUM, 1.0, 0.8),
        (FIREFOX, 1.0, 0.8),
        ("application/json", 0.0, 1.0),
        ("TEXT/Html;Q=0.4, Application/JSON;q=0.3", 0.4, 0.3),  # case-insensitive, the q name too
        ("text/*;q=0.3, text/html;q=0.7, */*;q=0.5", 0.7, 0.5),  # the most specific range wins
        ("text/html;level=1;q=0.2, */*;q=0.9", 0.2, 0.9),
        ("text/html ; q=0.25 ,application/json", 0.25, 1.0),  # whitespace around separators
        ("text/html;q=1.5, */*;q=0.1", 0.1, 0.1),  # 1.5 is no weight: that range is malformed
        ("text/html;q=0.1234, */*;q=0.1", 0.1, 0.1),  # four decimals: malformed
        ("text/html;q=abc, */*;q=0.1", 0.1, 0.1),
        ("nonsense, text/html;q=0.6", 0.6, 0.0),  # one malformed range does not lose the rest
        ('text/html;x="a,b;q=0";q=0.3, application/json;q=0.2', 0.3, 0.2),  # a quoted ',' and ';'
        ("text/html;q=0", 0.0, 0.0),  # explicitly not acceptable
        ("text/html;q=1.000, application/json;q=0.", 1.0, 0.0),
        (",,, ,", 0.0, 0.0),
    ],
)
def test_quality(accept: str | None, html: float, json: float) -> None:
    assert (quality(accept, "text/html"), quality(accept, "application/json")) == (html, json)


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        (None, False),
        ("*/*", False),  # a tie: JSON, the API's answer
        (CHROMIUM, True),
        (FIREFOX, True),
        ("application/json, text/html", False),
        ("text/html, application/json;q=0.99", True),
        ("text/html;q=0", False),
        ("", False),
    ],
)
def test_prefers_html(accept: str | None, html: bool) -> None:
    assert prefers_html(accept) is html


def test_prefers_json_for_a_url_whose_default_is_the_page() -> None:
    assert not prefers_json("*/*") and not prefers_json(CHROMIUM) and not prefers_json(None)
    assert prefers_json("application/json") and prefers_json("application/json, text/html;q=0.5")


@given(st.text(max_size=200))
def test_any_header_is_read_without_raising(accept: str) -> None:
    assert 0.0 <= quality(accept, "text/html") <= 1.0
    assert isinstance(prefers_html(accept), bool)


WEIGHTS = st.sampled_from(["0", "0.1", "0.5", "0.999", "1", "1.0"])
RANGES = st.sampled_from(["text/html", "application/json", "text/*", "*/*", "image/png", "application/*"])


@given(st.lists(st.tuples(RANGES, WEIGHTS), min_size=1, max_size=8, unique_by=lambda r: r[0]), st.randoms())
def test_the_order_of_distinct_ranges_does_not_matter(ranges: list[tuple[str, str]], rnd: object) -> None:
    accept = ", ".join(f"{r};q={w}" for r, w in ranges)
    shuffled = list(ranges)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    again = ", ".join(f"{r};q={w}" for r, w in shuffled)
    assert prefers_html(accept) == prefers_html(again)
    assert quality(accept, "text/html") == quality(again, "text/html")


@given(st.lists(st.tuples(RANGES, WEIGHTS), max_size=6), st.sampled_from(["a", "text/", "x/y/z", "/html"]))
def test_a_malformed_range_changes_nothing(ranges: list[tuple[str, str]], junk: str) -> None:
    accept = ", ".join(f"{r};q={w}" for r, w in ranges)
    with_junk = ", ".join([junk, *(f"{r};q={w}" for r, w in ranges)])
    assert quality(with_junk, "text/html") == quality(accept, "text/html")
    assert prefers_html(with_junk) == prefers_html(accept)

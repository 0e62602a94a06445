"""api/lru.py: the size-bounded least-recently-used map behind the record and timeline caches."""

from __future__ import annotations

import pytest

from api.records.lru import SizedLRU


def _lru(limit: int = 10) -> SizedLRU[str, bytes]:
    return SizedLRU(limit, len)


def test_a_value_is_held_under_its_key() -> None:
    lru = _lru()
    lru.put("a", b"123")
    assert lru.get("a") == b"123"
    assert lru.get("b") is None


def test_the_least_recently_used_goes_first_once_past_the_limit() -> None:
    lru = _lru(10)
    lru.put("a", b"xxxx")
    lru.put("b", b"xxxx")
    assert lru.get("a") == b"xxxx"  # now b is the least recently used
    lru.put("c", b"xxxx")
    assert lru.get("b") is None
    assert lru.get("a") == b"xxxx" and lru.get("c") == b"xxxx"


def test_replacing_a_value_counts_only_the_new_one() -> None:
    lru = _lru(10)
    lru.put("a", b"x" * 9)
    lru.put("a", b"x" * 2)
    lru.put("b", b"x" * 8)  # 2 + 8 = 10: both stay
    assert lru.get("a") == b"xx" and lru.get("b") == b"x" * 8


@pytest.mark.parametrize(("size", "held"), [(10, True), (11, False)])
def test_a_value_larger_than_the_limit_is_not_held(size: int, held: bool) -> None:
    lru = _lru(10)
    lru.put("small", b"x")
    lru.put("big", b"x" * size)
    assert (lru.get("big") is not None) is held
    assert (lru.get("small") is None) is held  # holding the big one drops the rest

"""The lingering close's rule: how long a refused connection's rest is read and dropped."""

from __future__ import annotations

import pytest

from api.server import LINGER_S, linger_allowed

MIB = 1024 * 1024


@pytest.mark.parametrize(
    "received, timeout, rate, allowed",
    [
        (0, 30.0, MIB, LINGER_S),  # nothing came after the answer: the short wait only
        (1, 30.0, MIB, LINGER_S + 1 / MIB),  # a byte trickled: barely more
        (16 * MIB, 30.0, MIB, LINGER_S + 16),  # a big body arriving steadily earns its time
        (100 * MIB, 30.0, MIB, 30.0),  # never more than a body itself may take
        (100 * MIB, 1.0, MIB, LINGER_S),  # a body timeout under the short wait does not shorten it
    ],
    ids=["nothing", "a-byte", "16-MiB", "capped-by-body-timeout", "short-body-timeout"],
)
def test_what_arrives_after_a_refusal_earns_time_up_to_a_body_timeout(
    received: int, timeout: float, rate: int, allowed: float
) -> None:
    assert linger_allowed(received, timeout, rate) == pytest.approx(allowed)

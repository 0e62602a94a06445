"""The rule both codec property tests hold quick_event to: the exact path's event, or none."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.model import events as ev
from ledger.model.codec import decode_json, quick_event
from ledger.model.errors import InvalidEvent


def exact_event(raw: bytes) -> Any:
    """What the exact path decodes (before the rules), or the InvalidEvent it raises."""
    try:
        return msgspec.convert(decode_json(raw), ev.Event, strict=True)
    except (InvalidEvent, msgspec.ValidationError) as e:
        return e


def assert_quick_agrees(raw: bytes) -> Any:
    """quick_event steps aside (None) or gives the exact path's event, and steps aside where the
    exact path refuses; answers the exact path's outcome."""
    quick, outcome = quick_event(raw), exact_event(raw)
    if isinstance(outcome, Exception):
        assert quick is None, (raw, outcome)
    else:
        assert quick is None or quick == outcome
    return outcome

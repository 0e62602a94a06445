"""The standing checks' per-work rows (check_works): one per covered work, from the check itself."""

from __future__ import annotations

from ledger.model.codec import canonical, decode_data
from ledger.model.events import ChainLink, Notice, StandingChecked
from ledger.model.facts import CheckWorkRow

_STANDING = "standing.checked"


def check_rows(event: StandingChecked, seq: int, observed_us: int, recorded_us: int) -> list[CheckWorkRow]:
    """The check_works rows of a standing check: one per covered work, '*' for every work."""
    source = event.data.source
    if event.data.work_ids is None:
        return [CheckWorkRow("*", source, observed_us, seq, recorded_us, canonical(event.data.notices))]
    by_work: dict[str, list[Notice]] = {w: [] for w in event.data.work_ids}
    for n in event.data.notices:
        by_work[n.work_id].append(n)  # type: ignore[index]
    return [
        CheckWorkRow(w, source, observed_us, seq, recorded_us, canonical(ns)) for w, ns in by_work.items()
    ]


def link_checks(link: ChainLink) -> list[CheckWorkRow]:
    """The check_works rows a stored event implies (none unless it is a standing check)."""
    e = link.event
    if e.type != _STANDING:
        return []
    return stored_checks(e.seq, e.observed_at, link.observed_us, link.recorded_us, e.data)


def stored_checks(
    seq: int, observed_at: str, observed_us: int, recorded_us: int, data: str | bytes
) -> list[CheckWorkRow]:
    """The check_works rows of a stored standing check, from its columns and stored data."""
    raw = data.encode() if isinstance(data, str) else data
    event = StandingChecked(observed_at=observed_at, data=decode_data(_STANDING, raw))
    return check_rows(event, seq, observed_us, recorded_us)

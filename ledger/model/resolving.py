"""What the resolver reads of one observation and what it answers (resolver-v1.md).

Apart from works.py because events.py carries the works' types, and these carry the events'.
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.model.events import CitedWork, Status
from ledger.model.works import CatalogueWork, Evidence, Reference


class RefInput(NamedTuple):
    """What the resolver reads of one observation: the reference as its source gave it (absent for a
    reference imported from a record) and the cited work its latest citation displays."""

    observation_id: str
    reference: Reference | None
    cited: CitedWork | None


class Decision(NamedTuple):
    """The resolver's answer for one reference: a record-v1 status, the work matched, and why."""

    status: Status
    work: CatalogueWork | None
    evidence: Evidence

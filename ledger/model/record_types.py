"""The shape of a pith.paper-citation-record.v1: what an import decodes and what a projection builds.

Encoded by `codec.canonical` (msgspec, sorted keys), a Record gives the record's canonical bytes: the
keys a record leaves out (`standing_notice.observation` when unavailable, `links.cited_paper` without a
cited paper, `state_counts.pending` at zero) are fields with a default that `omit_defaults` omits.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from ledger.model.events import CitedWork, Notice, Status

Pending = Literal["pending"]


# gc=False: a record is a tree of values, never in a reference cycle (as events.py's data objects)
class _Strict(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    pass


class PaperBlock(_Strict, frozen=True):
    arxiv_id: str
    last_updated: str
    latest_version: int
    primary_category: str | None
    snapshot_observed_at: str
    submitted_at: str
    title: str


class SnapshotBlock(_Strict, frozen=True):
    arxiv_id: str
    last_updated: str
    snapshot_observed_at: str
    submitted_at: str
    title: str
    version: int


class Citation(_Strict, frozen=True):
    cited_paper: SnapshotBlock | None
    cited_work: CitedWork | None
    citing_paper: SnapshotBlock | None
    reference_index: int
    source: str
    source_observed_at: str


class Resolution(_Strict, frozen=True):
    observed_at: str | None
    resolver_source: str | None
    status: Status | Pending


class Receipt(_Strict, frozen=True):
    observed_at: str
    source: str


class NoticeEvent(Notice, frozen=True):
    """A notice as a record shows it: with the check's observed_at and source added."""

    observed_at: str
    source: str


class StandingNotice(_Strict, frozen=True, omit_defaults=True):
    events: list[NoticeEvent]
    reason: str | None
    source_receipts: list[Receipt]
    state: Literal["measured", "unavailable"]
    observation: str | None = None  # written only when measured


class ObservationLinks(_Strict, frozen=True, omit_defaults=True):
    citing_paper: str
    cited_paper: str | None = None  # written only when the cited paper is shown


class Observation(_Strict, frozen=True):
    citation: Citation
    links: ObservationLinks
    observation_digest: str
    observation_id: str
    resolution: Resolution
    standing_notice: StandingNotice


class Measurement(_Strict, frozen=True):
    metric: str
    observed_at: str
    query_url: str | None
    source: str
    source_release: str | None
    value: int


class Caps(_Strict, frozen=True):
    """The record's limits, fixed by record-v1.md (an import refuses others): the SQL statements that build
    it, the outbound and inbound observations it lists."""

    database_statements: Annotated[int, Meta(ge=6, le=6)]
    inbound: Annotated[int, Meta(ge=100, le=100)]
    outbound: Annotated[int, Meta(ge=100, le=100)]


class CoverageLane(_Strict, frozen=True):
    """One coverage lane: what a part of the record counts, out of how many, from which source."""

    denominator: int
    lane: str
    note: str
    records_observed: int
    source: str
    source_observed_at: str | None
    state: Literal["measured"]


class RecordLinks(_Strict, frozen=True):
    evidence: str
    html: str
    integrity: str
    json: str
    paper: str


class StateCounts(_Strict, frozen=True, omit_defaults=True):
    """Displayed outbound observations per status: all six always, pending only when some are."""

    malformed_identifier: int
    metadata_mismatch: int
    parse_uncertain: int
    unresolved: int
    verified_exact: int
    verified_fuzzy: int
    pending: int = 0

    def get(self, status: str) -> int:
        """The count of one status (pending included)."""
        value: int = getattr(self, status)
        return value


class ReferenceResolution(_Strict, frozen=True):
    displayed: int
    state_counts: StateCounts
    total_outbound_references: int


class Record(_Strict, frozen=True):
    as_of: str
    caps: Caps
    context_digest: str
    coverage: list[CoverageLane]
    external_citation_measurements: list[Measurement]
    inbound: list[Observation]
    links: RecordLinks
    outbound: list[Observation]
    paper: PaperBlock
    reference_resolution: ReferenceResolution
    refusal: str
    schema: Literal["pith.paper-citation-record.v1"]
    standing_sources: list[Receipt]
    thesis: str

    def lane(self, name: str) -> CoverageLane:
        """The coverage lane of that name."""
        return next(c for c in self.coverage if c.lane == name)

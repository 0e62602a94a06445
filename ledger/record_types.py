"""The shape of a pith.paper-citation-record.v1, for strict decoding on import."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

from .events import CitedWork, Notice, Status


class _Strict(Struct, frozen=True, forbid_unknown_fields=True):
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
    status: Status | Literal["pending"]


class Receipt(_Strict, frozen=True):
    observed_at: str
    source: str


class NoticeEvent(Notice, frozen=True):
    """A notice as a record shows it: with the check's observed_at and source added."""

    observed_at: str
    source: str


class StandingNotice(_Strict, frozen=True):
    events: list[NoticeEvent]
    reason: str | None
    source_receipts: list[Receipt]
    state: Literal["measured", "unavailable"]
    observation: str | None = None


class ObservationLinks(_Strict, frozen=True):
    citing_paper: str
    cited_paper: str | None = None


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


class Record(_Strict, frozen=True):
    as_of: str
    caps: dict[str, Any]
    context_digest: str
    coverage: list[dict[str, Any]]
    external_citation_measurements: list[Measurement]
    inbound: list[Observation]
    links: dict[str, Any]
    outbound: list[Observation]
    paper: PaperBlock
    reference_resolution: dict[str, Any]
    refusal: str
    schema: Literal["pith.paper-citation-record.v1"]
    standing_sources: list[Receipt]
    thesis: str

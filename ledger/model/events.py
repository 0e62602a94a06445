"""Event types: frozen, tagged msgspec Structs, one per event kind of record-v1.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Generic, Literal, NamedTuple, TypeVar

from msgspec import UNSET, Meta, Struct, UnsetType

from ledger.model.works import Evidence, Reference, WorkData

Status = Literal[
    "verified_exact",
    "verified_fuzzy",
    "unresolved",
    "parse_uncertain",
    "malformed_identifier",
    "metadata_mismatch",
]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]

NoticeKind = Literal[
    "retraction",
    "partial_retraction",
    "withdrawal",
    "removal",
    "expression_of_concern",
    "correction",
    "reinstatement",
]
NOTICE_KINDS: tuple[str, ...] = NoticeKind.__args__  # type: ignore[attr-defined]

NonNegInt = Annotated[int, Meta(ge=0)]
PositiveInt = Annotated[int, Meta(ge=1)]


# gc=False: a data object is a tree of JSON values, never in a reference cycle, so the cyclic collector
# need not track the thousands a read decodes (a paper's stream, a timeline); its full passes over them
# were tens of milliseconds of a page
class _Data(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """Base of every `data` object: all keys required, unknown keys refused."""


class CitedWork(_Data, frozen=True):
    arxiv_id: str | None
    doi: str | None
    metadata_source: str | None
    pith_arxiv_id: str | None
    snapshot_observed_at: str
    title: str | None
    venue: str | None
    work_id: str | None
    year: int | None


class Notice(_Data, frozen=True):
    work_id: str | None
    kind: NoticeKind
    notice_doi: str | None
    record_id: str | None
    raw_type: str | None
    reasons: list[str]
    notice_date: str | None
    url: str | None


class PaperData(_Data, frozen=True):
    arxiv_id: str
    title: str
    primary_category: str | None
    submitted_at: str
    last_updated: str
    version: PositiveInt


class CitationData(_Data, frozen=True):
    observation_id: str
    citing_arxiv_id: str
    reference_index: NonNegInt
    source: str
    cited_work: CitedWork | None
    # the reference as its source gave it (resolver-v1.md): absent when absent, never null, so the
    # events that predate it keep their bytes; not part of the record's JSON
    reference: Reference | UnsetType = UNSET


class ResolutionData(_Data, frozen=True):
    observation_id: str
    status: Status
    resolver_source: str | None
    cited_work: CitedWork | None
    cited_arxiv_id: str | None
    # resolver-v1.md: optional, absent when absent (never null), so events before it keep their bytes
    evidence: Evidence | UnsetType = UNSET


class StandingData(_Data, frozen=True):
    source: str
    work_ids: list[str] | None
    notices: list[Notice]


class MeasurementData(_Data, frozen=True):
    arxiv_id: str
    source: str
    metric: str
    value: NonNegInt
    source_release: str | None
    query_url: str | None


class _Envelope(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", kw_only=True):
    """What a client sends: type, observed_at, data and an optional event_id."""

    observed_at: str
    event_id: str | None = None


class PaperObserved(_Envelope, tag="paper.observed", frozen=True):
    data: PaperData


class CitationObserved(_Envelope, tag="citation.observed", frozen=True):
    data: CitationData


class ResolutionObserved(_Envelope, tag="resolution.observed", frozen=True):
    data: ResolutionData


class StandingChecked(_Envelope, tag="standing.checked", frozen=True):
    data: StandingData


class MeasurementObserved(_Envelope, tag="measurement.observed", frozen=True):
    data: MeasurementData


class WorkObserved(_Envelope, tag="work.observed", frozen=True):
    data: WorkData


Event = (
    PaperObserved
    | CitationObserved
    | ResolutionObserved
    | StandingChecked
    | MeasurementObserved
    | WorkObserved
)
EVENT_TYPES: dict[str, type[_Envelope]] = {
    "paper.observed": PaperObserved,
    "citation.observed": CitationObserved,
    "resolution.observed": ResolutionObserved,
    "standing.checked": StandingChecked,
    "measurement.observed": MeasurementObserved,
    "work.observed": WorkObserved,
}
DATA_TYPES: dict[str, type[Struct]] = {
    "paper.observed": PaperData,
    "citation.observed": CitationData,
    "resolution.observed": ResolutionData,
    "standing.checked": StandingData,
    "measurement.observed": MeasurementData,
    "work.observed": WorkData,
}


# What an envelope's `data` holds: the stored canonical bytes, or (decoding a bundle) the JSON as sent.
# Bare `StoredEvent` means bytes to the type checker; 3.11's TypeVar takes no default at run time.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVar

    DataT = _TypeVar("DataT", default=bytes)
else:
    DataT = TypeVar("DataT")


class StoredEvent(Struct, Generic[DataT], frozen=True, forbid_unknown_fields=True):
    """The stored envelope, as served by GET /evidence and `ledger events`, and listed in a bundle."""

    seq: int
    event_id: str
    stream: str
    stream_version: int
    type: str
    observed_at: str
    recorded_at: str
    data: DataT  # canonical JSON bytes of the data object, exactly as hashed
    prev_hash: str
    hash: str


class ChainLink(NamedTuple):
    """A stored event and the index columns its instants derive: what stores insert and walks read."""

    event: StoredEvent
    observed_us: int
    recorded_us: int

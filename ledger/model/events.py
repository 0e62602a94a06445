"""Event types: frozen, tagged msgspec Structs, one per event kind of record-v1.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Generic, Literal, NamedTuple, TypeVar

from msgspec import UNSET, Meta, Struct, UnsetType, structs

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


_D = TypeVar("_D")


class _Envelope(Struct, Generic[_D], frozen=True, forbid_unknown_fields=True, tag_field="type", kw_only=True):
    """What a client sends: type, observed_at, data and an optional event_id."""

    observed_at: str
    event_id: str | None = None
    data: _D


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


class CollectionData(_Data, frozen=True):
    name: str
    add: list[str]
    remove: list[str]


class MeasurementData(_Data, frozen=True):
    arxiv_id: str
    source: str
    metric: str
    value: NonNegInt
    source_release: str | None
    query_url: str | None


# Each event kind: its tag and the type of its data, named once.


class PaperObserved(_Envelope[PaperData], tag="paper.observed", frozen=True):
    """A paper's arXiv metadata, on the stream `paper:{arxiv_id}`."""


class CitationObserved(_Envelope[CitationData], tag="citation.observed", frozen=True):
    """One reference a paper makes, on the stream `paper:{citing_arxiv_id}`."""


class ResolutionObserved(_Envelope[ResolutionData], tag="resolution.observed", frozen=True):
    """How a reference was resolved, on the stream of its citing paper."""


class StandingChecked(_Envelope[StandingData], tag="standing.checked", frozen=True):
    """A retraction and correction check of works, on the stream `source:{source}`."""


class MeasurementObserved(_Envelope[MeasurementData], tag="measurement.observed", frozen=True):
    """A dated citation count of a paper, on the stream `paper:{arxiv_id}`."""


class WorkObserved(_Envelope[WorkData], tag="work.observed", frozen=True):
    """A catalogue work's metadata, on the stream `work:{doi}`."""


class CollectionChanged(_Envelope[CollectionData], tag="collection.changed", frozen=True):
    """Papers added to and removed from a named collection, on the stream `collection:{name}`."""


Event = (
    PaperObserved
    | CitationObserved
    | ResolutionObserved
    | StandingChecked
    | MeasurementObserved
    | WorkObserved
    | CollectionChanged
)
# the tables below are read off the union, so a new kind is added in one place
EVENT_TYPES: dict[str, type[Event]] = {
    t.__struct_config__.tag: t
    for t in Event.__args__  # type: ignore[union-attr]
}
# each envelope names its data type once, as the argument of its base (_Envelope[PaperData])
DATA_TYPES: dict[str, type[Struct]] = {
    tag: next(f.type for f in structs.fields(t) if f.name == "data") for tag, t in EVENT_TYPES.items()
}


class GlanceWork(Struct, frozen=True, gc=False):
    work_id: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pith_arxiv_id: str | None = None


class Glance(Struct, frozen=True, gc=False):
    """The few fields of a stored event's data that indexes and bundle checks read, of any event type:
    decoding only these skips the rest (the data was validated when it was appended)."""

    observation_id: str | None = None
    arxiv_id: str | None = None
    citing_arxiv_id: str | None = None
    reference_index: int | None = None
    cited_arxiv_id: str | None = None
    cited_work: GlanceWork | None = None


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

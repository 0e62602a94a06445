"""OpenAPI documentation only: answer models, request-body schemas and realistic examples.

Nothing here parses a request: bodies are read raw and decoded by msgspec in the ledger.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, TypedDict

import msgspec
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field, GetPydanticSchema, WithJsonSchema
from pydantic.json_schema import models_json_schema
from pydantic_core import core_schema

from ledger.model.codec import ARXIV_RE, UUID_RE
from ledger.model.events import EVENT_TYPES, Event, NonNegInt, StoredEvent
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.record_types import Record

# Documented constraints the ledger checks in code (the msgspec types alone say "string").
ARXIV_PATTERN = f"^(?:{ARXIV_RE.pattern})$"
UUID_PATTERN = f"^{UUID_RE.pattern}$"
# Month-aware days (a 29 February of a common year is the one date this still admits).
_DATE = (
    r"[1-9]\d{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|02-(?:0[1-9]|1\d|2\d))"
)
_TS = _DATE + r"[Tt](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
TIMESTAMP_PATTERN = f"^{_TS}$"
# as_of/known_at: an instant, a date (end of that day UTC), or empty (= now / no limit)
AS_OF_PATTERN = f"^(?:{_TS}|{_DATE}|)$"

# -- request bodies (msgspec types of the ledger, turned into JSON Schema components) ---------


class EventBatch(msgspec.Struct, forbid_unknown_fields=True):
    """The POST /events body: events appended atomically, with optional optimistic concurrency."""

    events: list[Event]
    expected_versions: dict[str, NonNegInt] | None = None


_TS_RULE: JsonObject = {"pattern": TIMESTAMP_PATTERN}
_ARXIV_RULE: JsonObject = {"pattern": ARXIV_PATTERN}
_UUID_RULE: JsonObject = {"pattern": UUID_PATTERN}
_BLOCK: dict[str, JsonObject] = {
    "arxiv_id": _ARXIV_RULE,
    "last_updated": _TS_RULE,
    "snapshot_observed_at": _TS_RULE,
    "submitted_at": _TS_RULE,
}
_RULES: dict[str, dict[str, JsonObject]] = {
    **{t.__name__: {"observed_at": _TS_RULE, "event_id": _UUID_RULE} for t in EVENT_TYPES.values()},
    "PaperData": {"arxiv_id": _ARXIV_RULE, "submitted_at": _TS_RULE, "last_updated": _TS_RULE},
    "CitationData": {"observation_id": _UUID_RULE, "citing_arxiv_id": _ARXIV_RULE},
    "ResolutionData": {"observation_id": _UUID_RULE, "cited_arxiv_id": _ARXIV_RULE},
    "StandingData": {"source": {"minLength": 1}},
    "MeasurementData": {"arxiv_id": _ARXIV_RULE},
    "WorkData": {
        "source": {"minLength": 1},
        "doi": {"pattern": "^10\\.[^A-Z]*/[^A-Z]*$"},
        "arxiv_id": _ARXIV_RULE,
    },
    "CitedWork": {"snapshot_observed_at": _TS_RULE},
    "PaperBlock": {**_BLOCK, "latest_version": {"minimum": 1}},
    "SnapshotBlock": {**_BLOCK, "version": {"minimum": 1}},
    "Citation": {"source_observed_at": _TS_RULE, "reference_index": {"minimum": 0}},
    "Resolution": {"observed_at": _TS_RULE},
    "Receipt": {"observed_at": _TS_RULE},
    "NoticeEvent": {"observed_at": _TS_RULE},
    "Measurement": {"observed_at": _TS_RULE, "value": {"minimum": 0}},
    "Observation": {"observation_id": _UUID_RULE},
    "ObservationLinks": {
        "citing_paper": {"pattern": f"^/paper/(?:{ARXIV_RE.pattern})$"},
        "cited_paper": {"pattern": f"^/paper/(?:{ARXIV_RE.pattern})$"},
    },
    "Record": {"as_of": _TS_RULE},
}


def schema_components() -> dict[str, JsonObject]:
    """JSON Schema components of the request bodies, the record and the envelope, named as the ledger's
    own types, with its rules on ids and timestamps written in (so a generated body is more often valid)."""
    _, found = msgspec.json.schema_components(
        [EventBatch, Record, StoredEvent], ref_template="#/components/schemas/{name}"
    )
    components = {name: _object(schema) for name, schema in found.items()}
    components["Envelope"] = _envelope(components.pop("StoredEvent"))
    for name, rules in _RULES.items():
        properties = _object(components[name]["properties"])
        for field_name, rule in rules.items():
            prop = _object(properties[field_name])
            # a nullable field is anyOf [T, null]: the rule belongs to the non-null branch
            any_of = prop.get("anyOf")
            for branch in map(_object, any_of if isinstance(any_of, list) else [prop]):
                if branch.get("type") != "null":
                    branch.update(rule)
    return components


def _object(value: Json) -> JsonObject:
    """value, a JSON Schema object (a component, its properties, one property)."""
    if not isinstance(value, dict):
        raise TypeError(f"a JSON Schema object was expected, not {type(value).__name__}")
    return value


def _envelope(stored: JsonObject) -> JsonObject:
    """The served envelope: StoredEvent's fields, with `data` embedded as the JSON object it encodes."""
    _object(stored["properties"])["data"] = {"type": "object", "additionalProperties": True}
    # an answer's schema: a client should accept an envelope that grows a field
    del stored["additionalProperties"]
    return {
        **stored,
        "title": "Envelope",
        "description": "A stored event: enough to recompute its hash with no server code.",
    }


def _ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


_PAPER = "2509.02480"
_WORK: JsonObject = {
    "arxiv_id": "2310.04610",
    "doi": None,
    "metadata_source": "pith",
    "pith_arxiv_id": "2310.04610",
    "snapshot_observed_at": "2026-08-05T11:38:43.814682Z",
    "title": "DeepSpeed4Science Initiative: Enabling Large-Scale Scientific Discovery through "
    "Sophisticated AI System Technologies",
    "venue": "cs.AI",
    "work_id": "42ed2db3-bd24-44d5-b099-4e813676067d",
    "year": 2023,
}


class ExampleEvent(TypedDict):
    """An event as a client sends it."""

    type: str
    observed_at: str
    data: JsonObject


# One event of each type, with values taken from the real record of arXiv:2509.02480.
EVENT_EXAMPLES: dict[str, ExampleEvent] = {
    "paper.observed": {
        "type": "paper.observed",
        "observed_at": "2026-08-07T16:39:03.985890Z",
        "data": {
            "arxiv_id": _PAPER,
            "title": "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training to "
            "Break the GPU Memory Wall",
            "primary_category": "cs.DC",
            "submitted_at": "2025-09-02T16:30:49Z",
            "last_updated": "2025-09-02T16:30:49Z",
            "version": 1,
        },
    },
    "citation.observed": {
        "type": "citation.observed",
        "observed_at": "2026-08-05T11:38:41.012743Z",
        "data": {
            "observation_id": "ce9ea7f7-381d-48ca-ab94-cb46c01aba5f",
            "citing_arxiv_id": _PAPER,
            "reference_index": 34,
            "source": "pdf_text",
            "cited_work": None,
        },
    },
    "resolution.observed": {
        "type": "resolution.observed",
        "observed_at": "2026-08-05T11:38:43.894727Z",
        "data": {
            "observation_id": "ce9ea7f7-381d-48ca-ab94-cb46c01aba5f",
            "status": "verified_exact",
            "resolver_source": "local_arxiv",
            "cited_work": _WORK,
            "cited_arxiv_id": "2310.04610",
        },
    },
    "standing.checked": {
        "type": "standing.checked",
        "observed_at": "2026-08-08T06:32:00.761636+00:00",
        "data": {
            "source": "crossref",
            "work_ids": ["42ed2db3-bd24-44d5-b099-4e813676067d"],
            "notices": [],
        },
    },
    "measurement.observed": {
        "type": "measurement.observed",
        "observed_at": "2026-08-09T10:00:00Z",
        "data": {
            "arxiv_id": _PAPER,
            "source": "semantic_scholar",
            "metric": "citationCount",
            "value": 4,
            "source_release": None,
            "query_url": "https://api.semanticscholar.org/graph/v1/paper/arXiv:2509.02480",
        },
    },
    "work.observed": {
        "type": "work.observed",
        "observed_at": "2026-11-01T00:00:00Z",
        "data": {
            "doi": "10.1109/sc41405.2020.00024",
            "source": "crossref",
            "title": "ZeRO: Memory optimizations Toward Training Trillion Parameter Models",
            "authors": [{"family": "Rajbhandari", "given": "Samyam"}, {"family": "Rasley", "given": "Jeff"}],
            "container_title": "SC20: International Conference for High Performance Computing, "
            "Networking, Storage and Analysis",
            "year": 2020,
            "volume": None,
            "issue": None,
            "pages": "1-16",
            "type": "proceedings-article",
            "arxiv_id": "1910.02054",
        },
    },
    "collection.changed": {
        "type": "collection.changed",
        "observed_at": "2026-12-01T09:00:00Z",
        "data": {"name": "integrity-office", "add": [_PAPER, "2310.04610"], "remove": []},
    },
}


def _with_reference(event: ExampleEvent) -> ExampleEvent:
    """The example citation with an optional `reference` (resolver-v1.md), on another observation."""
    data: JsonObject = {
        **event["data"],
        "observation_id": "5a3b6a2e-9d1c-4c7e-8f00-2b1d3c4e5f60",
        "reference_index": 35,
        "reference": {
            "unstructured": "S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, ZeRO: memory optimizations toward "
            "training trillion parameter models, in: SC20, 2020, pp. 1-16.",
            "author": "Rajbhandari",
            "year": "2020",
            "first-page": "1",
        },
    }
    return {**event, "data": data}


def _sent(event: ExampleEvent) -> JsonObject:
    """The example as the JSON object it is."""
    return {"type": event["type"], "observed_at": event["observed_at"], "data": event["data"]}


def events_body() -> JsonObject:
    """openapi_extra for POST /events: the batch schema and one example per event type."""
    examples: JsonObject = {
        name.replace(".", "_"): {"summary": f"one {name} event", "value": {"events": [_sent(event)]}}
        for name, event in EVENT_EXAMPLES.items()
    }
    examples["citation_with_reference"] = {
        "summary": "a citation carrying its reference as the source gave it (Crossref's reference keys)",
        "value": {"events": [_sent(_with_reference(EVENT_EXAMPLES["citation.observed"]))]},
    }
    examples["citation_and_resolution"] = {
        "summary": "a citation and its resolution, only if the paper's stream is at version 0",
        "value": {
            "events": [
                _sent(EVENT_EXAMPLES["citation.observed"]),
                _sent(EVENT_EXAMPLES["resolution.observed"]),
            ],
            "expected_versions": {f"paper:{_PAPER}": 0},
        },
    }
    return request_body(
        {"application/json": {"schema": _ref("EventBatch"), "examples": examples}},
        "Events appended as one atomic batch (ledger-v1.md). "
        "Timestamps are RFC 3339 with an offset; no floats anywhere.",
    )


def record_body(description: str) -> JsonObject:
    """openapi_extra for a body that is a Paper Citation Record."""
    return request_body({"application/json": {"schema": _ref("Record")}}, description)


def request_body(content: JsonObject, description: str | None = None) -> JsonObject:
    """openapi_extra for a required body of the media types in content."""
    described: JsonObject = {} if description is None else {"description": description}
    return {"requestBody": {"required": True, **described, "content": content}}


def object_body(properties: JsonObject, required: list[Json] | None = None, **media: Json) -> JsonObject:
    """openapi_extra for a JSON object body that refuses keys not in properties; media adds examples."""
    needed: JsonObject = {} if required is None else {"required": required}
    schema: JsonObject = {"type": "object", "additionalProperties": False, **needed, "properties": properties}
    return request_body({"application/json": {"schema": schema, **media}})


# -- answers (pydantic models used for documentation only) ----------------------------------

# The answers' open parts, typed as the JSON they hold and documented as any value or any object: these
# models never validate, and pydantic cannot build a schema from the recursive Json alias.
JsonDoc = Annotated[Json, GetPydanticSchema(lambda _type, _handler: core_schema.any_schema())]
ObjectDoc = Annotated[
    JsonObject,
    GetPydanticSchema(
        lambda _type, _handler: core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
    ),
]


class ErrorDetail(BaseModel):
    code: str = Field(examples=["invalid"])
    message: str = Field(examples=["events[0].data.arxiv_id: bad arXiv id '2509.2480'"])
    details: JsonDoc = None


class ErrorBody(BaseModel):
    """Every error: {"error": {code, message, details}}."""

    error: ErrorDetail


class HeadModel(BaseModel):
    seq: int
    hash: str


class AppendedItem(BaseModel):
    index: int
    seq: int
    event_id: str
    hash: str
    duplicate: bool


class AppendAnswer(BaseModel):
    """The answer of a write: one item per input event, and the head after it."""

    appended: int
    duplicates: int
    head: HeadModel
    events: list[AppendedItem]


class EvidencePage(BaseModel):
    """One page of the log; `next_after` is null when there is no further page."""

    events: list[Annotated[ObjectDoc, WithJsonSchema(_ref("Envelope"))]]
    head: HeadModel
    next_after: int | None
    next: str | None


class Health(BaseModel):
    """Liveness; `last_full_walk` is the last recorded walk of the whole chain (scrub, verify or an
    integrity report with nothing recorded before), null before the first."""

    status: str
    head: HeadModel
    read_only: bool
    writes_enabled: bool
    last_full_walk: ObjectDoc | None


class PaperAnswer(BaseModel):
    """A paper's snapshots over time (JSON form of GET /paper/{id})."""

    arxiv_id: str
    snapshots: list[ObjectDoc]
    links: dict[str, str]


class SearchHit(BaseModel):
    """A title that holds every word: a paper's own, or a reference's (with its observation), and the
    path of the record that shows it."""

    kind: str = Field(json_schema_extra={"enum": ["paper", "reference"]})
    arxiv_id: str = Field(description="the paper, or the citing paper of a reference")
    title: str
    seq: int = Field(description="the first event that carried this title")
    observation_id: str | None = None
    reference_index: int | None = None
    href: str


class SearchAnswer(BaseModel):
    """A page of hits (JSON form of GET /search): papers first, then references by citing paper and
    reference index; `index` says how far the title index reached (a read-only server does not extend
    it)."""

    q: str
    arxiv_id: str | None = Field(
        None, description="the paper q names when q is an arXiv id as pasted (then its one hit); else absent"
    )
    words: list[str]
    hits: list[SearchHit]
    page: ObjectDoc
    index: ObjectDoc


class IntegrityReport(BaseModel):
    """What was verified for one record: the chain, its events, its digests recomputed. `chain.walked`
    is what this answer re-hashed, `chain.trusted` the prefix it did not, `chain.last_full_walk` the
    recorded walk from seq 1 that vouches for it; `first_bad_seq` is the first break any of them found.
    Page 1 proves what the record shows; `page.next` links the pages that prove the inbound observations
    it counts but does not show, and `counts` says how the count was obtained."""

    arxiv_id: str
    as_of: str
    known_at: str | None
    ok: bool
    first_bad_seq: int | None
    chain: ObjectDoc
    record: ObjectDoc
    page: ObjectDoc
    counts: ObjectDoc
    events: list[ObjectDoc]
    catalogue_events: list[ObjectDoc] = Field(
        [], description="the catalogue events the record's resolutions matched (their evidence), proven too"
    )
    recomputed: ObjectDoc
    method: str


class VerifyAnswer(BaseModel):
    """Whether a held record's digests match its content, and whether it matches this ledger."""

    arxiv_id: str
    as_of: str
    ok: bool
    digests: ObjectDoc
    ledger: ObjectDoc


DOC_MODELS: tuple[type[BaseModel], ...] = (
    ErrorBody,
    AppendAnswer,
    EvidencePage,
    Health,
    PaperAnswer,
    SearchAnswer,
    IntegrityReport,
    VerifyAnswer,
)


def pydantic_components() -> dict[str, JsonObject]:
    """JSON Schema components of the answer models (referenced by name from `responses`)."""
    _, schema = models_json_schema(
        [(m, "serialization") for m in DOC_MODELS], ref_template="#/components/schemas/{model}"
    )
    defs: dict[str, JsonObject] = schema.get("$defs", {})
    return defs


_DESCRIPTIONS = {
    200: "OK",
    201: "Created: at least one event was appended",
    308: "The paper id as pasted (an arXiv: prefix, a version suffix, an arxiv.org URL, a 10.48550 DOI): "
    "the same path with the canonical id, query string kept",
    401: "Missing or wrong bearer token; nothing written",
    403: "Writes disabled (no token configured, or --read-only)",
    404: "Not found (e.g. no paper snapshot as of T)",
    409: "Conflict: an event_id reused with other content, or a stream not at the expected version",
    408: "The body did not arrive within LEDGER_BODY_TIMEOUT; nothing written",
    413: "The body or the batch is above its limit",
    422: "Invalid input; the message names the place and field",
    429: "The token is over its LEDGER_RATE_LIMIT; see Retry-After; nothing written",
    503: "Unavailable; for /healthz: the last full walk of the chain found it broken (`chain_broken`, "
    "naming the first broken seq and the head)",
}
_HEAD_DOC: JsonObject = {
    "Ledger-Head": {
        "description": "`<seq> <hash>` of the ledger head the answer was computed from",
        "schema": {"type": "string"},
    }
}
_LOCATION_DOC: JsonObject = {
    "Location": {"description": "the canonical path of the same answer", "schema": {"type": "string"}}
}


def responses(
    *codes: int, ok: str | None = None, html: bool = False, json: bool = True
) -> dict[int | str, JsonObject]:
    """Documented responses: successes answer the component `ok`, errors the error shape; an
    HTML route documents text/html (and JSON too when it also negotiates JSON)."""
    out: dict[int | str, JsonObject] = {}
    for code in codes:
        if code == 308:
            out[code] = {"description": _DESCRIPTIONS[code], "headers": _LOCATION_DOC}
            continue
        schema = _ref("ErrorBody") if code >= 400 else _ref(ok) if ok else None
        content: JsonObject = {}
        if json and schema is not None:
            content["application/json"] = {"schema": schema}
        if html:
            content["text/html"] = {"schema": {"type": "string"}}
        entry: JsonObject = {"description": _DESCRIPTIONS[code], "content": content}
        if code < 300:
            entry["headers"] = _HEAD_DOC
        out[code] = entry
    return out


class PageRoute(TypedDict):
    """The route arguments an HTML page of the records family shares."""

    tags: list[str | Enum]
    summary: str
    response_class: type[Response]
    responses: dict[int | str, JsonObject]


def records_page(summary: str, answers: dict[int | str, JsonObject]) -> PageRoute:
    """The route arguments of an HTML page of the records family: its summary and documented answers."""
    return PageRoute(tags=["records"], summary=summary, response_class=HTMLResponse, responses=answers)


def stream_response() -> dict[int | str, JsonObject]:
    """The SSE route's answers; the schema describes one event (as OpenAPI 3.2's itemSchema)."""
    event: JsonObject = {
        "type": "object",
        "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "the event's seq"},
            "event": {"type": "string", "enum": [*sorted(EVENT_TYPES)]},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": _ref("Envelope"),
            },
            "retry": {"type": "integer"},
        },
    }
    return {
        200: {
            "description": "text/event-stream, one message per event: `id: <seq>`, "
            "`event: <type>`, `data: <envelope JSON>`; `: heartbeat` comments while idle",
            "content": {"text/event-stream": {"schema": event}},
        },
        **responses(422),
        503: {
            "description": "This server process already serves LEDGER_SSE_MAX_SUBSCRIBERS live "
            "subscriptions; retry after Retry-After seconds (`too_many_subscribers`)",
            "headers": {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}},
            "content": {"application/json": {"schema": _ref("ErrorBody")}},
        },
    }

"""OpenAPI documentation only: answer models, request-body schemas and realistic examples.

Nothing here parses a request: bodies are read raw and decoded by msgspec in the ledger.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field, WithJsonSchema
from pydantic.json_schema import models_json_schema

from ledger.model.codec import ARXIV_RE, UUID_RE
from ledger.model.events import EVENT_TYPES, Event, NonNegInt, StoredEvent
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


_TS_RULE = {"pattern": TIMESTAMP_PATTERN}
_ARXIV_RULE = {"pattern": ARXIV_PATTERN}
_UUID_RULE = {"pattern": UUID_PATTERN}
_BLOCK = {
    "arxiv_id": _ARXIV_RULE,
    "last_updated": _TS_RULE,
    "snapshot_observed_at": _TS_RULE,
    "submitted_at": _TS_RULE,
}
_RULES: dict[str, dict[str, dict[str, Any]]] = {
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


def schema_components() -> dict[str, Any]:
    """JSON Schema components of the request bodies, the record and the envelope, named as the ledger's
    own types, with its rules on ids and timestamps written in (so a generated body is more often valid)."""
    _, components = msgspec.json.schema_components(
        [EventBatch, Record, StoredEvent], ref_template="#/components/schemas/{name}"
    )
    components["Envelope"] = _envelope(components.pop("StoredEvent"))
    for name, rules in _RULES.items():
        properties = components[name]["properties"]
        for field_name, rule in rules.items():
            prop = properties[field_name]
            # a nullable field is anyOf [T, null]: the rule belongs to the non-null branch
            branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
            for branch in branches:
                branch.update(rule)
    return components


def _envelope(stored: dict[str, Any]) -> dict[str, Any]:
    """The served envelope: StoredEvent's fields, with `data` embedded as the JSON object it encodes."""
    stored["properties"]["data"] = {"type": "object", "additionalProperties": True}
    # an answer's schema: a client should accept an envelope that grows a field
    del stored["additionalProperties"]
    return {
        **stored,
        "title": "Envelope",
        "description": "A stored event: enough to recompute its hash with no server code.",
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_PAPER = "2509.02480"
_WORK = {
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
# One event of each type, with values taken from the real record of arXiv:2509.02480.
EVENT_EXAMPLES: dict[str, dict[str, Any]] = {
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
}


def _with_reference(event: dict[str, Any]) -> dict[str, Any]:
    """The example citation with an optional `reference` (resolver-v1.md), on another observation."""
    data = {
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


def events_body() -> dict[str, Any]:
    """openapi_extra for POST /events: the batch schema and one example per event type."""
    examples = {
        name.replace(".", "_"): {"summary": f"one {name} event", "value": {"events": [event]}}
        for name, event in EVENT_EXAMPLES.items()
    }
    examples["citation_with_reference"] = {
        "summary": "a citation carrying its reference as the source gave it (Crossref's reference keys)",
        "value": {"events": [_with_reference(EVENT_EXAMPLES["citation.observed"])]},
    }
    examples["citation_and_resolution"] = {
        "summary": "a citation and its resolution, only if the paper's stream is at version 0",
        "value": {
            "events": [EVENT_EXAMPLES["citation.observed"], EVENT_EXAMPLES["resolution.observed"]],
            "expected_versions": {f"paper:{_PAPER}": 0},
        },
    }
    return request_body(
        {"application/json": {"schema": _ref("EventBatch"), "examples": examples}},
        "Events appended as one atomic batch (ledger-v1.md). "
        "Timestamps are RFC 3339 with an offset; no floats anywhere.",
    )


def record_body(description: str) -> dict[str, Any]:
    """openapi_extra for a body that is a Paper Citation Record."""
    return request_body({"application/json": {"schema": _ref("Record")}}, description)


def request_body(content: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """openapi_extra for a required body of the media types in content."""
    described = {} if description is None else {"description": description}
    return {"requestBody": {"required": True, **described, "content": content}}


def object_body(
    properties: dict[str, Any], required: list[str] | None = None, **media: Any
) -> dict[str, Any]:
    """openapi_extra for a JSON object body that refuses keys not in properties; media adds examples."""
    needed = {} if required is None else {"required": required}
    schema = {"type": "object", "additionalProperties": False, **needed, "properties": properties}
    return request_body({"application/json": {"schema": schema, **media}})


# -- answers (pydantic models used for documentation only) ----------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(examples=["invalid"])
    message: str = Field(examples=["events[0].data.arxiv_id: bad arXiv id '2509.2480'"])
    details: Any = None


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

    events: list[Annotated[dict[str, Any], WithJsonSchema(_ref("Envelope"))]]
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
    last_full_walk: dict[str, Any] | None


class PaperAnswer(BaseModel):
    """A paper's snapshots over time (JSON form of GET /paper/{id})."""

    arxiv_id: str
    snapshots: list[dict[str, Any]]
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
    page: dict[str, Any]
    index: dict[str, Any]


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
    chain: dict[str, Any]
    record: dict[str, Any]
    page: dict[str, Any]
    counts: dict[str, Any]
    events: list[dict[str, Any]]
    catalogue_events: list[dict[str, Any]] = Field(
        [], description="the catalogue events the record's resolutions matched (their evidence), proven too"
    )
    recomputed: dict[str, Any]
    method: str


class VerifyAnswer(BaseModel):
    """Whether a held record's digests match its content, and whether it matches this ledger."""

    arxiv_id: str
    as_of: str
    ok: bool
    digests: dict[str, Any]
    ledger: dict[str, Any]


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


def pydantic_components() -> dict[str, Any]:
    """JSON Schema components of the answer models (referenced by name from `responses`)."""
    _, schema = models_json_schema(
        [(m, "serialization") for m in DOC_MODELS], ref_template="#/components/schemas/{model}"
    )
    defs: dict[str, Any] = schema.get("$defs", {})
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
_HEAD_DOC = {
    "Ledger-Head": {
        "description": "`<seq> <hash>` of the ledger head the answer was computed from",
        "schema": {"type": "string"},
    }
}
_LOCATION_DOC = {
    "Location": {"description": "the canonical path of the same answer", "schema": {"type": "string"}}
}


def responses(
    *codes: int, ok: str | None = None, html: bool = False, json: bool = True
) -> dict[int | str, dict[str, Any]]:
    """Documented responses: successes answer the component `ok`, errors the error shape; an
    HTML route documents text/html (and JSON too when it also negotiates JSON)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        if code == 308:
            out[code] = {"description": _DESCRIPTIONS[code], "headers": _LOCATION_DOC}
            continue
        schema = _ref("ErrorBody") if code >= 400 else _ref(ok) if ok else None
        content: dict[str, Any] = {}
        if json and schema is not None:
            content["application/json"] = {"schema": schema}
        if html:
            content["text/html"] = {"schema": {"type": "string"}}
        entry: dict[str, Any] = {"description": _DESCRIPTIONS[code], "content": content}
        if code < 300:
            entry["headers"] = _HEAD_DOC
        out[code] = entry
    return out


def records_page(summary: str, answers: dict[int | str, dict[str, Any]]) -> dict[str, Any]:
    """The route arguments of an HTML page of the records family: its summary and documented answers."""
    return {"tags": ["records"], "summary": summary, "response_class": HTMLResponse, "responses": answers}


def stream_response() -> dict[int | str, dict[str, Any]]:
    """The SSE route's answers; the schema describes one event (as OpenAPI 3.2's itemSchema)."""
    event = {
        "type": "object",
        "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "the event's seq"},
            "event": {"type": "string", "enum": sorted(EVENT_TYPES)},
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

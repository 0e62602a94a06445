"""Resolving over HTTP: `POST /resolve` (papers now, or all as a job), `GET /resolve/jobs/{id}`,
`POST /resolve/person`, and how one observation was resolved (`GET /paper/{id}/observations/{oid}/
resolution`, a page for a browser, JSON for a client).

Mount this router before records' routes: `/paper/{id:path}` there would take the resolution route.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import require_writer
from api.common import JSON, ArxivId, check_id, head_headers, instant, ledger_of, read_body, settings_of
from api.limits import RateLimiter
from api.records import negotiated
from api.records.render import ENV
from ledger.model.codec import canonical, decode_json
from ledger.model.errors import InvalidEvent, LedgerError, NotFound
from ledger.model.ids import normalise_arxiv
from service.ledger import CatalogueTables, Ledger, as_writer, by_token
from service.resolver.defaults import Resolver, default_resolver, ledger_catalogue
from service.resolver.explain import explanation
from service.resolver.jobs import Jobs
from service.resolver.person import choice, resolve_by_person
from service.resolver.pool import resolve_on_cores
from service.resolver.run import Summary, unknown_papers
from service.resolver.shown import resolution_view

router = APIRouter(tags=["resolve"])

MAX_RESOLVE_BODY = 64 * 1024
MAX_PAPERS = 100  # papers one synchronous POST /resolve may name; more: {"all": true}, a job
_BODY_KEYS = {"papers", "all", "dry_run"}
_PERSON_KEYS = {"observation_id", "by", "doi", "arxiv_id", "none"}
_OID = r"^[0-9a-fA-F-]{36}$"


def resolver_of(request: Request) -> Resolver:
    """The resolver this app uses (app.state.resolver when set, else the ledger's own)."""
    given: Resolver | None = getattr(request.app.state, "resolver", None)
    return given if given is not None else default_resolver()


def catalogue_of(request: Request, ledger: Ledger) -> CatalogueTables:
    """The catalogue this app resolves against (a person's resolution needs no matcher)."""
    given: Resolver | None = getattr(request.app.state, "resolver", None)
    return given.catalogue(ledger) if given is not None else ledger_catalogue(ledger)


def jobs_of(request: Request) -> Jobs:
    """This app's resolve jobs (kept in the ledger, shared with every other process), made on first use."""
    state = request.app.state
    if getattr(state, "resolve_jobs", None) is None:
        state.resolve_jobs = Jobs(ledger_of(request))
    jobs: Jobs = state.resolve_jobs
    return jobs


def _charge(request: Request, token: str) -> None:
    """A resolve costs its token one write, refused or not (as a watch does)."""
    limiter: RateLimiter | None = getattr(request.app.state, "rate_limiter", None)
    if limiter is not None:
        limiter.charge(token, 1)


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(canonical(value), status_code=status, media_type=JSON, headers=headers)


def parse_resolve(body: Any) -> tuple[list[str] | None, bool]:
    """A POST /resolve body -> (the papers, None for all; dry_run), or InvalidEvent naming the field."""
    if not isinstance(body, dict):
        raise InvalidEvent("$", 'a JSON object: {"papers": [...]} or {"all": true}')
    unknown = sorted(set(body) - _BODY_KEYS)
    if unknown:
        raise InvalidEvent(unknown[0], "unknown field (expected papers or all, and dry_run)")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise InvalidEvent("dry_run", "true or false")
    if "all" in body:
        if body["all"] is not True:
            raise InvalidEvent("all", "true (every paper), or leave it out and name papers")
        if "papers" in body:
            raise InvalidEvent("papers", "give papers or all, not both")
        return None, dry_run
    papers = body.get("papers")
    if not isinstance(papers, list) or not 0 < len(papers) <= MAX_PAPERS:
        raise InvalidEvent("papers", f'a list of 1 to {MAX_PAPERS} arXiv ids (more: {{"all": true}})')
    out = []
    for i, p in enumerate(papers):
        if not isinstance(p, str):
            raise InvalidEvent(f"papers[{i}]", "an arXiv id, a string: NNNN.NNNNN or archive/NNNNNNN")
        out.append(normalise_arxiv(p, f"papers[{i}]"))
    return out, dry_run


def _run(ledger: Ledger, resolver: Resolver, papers: list[str] | None, dry_run: bool) -> Summary:
    return resolve_on_cores(ledger, papers, resolver, dry_run=dry_run)


@router.post(
    "/resolve",
    summary="Resolve the references still unresolved against the catalogue of works",
    responses={
        **docs.responses(200, 401, 403, 413, 422),
        202: {"description": '`{"all": true}`: the job resolving every paper (poll its `links.self`)'},
    },
    openapi_extra=docs.object_body(
        {
            "papers": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_PAPERS},
            "all": {"type": "boolean", "enum": [True]},
            "dry_run": {"type": "boolean"},
        },
        examples={"papers": {"value": {"papers": ["2509.02480"]}}, "all": {"value": {"all": True}}},
    ),
)
async def post_resolve(request: Request) -> Response:
    """`{"papers": [...]}` (at most 100): resolved now, answered with the summary (examined, changed per
    status, unchanged, appended, the changes). `{"all": true}`: 202 with a job to poll at
    `GET /resolve/jobs/{id}`; while one runs, a second gets the running job. `dry_run: true` appends
    nothing. Unknown keys, wrong types and unknown papers: 422 naming the field, nothing written."""
    token = require_writer(request, settings_of(request))
    _charge(request, token)
    papers, dry_run = parse_resolve(decode_json(await read_body(request, MAX_RESOLVE_BODY)))
    ledger = ledger_of(request)
    missing = [] if papers is None else await run_in_threadpool(unknown_papers, ledger, papers)
    if missing:
        raise InvalidEvent(
            "papers",
            f"no paper {missing[0]!r} in this ledger",
            details={"where": "papers", "reason": "unknown papers", "unknown": missing},
        )
    resolver, by = resolver_of(request), by_token(token, "POST /resolve")
    if papers is None:
        job, _ = jobs_of(request).start(as_writer(by, lambda: _run(ledger, resolver, None, dry_run)))
        return _json(job.to_dict(), 202, {"Location": f"/resolve/jobs/{job.id}"})
    summary = await run_in_threadpool(as_writer(by, lambda: _run(ledger, resolver, papers, dry_run)))
    assert summary.head is not None
    return _json(summary.to_dict(), 200, head_headers(summary.head))


@router.get(
    "/resolve/jobs/{job_id}",
    summary="A job resolving every paper: running, done (with its summary) or failed",
    responses=docs.responses(200, 401, 403, 404, 422),
)
def get_job(
    request: Request,
    job_id: Annotated[str, Path(description="The job's id (from POST /resolve)", pattern=_OID)],
) -> Response:
    """The job, while the ledger keeps it (the last 16), whichever server process started it."""
    require_writer(request, settings_of(request))
    job = jobs_of(request).get(job_id)
    if job is None:
        raise NotFound(
            f"no resolve job {job_id!r} (the ledger keeps the last 16)", details={"job_id": job_id}
        )
    return _json(job.to_dict())


def parse_person(body: Any) -> tuple[str, Any]:
    """A POST /resolve/person body -> (the observation id, the person's choice)."""
    if not isinstance(body, dict):
        raise InvalidEvent(
            "$", 'a JSON object: {"observation_id": ..., "by": ..., "doi" | "arxiv_id" | "none"}'
        )
    unknown = sorted(set(body) - _PERSON_KEYS)
    if unknown:
        raise InvalidEvent(
            unknown[0], "unknown field (expected observation_id, by, and doi, arxiv_id or none)"
        )
    oid = body.get("observation_id")
    if not isinstance(oid, str) or len(oid) != 36:
        raise InvalidEvent("observation_id", "the observation's id, a UUID")
    none = body.get("none", False)
    if not isinstance(none, bool):
        raise InvalidEvent("none", "true (the reference names no work) or leave it out")
    return oid, choice(body.get("by"), body.get("doi"), body.get("arxiv_id"), none)


@router.post(
    "/resolve/person",
    summary="A person's resolution of one observation: set a DOI or an arXiv id, or clear the match",
    status_code=201,
    responses=docs.responses(201, 200, 401, 403, 404, 413, 422),
    openapi_extra=docs.object_body(
        {
            "observation_id": {"type": "string", "format": "uuid"},
            "by": {"type": "string", "minLength": 1, "maxLength": 100},
            "doi": {"type": "string"},
            "arxiv_id": {"type": "string"},
            "none": {"type": "boolean"},
        },
        ["observation_id", "by"],
        example={
            "observation_id": "0b5b0a8e-3c4e-4c44-9d5e-6a3f1b0c2d11",
            "by": "Ada Lovelace",
            "doi": "10.1000/example",
        },
    ),
)
async def post_person(request: Request) -> Response:
    """Appends a resolution naming the person (`resolver_source` `person:NAME`): verified_exact when the
    catalogue knows the work, verified_fuzzy naming only the identifier when it does not, unresolved
    for `"none": true`. The resolver never changes it afterwards. 201 with the event's seq and hash
    (200 when the same resolution was recorded already)."""
    token = require_writer(request, settings_of(request))
    _charge(request, token)
    oid, asked = parse_person(decode_json(await read_body(request, MAX_RESOLVE_BODY)))
    ledger = ledger_of(request)

    def run() -> Any:
        return resolve_by_person(ledger, oid, asked, catalogue_of(request, ledger))

    result = await run_in_threadpool(as_writer(by_token(token, "POST /resolve/person"), run))
    item = result.items[0]
    body = {"observation_id": oid, "seq": item.seq, "hash": item.hash, "duplicate": item.duplicate,
            "resolver_source": "person:" + asked.by}  # fmt: skip
    return _json(body, 200 if item.duplicate else 201, head_headers(result.head))


@router.get(
    "/paper/{arxiv_id:path}/observations/{observation_id}/resolution",
    tags=["records"],
    summary="How one reference was resolved: status, resolver or person, evidence, catalogue event",
    responses=docs.responses(200, 308, 404, 422, html=True),
)
def get_resolution(
    request: Request,
    arxiv_id: ArxivId,
    observation_id: Annotated[str, Path(description="The observation's id", pattern=_OID)],
    as_of: Annotated[
        str | None, Query(description="RFC 3339 with offset, or YYYY-MM-DD; default now")
    ] = None,
) -> Response:
    """The observation's latest resolution as of T, its evidence (candidate, score, fields that agreed
    and disagreed, runner-up) and the catalogue event it used, with links to each event and its
    inclusion proof. A page for a browser (text/html above JSON in Accept), JSON for any other client."""
    record = f"/paper/{arxiv_id}/citation-record"
    try:
        arxiv_id = check_id(request, arxiv_id)
        record = f"/paper/{arxiv_id}/citation-record"
        view = resolution_view(ledger_of(request), arxiv_id, observation_id, instant(as_of, "as_of"))
    except LedgerError as e:
        return negotiated.error(request, e, [("Back to the record", record)])
    ledger = ledger_of(request)

    def page() -> str:
        return ENV.get_template("resolution.html").render(v=view, x=explanation(ledger, view))

    return negotiated.answer(request, view, head_headers(ledger.head()), page)

"""Resolving over HTTP: `POST /resolve` (papers now, or all as a job), `GET /resolve/jobs/{id}`,
`POST /resolve/person`, and how one observation was resolved (`GET /paper/{id}/observations/{oid}/
resolution`, a page for a browser, JSON for a client).

Mount this router before records' routes: `/paper/{id:path}` there would take the resolution route.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import person_bindings, require_writer
from api.common import JSON, ArxivId, check_id, head_headers, instant, ledger_of, read_body, settings_of
from api.errors import ApiError, RateLimited
from api.limits import RateLimiter, retry_after
from api.records import negotiated
from api.records.render import ENV
from api.settings import ENV_RESOLVE_AT_ONCE, ENV_RESOLVE_PER_MINUTE
from api.state import state_of
from ledger.model.codec import canonical, decode_json
from ledger.model.errors import InvalidEvent, LedgerError, NotFound
from ledger.model.ids import normalise_arxiv
from ledger.model.jsonvalue import Json
from service.ledger import AppendResult, Ledger, WriteBy, as_writer, by_token
from service.resolver.bounds import Busy, Cancelled, Gate, Lease, Limits, OverBudget, admit
from service.resolver.defaults import Resolver, catalogue_for
from service.resolver.explain import explanation
from service.resolver.jobs import Jobs
from service.resolver.names import Binding, NotTheirs, check_owner
from service.resolver.person import PersonChoice, choice, resolve_by_person
from service.resolver.pool import resolve_on_cores
from service.resolver.run import Summary, unknown_papers
from service.resolver.shown import resolution_view

router = APIRouter(tags=["resolve"])
log = logging.getLogger("api")

MAX_RESOLVE_BODY = 64 * 1024
MAX_PAPERS = 100  # papers one synchronous POST /resolve may name; more: {"all": true}, a job
_BODY_KEYS = {"papers", "all", "dry_run"}
_PERSON_KEYS = {"observation_id", "by", "doi", "arxiv_id", "none"}
_OID = r"^[0-9a-fA-F-]{36}$"
GONE_LOOK_S = 0.25  # how often a running resolve looks whether its client is still there
# what a token asking for a run that appends waits, while another token's runs
EXCLUSIVE_RETRY_S = 30


class NameRefused(ApiError, code="forbidden_name", status=403):
    """A person's name this token may not write (bound to another token, or not one of its own)."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}", details={"where": where, "reason": reason})


def resolver_of(request: Request) -> Resolver:
    """The resolver this app uses (the ledger's own, unless the app was built with another)."""
    return state_of(request.app).resolver


def jobs_of(request: Request) -> Jobs:
    """This app's resolve jobs (kept in the ledger, shared with every other process)."""
    return state_of(request.app).resolve_jobs


def limits_of(request: Request) -> Limits:
    """How much resolving this server allows (LEDGER_RESOLVE_AT_ONCE, LEDGER_RESOLVE_PER_MINUTE)."""
    settings = settings_of(request)
    return Limits(settings.resolve_at_once, settings.resolve_per_minute)


def _busy(e: Busy) -> RateLimited:
    return RateLimited(
        f"{e.most} resolves run already, the most at once ({ENV_RESOLVE_AT_ONCE}); retry in "
        f"{retry_after(e.retry_after_s)} s",
        retry_after=retry_after(e.retry_after_s),
        details={"limit": ENV_RESOLVE_AT_ONCE, "at_once": e.most, "retry_after_s": e.retry_after_s},
    )


def _over_budget(e: OverBudget) -> RateLimited:
    return RateLimited(
        f"this token's resolves examined more than its {e.per_minute} references a minute "
        f"({ENV_RESOLVE_PER_MINUTE}); retry in {retry_after(e.retry_after_s)} s",
        retry_after=retry_after(e.retry_after_s),
        details={"limit": ENV_RESOLVE_PER_MINUTE, "per_minute": e.per_minute,
                 "retry_after_s": round(e.retry_after_s, 3)},
    )  # fmt: skip


T = TypeVar("T")


async def while_connected(request: Request, work: Callable[[], T], cancel: threading.Event) -> T:
    """Run `work` in a thread; if the client goes away first, set `cancel` (the work stops at its next
    look, raising Cancelled) and wait for the work to end."""
    task = asyncio.ensure_future(run_in_threadpool(work))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=GONE_LOOK_S)
            if done:
                return task.result()
            if await request.is_disconnected():
                cancel.set()
                break
    except asyncio.CancelledError:
        cancel.set()  # the server is stopping: the work stops too
        raise
    # the client is gone: the work ends at its next look (Cancelled), its lease freed; a run that
    # ended meanwhile gives its answer, for no one
    return await asyncio.shield(task)


def _charge(request: Request, token: str) -> None:
    """A resolve costs its token one write, refused or not (as a watch does)."""
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    if limiter is not None:
        limiter.charge(token, 1)


def _json(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def parse_resolve(body: Json) -> tuple[list[str] | None, bool]:
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


def _run(ledger: Ledger, resolver: Resolver, papers: list[str] | None, dry_run: bool, gate: Gate) -> Summary:
    return resolve_on_cores(ledger, papers, resolver, dry_run=dry_run, gate=gate)


def _bounded(
    ledger: Ledger, resolver: Resolver, papers: list[str], dry_run: bool, gate: Gate, limits: Limits
) -> Summary:
    """A request's resolve: admitted while its token is within budget, run holding a slot."""
    admit(ledger, gate.owner, limits)
    lease = Lease(ledger, gate.owner, limits.at_once, lambda: gate.examined)
    lease.beat_in_background()
    try:
        return _run(ledger, resolver, papers, dry_run, gate)
    finally:
        lease.free()


@router.post(
    "/resolve",
    summary="Resolve the references still unresolved against the catalogue of works",
    responses={
        **docs.responses(200, 401, 403, 413, 422, 429),
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
    `GET /resolve/jobs/{id}`; while this token's job of the same kind runs, a second gets it. `dry_run:
    true` appends nothing. At most LEDGER_RESOLVE_AT_ONCE resolves run at once (429 with Retry-After
    past it); a token's resolves examine at most LEDGER_RESOLVE_PER_MINUTE references a minute (a
    request past it: 429 with Retry-After; a job waits). A request whose client goes away stops.
    Unknown keys, wrong types and unknown papers: 422 naming the field, nothing written."""
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
    limits = limits_of(request)
    try:
        if papers is None:
            return await run_in_threadpool(_start_all, request, ledger, resolver, token, by, dry_run, limits)
        gate = Gate(ledger, token, limits.per_minute, pace=False)
        work = as_writer(by, lambda: _bounded(ledger, resolver, papers, dry_run, gate, limits))
        try:
            summary = await while_connected(request, work, gate.cancel)
        except Cancelled:
            log.info("a resolve was stopped after %d references: its client went away", gate.examined)
            return Response(status_code=499)  # nobody reads it: the connection is gone
    except Busy as e:
        raise _busy(e) from None
    except OverBudget as e:
        raise _over_budget(e) from None
    assert summary.head is not None
    return _json(canonical(summary.to_dict()), 200, head_headers(summary.head))


def _lease_of(gate: Gate, lease: Lease) -> Lease:
    gate.lease = lease  # a paced job gives its slot up while it waits for its budget
    return lease


def _start_all(
    request: Request,
    ledger: Ledger,
    resolver: Resolver,
    token: str,
    by: WriteBy,
    dry_run: bool,
    limits: Limits,
) -> Response:
    """A job resolving every paper as this token asked: its own such job if one runs, else a new one
    holding a slot and paced by the token's budget."""
    gate = Gate(ledger, token, limits.per_minute, pace=True)
    job, outcome = jobs_of(request).start(
        as_writer(by, lambda: _run(ledger, resolver, None, dry_run, gate)),
        token,
        {"all": True, "dry_run": dry_run},
        appends=not dry_run,
        lease=lambda: _lease_of(gate, Lease(ledger, token, limits.at_once, lambda: gate.examined)),
    )
    if outcome == "busy":
        # another token's run that appends: its job is not this token's to see
        raise RateLimited(
            "a resolve of every paper that appends runs already (one at a time, whoever asked); "
            f"retry in {EXCLUSIVE_RETRY_S} s",
            retry_after=str(EXCLUSIVE_RETRY_S),
            details={"retry_after_s": EXCLUSIVE_RETRY_S},
        )
    return _json(canonical(job.to_dict()), 202, {"Location": f"/resolve/jobs/{job.id}"})


@router.get(
    "/resolve/jobs/{job_id}",
    summary="A job resolving every paper: running, done (with its summary) or failed",
    responses=docs.responses(200, 401, 403, 404, 422),
)
def get_job(
    request: Request,
    job_id: Annotated[str, Path(description="The job's id (from POST /resolve)", pattern=_OID)],
) -> Response:
    """The job, while the ledger keeps it (the last 16 of the token), whichever server process started
    it; another token's job is a 404, as if there were none."""
    token = require_writer(request, settings_of(request))
    job = jobs_of(request).get(job_id, token)
    if job is None:
        raise NotFound(
            f"no resolve job {job_id!r} of this token (the ledger keeps each token's last 16)",
            details={"job_id": job_id},
        )
    return _json(canonical(job.to_dict()))


def parse_person(body: Json) -> tuple[str, PersonChoice]:
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


def check_name_of(asked: PersonChoice, token: str, bindings: list[Binding]) -> None:
    """Refuse a name this token may not write (403 naming `by`); `choice` checked its scripts."""
    try:
        check_owner(asked.by, token, bindings)
    except NotTheirs as e:
        raise NameRefused("by", e.reason) from None


@router.post(
    "/resolve/person",
    summary="A person's resolution of one observation: set a DOI or an arXiv id, or clear the match",
    status_code=201,
    responses=docs.responses(201, 200, 401, 403, 404, 413, 422, 429),
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
    bindings = [Binding(*b) for b in person_bindings(settings_of(request))]
    check_name_of(asked, token, bindings)
    ledger = ledger_of(request)

    def run() -> AppendResult:
        return resolve_by_person(ledger, oid, asked, catalogue_for(resolver_of(request), ledger))

    result = await run_in_threadpool(as_writer(by_token(token, "POST /resolve/person"), run))
    item = result.items[0]
    body = {"observation_id": oid, "seq": item.seq, "hash": item.hash, "duplicate": item.duplicate,
            "resolver_source": "person:" + asked.by}  # fmt: skip
    return _json(canonical(body), 200 if item.duplicate else 201, head_headers(result.head))


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
        view = resolution_view(ledger_of(request), arxiv_id, observation_id, instant(request, as_of, "as_of"))
    except LedgerError as e:
        return negotiated.error(request, e, [("Back to the record", record)])
    ledger = ledger_of(request)

    def page() -> str:
        return ENV.get_template("resolution.html").render(v=view, x=explanation(ledger, view))

    return negotiated.answer(request, lambda: canonical(view), head_headers(ledger.head()), page)

"""Import: a record's decomposition into events (record-v1.md), or NDJSON envelopes."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, cast

import msgspec

from ledger.model.codec import (
    UUID_RE,
    canonical,
    check_arxiv,
    check_instant,
    context_digest,
    decode_event,
    decode_json,
    msgspec_where,
    observation_digest,
    quick_body,
    to_event,
)
from ledger.model.errors import InvalidEvent
from ledger.model.events import (
    CitationData,
    CitationObserved,
    Event,
    MeasurementData,
    MeasurementObserved,
    Notice,
    PaperData,
    PaperObserved,
    ResolutionData,
    ResolutionObserved,
    StandingChecked,
    StandingData,
)
from ledger.model.instants import parse_ts
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.record_types import NoticeEvent, Observation, Record, SnapshotBlock

SCHEMA = "pith.paper-citation-record.v1"


class Batch(NamedTuple):
    """Events to append as one batch, with the place in the input each came from."""

    events: list[Event]
    places: list[str]
    expected_versions: dict[str, int] | None = None
    kind: str = "events"


def parse_input(raw: bytes, *, force: bool = False, progress: Callable[[int], None] | None = None) -> Batch:
    """A file's bytes -> a batch: a record (schema key), a batch object, a list, or NDJSON lines."""
    try:
        value = decode_json(raw)
    except InvalidEvent as whole_error:
        if b"\n" not in raw.strip():
            raise whole_error from None
        return parse_ndjson(raw, progress)
    if progress is not None:
        progress(len(raw))
    if isinstance(value, dict) and "schema" in value:
        if value["schema"] != SCHEMA:
            raise InvalidEvent("schema", f"expected {SCHEMA!r} (a record), found {_short(value['schema'])}")
        return record_to_batch(value, force=force)
    if isinstance(value, dict) and "events" in value:
        return parse_batch(value)
    if isinstance(value, list):
        return Batch(
            [to_event(v, f"events[{i}]") for i, v in enumerate(value)],
            [f"events[{i}]" for i in range(len(value))],
        )
    if not isinstance(value, dict) or "type" not in value:
        raise InvalidEvent("", f"{EXPECTED}; found {_found(value)}")
    return Batch([to_event(value, "event")], ["event"])


EXPECTED = (
    f"expected a record (a JSON object whose schema is {SCHEMA!r}) "
    'or NDJSON envelopes (one {"type", "observed_at", "data"} object a line)'
)


def _short(value: Json, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _found(value: Json) -> str:
    """What a file that is neither a record nor envelopes holds, in a few words."""
    if isinstance(value, dict):
        keys = sorted(value)
        shown = ", ".join(_short(k, 30) for k in keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"a JSON object with keys {shown}" if keys else "an empty JSON object"
    kind = {str: "string", bool: "boolean", int: "number", type(None): "null"}.get(type(value), "value")
    return f"a JSON {kind} {_short(value)}"


def parse_ndjson(raw: bytes, progress: Callable[[int], None] | None = None) -> Batch:
    """Each non-empty line is one envelope; places are "line N"."""
    events, places = [], []
    done = 0
    for n, line in enumerate(raw.splitlines(keepends=True), start=1):
        done += len(line)
        if progress is not None and n % 5000 == 0:
            progress(done)
            done = 0
        if line.strip():
            events.append(decode_event(line, f"line {n}"))
            places.append(f"line {n}")
    if progress is not None:
        progress(done)
    return Batch(events, places)


def parse_batch(value: Json) -> Batch:
    """The POST /events body: {"events": [...], "expected_versions": {...}?}."""
    if not isinstance(value, dict):
        raise InvalidEvent("$", "the body must be a JSON object with an `events` list")
    unknown = set(value) - {"events", "expected_versions"}
    if unknown:
        raise InvalidEvent(sorted(unknown)[0], "unknown field (expected events, expected_versions)")
    events = value.get("events")
    if not isinstance(events, list):
        raise InvalidEvent("events", "required, a list of event envelopes")
    expected = value.get("expected_versions")
    valid = isinstance(expected, dict) and all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in expected.items()
    )
    if expected is not None and not valid:
        raise InvalidEvent("expected_versions", "must map stream names to integers >= 0")
    return Batch(
        [to_event(v, f"events[{i}]") for i, v in enumerate(events)],
        [f"events[{i}]" for i in range(len(events))],
        cast("dict[str, int] | None", expected),  # checked just above: None or stream -> int >= 0
    )


def quick_batch(raw: bytes) -> Batch | None:
    """The batch `parse_batch(decode_json(raw))` gives, by msgspec's decoder alone (`codec.quick_body`);
    None when that is not proven (then take the exact path, which also names what is wrong)."""
    body = quick_body(raw)
    if body is None:
        return None
    events, expected = body
    return Batch(events, [f"events[{i}]" for i in range(len(events))], expected)


def record_to_batch(raw: JsonObject, *, force: bool = False) -> Batch:
    """Check a record (types, digests, self-consistency) and decompose it into events."""
    try:
        rec = msgspec.convert(raw, Record, strict=True)
    except msgspec.ValidationError as e:
        raise InvalidEvent(*msgspec_where(e, "")) from None
    # Self-contradictions first: an edited paper.arxiv_id is named, not reported as a digest mismatch
    # that --force would then silence.
    _check_record(rec)
    if not force:
        _check_digests(raw)
    return _decompose(rec)


def _check_digests(raw: JsonObject) -> None:
    for lane in ("outbound", "inbound"):
        # the record converted to a Record, so each lane is a list of objects
        for i, o in enumerate(cast("list[JsonObject]", raw[lane])):
            if observation_digest(o) != o["observation_digest"]:
                raise InvalidEvent(
                    f"{lane}[{i}].observation_digest",
                    "does not match the observation's content (the record was altered); "
                    "pass --force (?force=true) to import it anyway",
                )
    if context_digest(raw) != raw["context_digest"]:
        raise InvalidEvent(
            "context_digest",
            "does not match the record's content (the record was altered); "
            "pass --force (?force=true) to import it anyway",
        )


def _ts(value: str | None, where: str) -> None:
    if value is not None:
        check_instant(value, where)


def _snapshot(block: SnapshotBlock | None, where: str) -> None:
    if block is not None:
        check_arxiv(block.arxiv_id, f"{where}.arxiv_id")
        for f in ("last_updated", "snapshot_observed_at", "submitted_at"):
            _ts(getattr(block, f), f"{where}.{f}")
        if block.version < 1:
            raise InvalidEvent(f"{where}.version", "must be >= 1")


def _citing_id(o: Observation, where: str) -> str:
    if o.citation.citing_paper is not None:
        return o.citation.citing_paper.arxiv_id
    link = o.links.citing_paper
    if not link.startswith("/paper/"):
        raise InvalidEvent(f"{where}.links.citing_paper", f"expected /paper/{{id}}, got {link!r}")
    return link.removeprefix("/paper/")


def _check_record(rec: Record) -> None:
    _ts(rec.as_of, "as_of")
    p = rec.paper
    check_arxiv(p.arxiv_id, "paper.arxiv_id")
    for f in ("last_updated", "snapshot_observed_at", "submitted_at"):
        _ts(getattr(p, f), f"paper.{f}")
    if p.latest_version < 1:
        raise InvalidEvent("paper.latest_version", "must be >= 1")
    for i, receipt in enumerate(rec.standing_sources):
        _ts(receipt.observed_at, f"standing_sources[{i}].observed_at")
    for i, m in enumerate(rec.external_citation_measurements):
        _ts(m.observed_at, f"external_citation_measurements[{i}].observed_at")
        if m.value < 0:
            raise InvalidEvent(f"external_citation_measurements[{i}].value", "must be >= 0")
    for lane, items in (("outbound", rec.outbound), ("inbound", rec.inbound)):
        for i, o in enumerate(items):
            _check_observation(o, f"{lane}[{i}]")
    for i, o in enumerate(rec.outbound):
        _check_own(o, f"outbound[{i}]", p.arxiv_id)


def _check_own(o: Observation, w: str, pid: str) -> None:
    """An outbound observation is the record's own paper's: its events go to the citing paper's stream,
    so another id there would leave the record's paper with no references at all."""
    citing = _citing_id(o, w)
    if citing != pid:
        field = (
            "citation.citing_paper.arxiv_id" if o.citation.citing_paper is not None else "links.citing_paper"
        )
        raise InvalidEvent(
            f"{w}.{field}",
            f"names paper {citing!r}, not the record's paper.arxiv_id {pid!r}; "
            "an outbound observation must be cited by the record's own paper",
        )


def _check_observation(o: Observation, w: str) -> None:
    if not UUID_RE.fullmatch(o.observation_id):
        raise InvalidEvent(f"{w}.observation_id", "bad UUID: expected lowercase 8-4-4-4-12 hex")
    c, r, s = o.citation, o.resolution, o.standing_notice
    _ts(c.source_observed_at, f"{w}.citation.source_observed_at")
    if c.reference_index < 0:
        raise InvalidEvent(f"{w}.citation.reference_index", "must be >= 0")
    if c.cited_work is not None:
        _ts(c.cited_work.snapshot_observed_at, f"{w}.citation.cited_work.snapshot_observed_at")
    _snapshot(c.cited_paper, f"{w}.citation.cited_paper")
    _snapshot(c.citing_paper, f"{w}.citation.citing_paper")
    check_arxiv(_citing_id(o, w), f"{w}.links.citing_paper")
    if c.cited_paper is None and c.cited_work is not None and c.cited_work.pith_arxiv_id:
        check_arxiv(c.cited_work.pith_arxiv_id, f"{w}.citation.cited_work.pith_arxiv_id")
    if r.status == "pending":
        for f in ("observed_at", "resolver_source"):
            if getattr(r, f) is not None:
                raise InvalidEvent(f"{w}.resolution.{f}", "a pending resolution must have it null")
    elif r.observed_at is None:
        raise InvalidEvent(f"{w}.resolution.observed_at", f"required for status {r.status}")
    else:
        _ts(r.observed_at, f"{w}.resolution.observed_at")
    receipts = {(x.source, x.observed_at) for x in s.source_receipts}
    for j, x in enumerate(s.source_receipts):
        _ts(x.observed_at, f"{w}.standing_notice.source_receipts[{j}].observed_at")
    work_id = c.cited_work.work_id if c.cited_work is not None else None
    if receipts and work_id is None:
        raise InvalidEvent(
            f"{w}.standing_notice.source_receipts", "receipts for a cited work without work_id"
        )
    seen: set[bytes] = set()
    for j, n in enumerate(s.events):
        at = f"{w}.standing_notice.events[{j}]"
        if (n.source, n.observed_at) not in receipts:
            raise InvalidEvent(at, f"notice from {n.source} at {n.observed_at} is not among the receipts")
        if n.work_id != work_id:
            raise InvalidEvent(f"{at}.work_id", f"notice for work {n.work_id!r}, not this work {work_id!r}")
        key = canonical(n)
        if key in seen:
            raise InvalidEvent(at, "the same notice is listed twice in one check")
        seen.add(key)


def _notice(n: NoticeEvent) -> Notice:
    return Notice(
        n.work_id, n.kind, n.notice_doi, n.record_id, n.raw_type, list(n.reasons), n.notice_date, n.url
    )


def notice_sort_key(n: Notice) -> tuple[str, str, bool, str, bytes]:
    """(work_id, kind, notice_doi with null first, canonical JSON): the order of notices in a check."""
    return (n.work_id or "", n.kind, n.notice_doi is not None, n.notice_doi or "", canonical(n))


def _decompose(rec: Record) -> Batch:
    events: list[Event] = []
    places: list[str] = []
    p = rec.paper
    pid = p.arxiv_id
    events.append(
        PaperObserved(
            observed_at=p.snapshot_observed_at,
            data=PaperData(
                pid, p.title, p.primary_category, p.submitted_at, p.last_updated, p.latest_version
            ),
        )
    )
    places.append("paper")
    seen_snaps = {(pid, parse_ts(p.snapshot_observed_at))}
    checks: dict[tuple[str, str], tuple[set[str], dict[bytes, Notice]]] = {}
    for receipt in rec.standing_sources:
        checks.setdefault((receipt.source, receipt.observed_at), (set(), {}))

    for lane, items in (("outbound", rec.outbound), ("inbound", rec.inbound)):
        for i, o in enumerate(items):
            w = f"{lane}[{i}]"
            c, r = o.citation, o.resolution
            citing = _citing_id(o, w)
            cw = c.cited_work
            pending = r.status == "pending"
            raw_parse = cw is not None and parse_ts(cw.snapshot_observed_at) == parse_ts(c.source_observed_at)
            in_citation = pending or raw_parse
            events.append(
                CitationObserved(
                    observed_at=c.source_observed_at,
                    data=CitationData(
                        o.observation_id, citing, c.reference_index, c.source, cw if in_citation else None
                    ),
                )
            )
            places.append(f"{w}.citation")
            if not pending:
                cited = (
                    c.cited_paper.arxiv_id
                    if c.cited_paper is not None
                    else cw.pith_arxiv_id
                    if cw is not None
                    else None
                )
                assert r.observed_at is not None
                events.append(
                    ResolutionObserved(
                        observed_at=r.observed_at,
                        data=ResolutionData(
                            o.observation_id,
                            r.status,  # type: ignore[arg-type]
                            r.resolver_source,
                            None if in_citation else cw,
                            cited,
                        ),
                    )
                )
                places.append(f"{w}.resolution")
            for name, block in (("cited_paper", c.cited_paper), ("citing_paper", c.citing_paper)):
                if block is None:
                    continue
                key = (block.arxiv_id, parse_ts(block.snapshot_observed_at))
                if key in seen_snaps:
                    continue
                seen_snaps.add(key)
                events.append(
                    PaperObserved(
                        observed_at=block.snapshot_observed_at,
                        data=PaperData(
                            block.arxiv_id,
                            block.title,
                            None,
                            block.submitted_at,
                            block.last_updated,
                            block.version,
                        ),
                    )
                )
                places.append(f"{w}.citation.{name}")
            for x in o.standing_notice.source_receipts:
                work_ids, _ = checks.setdefault((x.source, x.observed_at), (set(), {}))
                assert cw is not None and cw.work_id is not None
                work_ids.add(cw.work_id)
            for n in o.standing_notice.events:
                notice = _notice(n)
                checks[(n.source, n.observed_at)][1].setdefault(canonical(notice), notice)

    order = sorted(checks, key=lambda k: (parse_ts(k[1]), k[1], k[0]))
    for source, observed_at in order:
        work_ids, notices = checks[(source, observed_at)]
        events.append(
            StandingChecked(
                observed_at=observed_at,
                data=StandingData(source, sorted(work_ids), sorted(notices.values(), key=notice_sort_key)),
            )
        )
        places.append(f"standing check {source} at {observed_at}")
    for i, m in enumerate(rec.external_citation_measurements):
        events.append(
            MeasurementObserved(
                observed_at=m.observed_at,
                data=MeasurementData(pid, m.source, m.metric, m.value, m.source_release, m.query_url),
            )
        )
        places.append(f"external_citation_measurements[{i}]")
    return Batch(events, places, None, "record")

"""Standing alerts: tell a watcher when a work it watches gets a retraction, correction or concern.

A watch covers works: a paper's (the cited works of its outbound references, as they come), a
collection's (those of each paper that is a member when the notice is raised: a paper joining brings
its works and the notices they hold already, a paper leaving takes them away) or a list given by DOI
or arXiv id (every work of the ledger matched by one of those keys, sources-v1.md). An
alert is one (watch, work, notice) the first time the ledger holds it, with the standing check that
brought it. Alerts are raised from the log, not from the routes: `raise_new` reads the events after the
alert cursor (whatever appended them: POST /events, /records, /ingest, `ledger import`, `ledger ingest`)
and, in the transaction that moves the cursor past them, stores their alerts and the webhook outbox
entries, so an alert raised is never lost and none is raised twice. A watch made later gets alerts for
the notices already held for its works, marked `held`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlencode

import msgspec

from ledger.model.codec import canonical, decode_data
from ledger.model.errors import Conflict
from ledger.model.events import CollectionData, Notice, StoredEvent
from ledger.model.instants import Clock, format_recorded, parse_ts
from ledger.model.jsonvalue import JsonInObject, JsonObject
from ledger.storage.state.alerts import Alert, Watch
from ledger.storage.works_store import displayed
from projections.record import observations
from service.alerts.covers import (
    CITATION,
    PAPERS_PART,
    REFS,
    RESOLUTION,
    Cover,
    covering_now,
    event_covers,
    index_keys,
    members_at,
    papers_covers,
)
from service.alerts.watch_spec import COLLECTION, PAPER, WatchSpec
from service.alerts.watches import watch_target
from service.collections import PREFIX as COLLECTION_STREAM
from service.collections import TYPE as COLLECTION_TYPE

if TYPE_CHECKING:
    from ledger.model.facts import CheckRow
    from ledger.storage.interface import Store

PAGE = 2000  # events read (and raised from) per transaction
MAX_CITING = 10  # citing observations an alert names (a works watch's work may be cited very often)
_ALERT_NS = uuid.UUID("6c656467-6572-2d61-6c65-72742d69642e")  # "ledger-alert-id."
_STANDING = "standing.checked"


def notice_key(source: str, notice: Notice | JsonInObject) -> str:
    """The identity of one notice of one source: the sha256 of its canonical JSON (a notice repeated
    by later checks of the same source is the same notice)."""
    return hashlib.sha256(canonical({"notice": notice, "source": source})).hexdigest()


def alert_id(watch_id: str, work_id: str, key: str) -> str:
    """The alert's id: the same (watch, work, notice) always gets the same one (stable across retries)."""
    return str(uuid.uuid5(_ALERT_NS, f"{watch_id}\n{work_id}\n{key}"))


class _Candidate(NamedTuple):
    watch_id: str
    work_id: str
    key: str
    source: str
    notice: JsonObject  # the notice as stored
    seq: int
    hash: str
    observed_at: str
    # the resolution that newly named a work whose notice was held already (its seq), if that raised it
    resolution_seq: int | None = None


class TooManyWatches(Conflict):
    """A token already holds as many watches in force as one token may."""

    code = "too_many_watches"


def add_watch(
    store: Store, clock: Clock, spec: WatchSpec, owner: str | None = None, most: int | None = None
) -> tuple[Watch, list[str]]:
    """Store a watch made by `owner` (a token's sha256; None: the operator's), cover the works it finds
    now and raise alerts for the notices they hold already (marked held); returns the watch and the
    work_ids it covers. TooManyWatches when `owner` already holds `most` watches."""
    now = clock.now_us()
    tables = store.alerts
    with tables.raising():
        # counted under the append lock, so two requests at once cannot both take the last place
        owned = tables.owned(owner) if owner is not None and most is not None else 0
        if most is not None and owned >= most:
            raise TooManyWatches(
                f"this token holds {owned} watches, the most one token may hold (LEDGER_MAX_WATCHES="
                f"{most}); remove one (DELETE /watches/{{id}}) before making another",
                details={"limit": most, "watches": owned, "variable": "LEDGER_MAX_WATCHES"},
            )
        head = store.head()
        if not tables.any_watch():
            tables.advance(head.seq)  # the first watch in force: no event before it raises alerts
        keys, members = list(spec.keys), None
        if spec.kind == COLLECTION:
            # its members as the raiser stands: the changes after its cursor reach the watch as it
            # raises them, in their place among the notices
            members = members_at(store, spec.target, tables.cursor())
            keys += [f"p:{m}" for m in members]
        watch = Watch(str(uuid.uuid4()), spec.kind, spec.target, spec.callback_url, spec.secret,
                      format_recorded(now), head.seq, None, owner)  # fmt: skip
        tables.add_watch(watch, keys)
        covers = (
            covering_now(store, watch, spec, now)
            if members is None
            else papers_covers(store, watch.id, members)
        )
        tables.cover(covers)
        held = _held_notices(store, {c.work_id for c in covers})
        _record([c._replace(watch_id=watch.id) for c in held], store, now, {watch.id: watch})
    return watch, sorted({c.work_id for c in covers})


def _collection_changed(store: Store, e: StoredEvent, now: int) -> int:
    """Apply a collection's change to the watches on it (inside `raising`): a paper added is found by
    its key and covers its works, whose notices held already are raised now; a paper removed is
    neither. Returns how many alerts were raised."""
    tables = store.alerts
    data = msgspec.json.decode(e.data, type=CollectionData)
    watch_ids = sorted({w for _, w in tables.watchers([COLLECTION_STREAM + data.name])})
    if not watch_ids:
        return 0
    for watch_id in watch_ids:
        tables.drop_keys(watch_id, [f"p:{m}" for m in data.remove])
        tables.add_keys(watch_id, [f"p:{m}" for m in data.add])
    gone = sorted(
        REFS.decode(c.data).observation_id
        for at in range(0, len(data.remove), PAPERS_PART)
        for c in store.read_of([f"paper:{m}" for m in data.remove[at : at + PAPERS_PART]], (CITATION,))
    )
    for watch_id in watch_ids:
        tables.uncover(watch_id, gone)
    covers = [c for w in watch_ids for c in papers_covers(store, w, data.add)]
    tables.cover(covers)
    return _record(_held_notices(store, {c.work_id for c in covers}, covers), store, now)


def raise_new(store: Store, clock: Clock) -> int:
    """Raise the alerts of every event appended after the cursor, a page per transaction; returns
    how many alerts were raised. With no watch in force it only reads (the cursor stays; the next
    first watch moves it to the head)."""
    tables = store.alerts
    if not tables.any_watch() or tables.cursor() >= store.head().seq:
        return 0
    raised = 0
    while True:
        n, more = _raise_page(store, clock.now_us())
        raised += n
        if not more:
            return raised


def _raise_page(store: Store, now: int) -> tuple[int, bool]:
    tables = store.alerts
    with tables.raising():
        cursor, head = tables.cursor(), store.head().seq
        if cursor >= head or not tables.any_watch():
            return 0, False
        events = store.read_log(after=cursor, limit=PAGE)
        # a collection's change is raised alone, in its place: the notices before it are raised for
        # the members before it, those after for the members after
        change = next((i for i, e in enumerate(events) if e.type == COLLECTION_TYPE), None)
        if change == 0:
            raised = _collection_changed(store, events[0], now)
            tables.advance(events[0].seq)
            return raised, events[0].seq < head
        events = events if change is None else events[:change]
        covers: list[Cover] = []
        checks: list[StoredEvent] = []
        keyed: dict[str, list[str]] = {}  # event's keys -> watches they find, looked up once a page
        keys_of: dict[int, list[str]] = {}
        for e in events:
            if e.type == CITATION or e.type == RESOLUTION:
                refs = REFS.decode(e.data)
                w = refs.cited_work
                if w is not None and w.work_id is not None:
                    keys_of[e.seq] = index_keys(w)
            elif e.type == _STANDING:
                checks.append(e)
        streams = sorted({f"p:{e.stream.removeprefix('paper:')}" for e in events if e.seq in keys_of})
        wanted = sorted({k for ks in keys_of.values() for k in ks})
        for key, watch_id in tables.watchers([*streams, *wanted]):
            keyed.setdefault(key, []).append(watch_id)
        resolved: dict[tuple[str, str], int] = {}  # (watch, work) -> the first resolution naming it
        for e in events:
            if e.seq not in keys_of:
                continue
            by_paper = keyed.get(f"p:{e.stream.removeprefix('paper:')}", [])
            by_key = sorted({w for k in keys_of[e.seq] for w in keyed.get(k, [])})
            mine = event_covers(e, by_paper, by_key)
            if e.type == RESOLUTION:
                for c in mine:
                    resolved.setdefault((c.watch_id, c.work_id), e.seq)
            covers += mine
        tables.cover(covers)
        candidates = [
            c._replace(resolution_seq=resolved.get((c.watch_id, c.work_id)))
            for c in _held_notices(store, {c.work_id for c in covers}, covers)
        ]
        candidates += _check_notices(store, checks)
        raised = _record(candidates, store, now)
        tables.advance(events[-1].seq)
        return raised, events[-1].seq < head


def _held_notices(store: Store, work_ids: set[str], covers: Sequence[Cover] = ()) -> list[_Candidate]:
    """The notices the latest check of each source holds for these works (as the record shows them),
    one candidate per covering watch (or, with no covers, with an empty watch id to fill in)."""
    if not work_ids:
        return []
    rows: list[CheckRow] = store.works.current_checks(sorted(work_ids))
    watches_of: dict[str, set[str]] = {}
    for c in covers:
        watches_of.setdefault(c.work_id, set()).add(c.watch_id)
    hashes = {e.seq: e.hash for e in store.envelopes(sorted({r.seq for r in rows}))}
    out = []
    for r in rows:
        for notice in r.notices:
            if notice.get("work_id") != r.work_id:
                continue
            key = notice_key(r.source, notice)
            for watch_id in sorted(watches_of.get(r.work_id, {""})):
                out.append(_Candidate(watch_id, r.work_id, key, r.source, notice, r.seq, hashes[r.seq],
                                      r.observed_at))  # fmt: skip
    return out


def _check_notices(store: Store, checks: Sequence[StoredEvent]) -> list[_Candidate]:
    """A candidate for each notice a new standing check holds and each watch covering its work."""
    found: list[tuple[StoredEvent, str, str, JsonObject]] = []  # (check, source, work_id, notice)
    for e in checks:
        data = decode_data(e.type, e.data)
        for n in data.notices:
            if n.work_id is not None:
                found.append((e, data.source, n.work_id, msgspec.to_builtins(n)))
    covering: dict[str, list[str]] = {}
    for work_id, watch_id, _ in store.alerts.covering(sorted({w for _, _, w, _ in found})):
        covering.setdefault(work_id, []).append(watch_id)
    out = []
    for e, source, work_id, notice in found:
        key = notice_key(source, notice)
        for watch_id in sorted(set(covering.get(work_id, []))):
            out.append(_Candidate(watch_id, work_id, key, source, notice, e.seq, e.hash, e.observed_at))
    return out


def _record(
    candidates: Sequence[_Candidate], store: Store, now: int, watches: dict[str, Watch] | None = None
) -> int:
    """Number and store the candidates not raised before (the first seq that held each), with the
    outbox entries of those whose watch has a callback; returns how many."""
    tables = store.alerts
    first: dict[tuple[str, str, str], _Candidate] = {}
    for c in sorted(candidates, key=lambda c: c.seq):
        first.setdefault((c.watch_id, c.work_id, c.key), c)
    known = tables.known(list(first))
    fresh = [c for t, c in first.items() if t not in known]
    if not fresh:
        return 0
    watches = dict(watches or {})
    for watch_id in {c.watch_id for c in fresh} - set(watches):
        w = tables.watch(watch_id)
        if w is not None:
            watches[watch_id] = w
    n = tables.last_n()
    raised_at = format_recorded(now)
    citing, works = _citing(store, fresh)
    alerts, outbox = [], []
    for c in fresh:
        watch = watches[c.watch_id]
        held = c.seq <= watch.created_seq
        n += 1
        work = works.get(c.work_id) or _unnamed(c.work_id)
        body = alert_body(c, watch, held, raised_at, citing.get((c.watch_id, c.work_id), []), work)
        alerts.append(Alert(n, alert_id(c.watch_id, c.work_id, c.key), c.watch_id, c.work_id, c.key, c.seq,
                            held, canonical(body).decode(), raised_at, now))  # fmt: skip
        if watch.callback_url:
            outbox.append((n, c.watch_id, now))
    tables.add_alerts(alerts, outbox)
    return len(alerts)


def _unnamed(work_id: str) -> JsonObject:
    """A work no observation names by an identifier or a title (its work_id only)."""
    return {"work_id": work_id, "doi": None, "arxiv_id": None, "title": None}


def _citing(
    store: Store, fresh: Sequence[_Candidate]
) -> tuple[dict[tuple[str, str], list[JsonObject]], dict[str, JsonObject]]:
    """The citing references of each (watch, work): the watch's covering observations, each with its
    citing paper and reference index (at most MAX_CITING); and each work as those references name it:
    its DOI, arXiv id and title (the first each gives, by observation id), the work the notice is on."""
    tables = store.alerts
    covers = tables.covering(sorted({c.work_id for c in fresh}))
    oids = sorted({oid for _, _, oid in covers if oid})
    facts = store.works.observation_facts(oids, -(2**62), 2**62) if oids else []
    cited: dict[str, JsonObject] = {}
    works: dict[str, JsonObject] = {}
    for oid, o in sorted(observations(facts).items()):
        c = o.cit.data
        # the work as the latest resolution displays it, else as the reference gave it
        w = displayed(c.cited_work, None if o.res is None else o.res.data.cited_work)
        if w is not None and w.work_id is not None:
            named = works.setdefault(w.work_id, _unnamed(w.work_id))
            for key, value in (
                ("doi", w.doi),
                ("arxiv_id", w.arxiv_id or w.pith_arxiv_id),
                ("title", w.title),
            ):
                if named[key] is None and value is not None and (not isinstance(value, str) or value.strip()):
                    named[key] = value
        cited[oid] = {
            "arxiv_id": c.citing_arxiv_id,
            "observation_id": oid,
            "reference_index": c.reference_index,
        }
    out: dict[tuple[str, str], list[JsonObject]] = {}
    for work_id, watch_id, oid in covers:
        mine = out.setdefault((watch_id, work_id), [])
        if oid in cited and len(mine) < MAX_CITING and cited[oid] not in mine:
            mine.append(cited[oid])
    return out, works


def alert_body(
    c: _Candidate,
    watch: Watch,
    held: bool,
    raised_at: str,
    citing: Sequence[JsonObject],
    work: JsonObject,
) -> JsonObject:
    """The alert as a webhook, a feed and the API carry it: `work` is the work the notice is on (its
    work_id, DOI, arXiv id and title), `citing` the references that cite it."""
    paper = watch.target if watch.kind == PAPER else (citing[0]["arxiv_id"] if citing else None)
    links: JsonObject = {"proof": f"/evidence/{c.seq}/proof", "watch": f"/watches/{watch.id}/alerts"}
    if paper is not None:
        # from the watch's making, or from just before the check when the check is dated earlier (a
        # source file observed before the watch was made): `from` must come before `to`
        at = parse_ts(c.observed_at)
        since = min(parse_ts(watch.created_at), at - 1)
        links["record"] = f"/paper/{paper}/citation-record?" + urlencode({"as_of": c.observed_at}, safe=":")
        links["changes"] = f"/paper/{paper}/changes?" + urlencode(
            {"from": format_recorded(since), "to": c.observed_at}, safe=":"
        )
    body: JsonObject = {
        "id": alert_id(c.watch_id, c.work_id, c.key),
        "watch": {"id": watch.id, "kind": watch.kind, "target": watch_target(watch)},
        "work": dict(work),
        "notice": {**c.notice, "source": c.source},
        "event": {"seq": c.seq, "hash": c.hash, "type": _STANDING, "observed_at": c.observed_at},
        "citing": [*citing],
        "held_before_watch": held,
        "raised_at": raised_at,
        "links": links,
    }
    if c.resolution_seq is not None and c.seq < c.resolution_seq:
        # held before a resolution named the work: the notice was known before the reference was resolved
        body["known_before"] = {"seq": c.seq, "resolution_seq": c.resolution_seq}
    return body

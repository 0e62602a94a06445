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
import ipaddress
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlencode, urlsplit

import msgspec

from ledger.model.codec import canonical, check_collection_name, decode_data
from ledger.model.doi import arxiv_key, doi_key, work_keys
from ledger.model.errors import Conflict, InvalidEvent, NotFound
from ledger.model.events import CitedWork, CollectionData, Notice, StoredEvent
from ledger.model.facts import Fact
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import Clock, format_recorded, parse_ts
from ledger.storage.derived.keys import work_index_key
from ledger.storage.derived.spans import ObservationRefs
from ledger.storage.state.alerts import Alert, Watch
from ledger.storage.works_store import current_works, displayed
from projections.record import observations
from service.alerts.address_table import metadata, named_may_reach, refusal
from service.alerts.secrets import SECRET_PREFIX, new_secret, whsec_key
from service.collections import PREFIX as COLLECTION_STREAM
from service.collections import TYPE as COLLECTION_TYPE
from service.collections import fold

if TYPE_CHECKING:
    from ledger.model.facts import CheckRow
    from ledger.storage.interface import Store

PAPER, WORKS, COLLECTION = "paper", "works", "collection"
PAGE = 2000  # events read (and raised from) per transaction
MAX_WORKS = 1000  # works one watch may list
MAX_URL = 2048
MAX_SECRET = 256
_PAPERS_PART = 500  # papers whose events one statement reads (a collection's members)
MAX_CITING = 10  # citing observations an alert names (a works watch's work may be cited very often)
_ALERT_NS = uuid.UUID("6c656467-6572-2d61-6c65-72742d69642e")  # "ledger-alert-id."
_CITATION, _RESOLUTION, _STANDING = "citation.observed", "resolution.observed", "standing.checked"


class WatchSpec(NamedTuple):
    """A watch as asked for (POST /watches, `ledger watch add`), checked."""

    kind: str
    target: str  # the arXiv id, the collection's name, or canonical JSON of the works as given
    # what finds it: "p:<arXiv id>", "collection:<name>" (its members' "p:" keys are kept as it
    # changes) or the works index keys of its works
    keys: list[str]
    callback_url: str | None
    secret: str | None
    secret_made: bool = False  # made here (none was given): told once, in the answer that makes the watch


def parse_watch(body: Any, allow: Iterable[str] = ()) -> WatchSpec:
    """A watch request (`{"arxiv_id": ...}`, `{"collection": ...}` or `{"works": [...]}`, with
    `callback_url` and `secret`) -> a WatchSpec, or InvalidEvent naming the field."""
    if not isinstance(body, dict):
        raise InvalidEvent(
            "$", 'a watch is a JSON object: {"arxiv_id": ...}, {"collection": ...} or {"works": [...]}'
        )
    unknown = sorted(set(body) - {"arxiv_id", "works", "collection", "callback_url", "secret"})
    if unknown:
        raise InvalidEvent(
            unknown[0], "unknown field (expected arxiv_id, collection or works, callback_url, secret)"
        )
    if sum(k in body for k in ("arxiv_id", "works", "collection")) != 1:
        raise InvalidEvent(
            "$",
            "give exactly one of arxiv_id (a paper), collection (a collection's name) and works "
            "(a list of works)",
        )
    callback, secret = body.get("callback_url"), body.get("secret")
    if callback is not None:
        check_callback(callback, allow)
    if secret is not None:
        _check_secret(secret)
    if secret is not None and callback is None:
        raise InvalidEvent("secret", "a secret signs webhooks: give a callback_url with it")
    made = secret is None and callback is not None
    if made:
        secret = new_secret()  # every webhook is signed
    if "arxiv_id" in body:
        if not isinstance(body["arxiv_id"], str):
            raise InvalidEvent("arxiv_id", "an arXiv id, a string: NNNN.NNNNN or archive/NNNNNNN")
        arxiv_id = normalise_arxiv(body["arxiv_id"], "arxiv_id")  # as pasted: arXiv:...v1, a URL, a DOI
        return WatchSpec(PAPER, arxiv_id, [f"p:{arxiv_id}"], callback, secret, made)
    if "collection" in body:
        name = body["collection"]
        if not isinstance(name, str):
            raise InvalidEvent("collection", "a collection's name, a string")
        check_collection_name(name, "collection")
        return WatchSpec(COLLECTION, name, [COLLECTION_STREAM + name], callback, secret, made)
    works = body["works"]
    if not isinstance(works, list) or not 0 < len(works) <= MAX_WORKS:
        raise InvalidEvent("works", f"a list of 1 to {MAX_WORKS} works (doi:... or arxiv:...)")
    keys: list[str] = []
    for i, w in enumerate(works):
        keys.append(work_index_key(_work_key(w, f"works[{i}]")))
    return WatchSpec(WORKS, canonical(works).decode(), sorted(set(keys)), callback, secret, made)


def _check_secret(secret: Any) -> None:
    """InvalidEvent naming `secret` unless it is a secret a watch may sign with."""
    if not isinstance(secret, str) or not 0 < len(secret) <= MAX_SECRET:
        raise InvalidEvent("secret", f"a string of 1 to {MAX_SECRET} characters")
    if secret.startswith(SECRET_PREFIX) and whsec_key(secret) is None:
        raise InvalidEvent("secret", "a whsec_ secret is whsec_ and the base64 of its key")


def parse_rotation(body: Any) -> tuple[str, bool]:
    """A rotation request (`{}` or `{"secret": ...}`, as when a watch is made) -> (the new secret,
    whether it was made here), or InvalidEvent naming the field."""
    if not isinstance(body, dict):
        raise InvalidEvent("$", 'a rotation is a JSON object: {} or {"secret": ...}')
    unknown = sorted(set(body) - {"secret"})
    if unknown:
        raise InvalidEvent(unknown[0], "unknown field (expected secret, or nothing: one is made)")
    if body.get("secret") is None:
        return new_secret(), True
    _check_secret(body["secret"])
    return str(body["secret"]), False


class Rotated(NamedTuple):
    """A rotation done: the watch as it is now, the new secret, whether it was made here, and until
    when the old secret signs beside it."""

    watch: Watch
    secret: str
    made: bool
    old_until_us: int


def rotate_secret(
    store: Store,
    clock: Clock,
    watch_id: str,
    secret: str,
    made: bool,
    grace_s: float,
    owner: str | None = None,
    at_us: int | None = None,
) -> Rotated:
    """Give `owner`'s watch (any watch for None, the operator) a new secret; the old one signs beside
    it for `grace_s` seconds from `at_us` (now). The watch, its alerts, their ids and its pending
    deliveries stay as they are. NotFound as for no watch; Conflict when the watch signs nothing."""
    watch = watch_of(store, watch_id, owner)
    # a watch with a callback stored before every webhook was signed gets its first secret here
    if watch.callback_url is None:
        raise Conflict(
            f"watch {watch.id} has no callback_url: it signs nothing, so there is no secret to rotate",
            details={"watch_id": watch.id},
        )
    until = (clock.now_us() if at_us is None else at_us) + int(grace_s * 1e6)
    tables = store.alerts
    with tables.updating():
        # removed since it was read: as for no watch
        if not tables.rotate_secret(watch.id, secret, until) or (rotated := tables.watch(watch.id)) is None:
            raise NotFound(f"no watch {watch_id!r}", details={"watch_id": watch_id})
    return Rotated(rotated, secret, made, until)


def rotation_json(r: Rotated) -> dict[str, Any]:
    """A rotation as the API answers it: the secret only when the server made it, this once."""
    out: dict[str, Any] = {
        "id": r.watch.id,
        "rotated": True,
        "old_secret_valid_until": format_recorded(r.old_until_us),
    }
    if r.made:
        out["secret"] = r.secret
    return out


def _work_key(w: Any, where: str) -> str:
    """A listed work (`doi:10.1/x`, `arxiv:2401.00001`, or a bare DOI) -> its match key."""
    if not isinstance(w, str) or not w.strip():
        raise InvalidEvent(where, "a work is a string: doi:10.1000/x or arxiv:2401.00001")
    text = w.strip()
    if text.lower().startswith("arxiv:"):
        key = arxiv_key(normalise_arxiv(text, where))  # a version suffix, as pasted, names the same work
        if key is None:
            raise InvalidEvent(where, f"bad arXiv id {text!r}: expected arxiv:NNNN.NNNNN or archive/NNNNNNN")
        return key
    key = doi_key(text)  # takes doi: and doi.org prefixes off
    if key is None or not key.startswith("10.") or "/" not in key:
        raise InvalidEvent(where, f"{text!r} is neither doi:10.<prefix>/<suffix> nor arxiv:<id>")
    return key


def check_callback(url: Any, allow: Iterable[str] = ()) -> None:
    """InvalidEvent unless `url` is an https URL (http only for a host LEDGER_WEBHOOK_ALLOW names),
    with a host, no credentials, and not a literal address the policy refuses."""
    if not isinstance(url, str) or not 0 < len(url) <= MAX_URL:
        raise InvalidEvent("callback_url", f"an https URL of at most {MAX_URL} characters")
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise InvalidEvent("callback_url", f"not a URL: {e}") from None
    if not host or parts.username is not None or parts.password is not None or port == 0:
        raise InvalidEvent("callback_url", "an https URL with a host and no user or password in it")
    policy = AddressPolicy(allow)
    if parts.scheme != "https" and not (parts.scheme == "http" and policy.names(host)):
        raise InvalidEvent("callback_url", "must be https (http only for a host LEDGER_WEBHOOK_ALLOW names)")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        return  # a name: its addresses are checked at each delivery, on the address connected to
    why = policy.refused(host, literal)
    if why is not None:
        raise InvalidEvent("callback_url", why)


class AddressPolicy:
    """Which addresses a webhook may connect to: public ones, and what LEDGER_WEBHOOK_ALLOW opens
    (an address or CIDR: what it holds; a host name: the private ranges it resolves to; http is
    allowed for both). Refused by default: every special-purpose range of service/alerts/address_table.py
    that is not globally reachable, NAT64, multicast and reserved."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.hosts: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for item in allow:
            item = item.strip().lower()
            if not item:
                continue
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                self.hosts.add(item)

    def names(self, host: str) -> bool:
        """Whether the operator allowed this host by name or by one of its networks (a literal)."""
        host = host.lower()
        if host in self.hosts:
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in n for n in self.networks if n.version == ip.version)

    def refused(self, host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
        """Why connecting to `ip` (resolved from `host`) is refused, or None when it is allowed.

        An address or CIDR listed opens what it holds; a host listed by name opens only the private
        ranges (address_table.NAMED_MAY_REACH) it resolves into, never loopback, link-local or metadata.
        """
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        forms = [a for a in (ip, mapped) if a is not None]
        if any(a in n for a in forms for n in self.networks if n.version == a.version):
            return None
        special = refusal(ip)
        if special is None:
            return None
        named = host.lower() in self.hosts
        if named and named_may_reach(ip):
            return None
        why = f"; {special.why}" if special.why else ""
        cloud = metadata(ip)
        why += f"; {cloud}" if cloud else ""
        fix = (
            f"LEDGER_WEBHOOK_ALLOW names {host}, which opens only private ranges to it: list the "
            "address or a CIDR to allow this one"
            if named
            else "LEDGER_WEBHOOK_ALLOW can name it"
        )
        return f"{host} is {ip}, in {special.network} ({special.name}, {special.rfc}{why}): refused " + (
            f"(server-side request forgery); {fix}"
        )


# -- raising ----------------------------------------------------------------------------------


def notice_key(source: str, notice: Notice | dict[str, Any]) -> str:
    """The identity of one notice of one source: the sha256 of its canonical JSON (a notice repeated
    by later checks of the same source is the same notice)."""
    return hashlib.sha256(canonical({"notice": notice, "source": source})).hexdigest()


def alert_id(watch_id: str, work_id: str, key: str) -> str:
    """The alert's id: the same (watch, work, notice) always gets the same one (stable across retries)."""
    return str(uuid.uuid5(_ALERT_NS, f"{watch_id}\n{work_id}\n{key}"))


class _Cover(NamedTuple):
    work_id: str
    watch_id: str
    observation_id: str


class _Candidate(NamedTuple):
    watch_id: str
    work_id: str
    key: str
    source: str
    notice: Any  # the notice as stored (a plain dict)
    seq: int
    hash: str
    observed_at: str
    # the resolution that newly named a work whose notice was held already (its seq), if that raised it
    resolution_seq: int | None = None


class _Refs(ObservationRefs):
    cited_work: CitedWork | None = None


_REFS = msgspec.json.Decoder(_Refs)
_NOTICES = msgspec.json.Decoder(list[Notice])


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
            members = _members_at(store, spec.target, tables.cursor())
            keys += [f"p:{m}" for m in members]
        watch = Watch(str(uuid.uuid4()), spec.kind, spec.target, spec.callback_url, spec.secret,
                      format_recorded(now), head.seq, None, owner)  # fmt: skip
        tables.add_watch(watch, keys)
        covers = (
            _covering_now(store, watch, spec, now)
            if members is None
            else _papers_covers(store, watch.id, members)
        )
        tables.cover(covers)
        held = _held_notices(store, {c.work_id for c in covers})
        _record([c._replace(watch_id=watch.id) for c in held], store, now, {watch.id: watch})
    return watch, sorted({c.work_id for c in covers})


def _members_at(store: Store, name: str, upto: int) -> list[str]:
    """The members of collection `name` after the events up to seq `upto` (the raiser's cursor: it
    applies the later changes itself, in their place); NotFound for a collection not made at all (a
    watch on a name nothing made would never raise an alert)."""
    events = store.read_log(stream=COLLECTION_STREAM + name, type=COLLECTION_TYPE)
    if name not in fold(events):
        raise NotFound(
            f"no collection {name!r}: make it first (ledger collection add, POST /collections/{{name}})",
            details={"collection": name},
        )
    return sorted(fold(e for e in events if e.seq <= upto).get(name, ()))


def _papers_covers(store: Store, watch_id: str, papers: Sequence[str]) -> list[_Cover]:
    """What a watch covers through these papers' outbound references, as the ledger stands (their
    citations and resolutions read a part of the papers per statement)."""
    covers = []
    for at in range(0, len(papers), _PAPERS_PART):
        streams = [f"paper:{p}" for p in papers[at : at + _PAPERS_PART]]
        for e in store.read_of(streams, (_CITATION, _RESOLUTION)):
            covers += _event_covers(e, [watch_id], [])
    return covers


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
        _REFS.decode(c.data).observation_id
        for at in range(0, len(data.remove), _PAPERS_PART)
        for c in store.read_of([f"paper:{m}" for m in data.remove[at : at + _PAPERS_PART]], (_CITATION,))
    )
    for watch_id in watch_ids:
        tables.uncover(watch_id, gone)
    covers = [c for w in watch_ids for c in _papers_covers(store, w, data.add)]
    tables.cover(covers)
    return _record(_held_notices(store, {c.work_id for c in covers}, covers), store, now)


def _covering_now(store: Store, watch: Watch, spec: WatchSpec, now: int) -> list[_Cover]:
    """The works a new watch covers as the ledger stands at `now`."""
    if spec.kind == PAPER:
        covers = []
        for e in store.read_log(stream=f"paper:{spec.target}"):
            covers += _event_covers(e, [watch.id], [])
        return covers
    # the observations the works index names under the watch's keys, each by the work it displays now
    facts = store.works.work_facts(spec.keys, now)
    by_observation: dict[str, list[Any]] = {}
    for f in facts:
        by_observation.setdefault(f.data.observation_id, []).append(f)
    wanted = {k.removeprefix("w:") for k in spec.keys}
    covers = []
    for oid, mine in by_observation.items():
        for w in current_works(mine):
            if {k.removeprefix("w:") for k in _keys(w)} & wanted:
                covers.append(_Cover(w.work_id, watch.id, oid))
    return covers


def _event_covers(e: StoredEvent, paper_watches: Sequence[str], by_key: Sequence[str]) -> list[_Cover]:
    """What a citation or resolution makes the watches cover: its paper's watches (by its stream)
    and the works watches its cited work's keys find, each the work_id of the work it cites."""
    if e.type != _CITATION and e.type != _RESOLUTION:
        return []
    refs = _REFS.decode(e.data)
    w = refs.cited_work
    if w is None or w.work_id is None:
        return []
    return [_Cover(w.work_id, watch_id, refs.observation_id) for watch_id in [*paper_watches, *by_key]]


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
        covers: list[_Cover] = []
        checks: list[StoredEvent] = []
        keyed: dict[str, list[str]] = {}  # event's keys -> watches they find, looked up once a page
        keys_of: dict[int, list[str]] = {}
        for e in events:
            if e.type == _CITATION or e.type == _RESOLUTION:
                refs = _REFS.decode(e.data)
                w = refs.cited_work
                if w is not None and w.work_id is not None:
                    keys_of[e.seq] = _keys(w)
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
            mine = _event_covers(e, by_paper, by_key)
            if e.type == _RESOLUTION:
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


def _keys(w: Any) -> list[str]:
    """The works index keys of a cited work (a CitedWork or a KnownWork)."""
    return sorted({work_index_key(k) for k in work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)})


def _held_notices(store: Store, work_ids: set[str], covers: Sequence[_Cover] = ()) -> list[_Candidate]:
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
    found: list[tuple[StoredEvent, str, Any]] = []
    for e in checks:
        data = decode_data(e.type, e.data)
        for n in data.notices:
            if n.work_id is not None:
                found.append((e, data.source, msgspec.to_builtins(n)))
    covering: dict[str, list[str]] = {}
    for work_id, watch_id, _ in store.alerts.covering(sorted({n["work_id"] for _, _, n in found})):
        covering.setdefault(work_id, []).append(watch_id)
    out = []
    for e, source, notice in found:
        key = notice_key(source, notice)
        for watch_id in sorted(set(covering.get(notice["work_id"], []))):
            out.append(
                _Candidate(watch_id, notice["work_id"], key, source, notice, e.seq, e.hash, e.observed_at)
            )
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


def _unnamed(work_id: str) -> dict[str, Any]:
    """A work no observation names by an identifier or a title (its work_id only)."""
    return {"work_id": work_id, "doi": None, "arxiv_id": None, "title": None}


def _citing(
    store: Store, fresh: Sequence[_Candidate]
) -> tuple[dict[tuple[str, str], list[dict[str, Any]]], dict[str, dict[str, Any]]]:
    """The citing references of each (watch, work): the watch's covering observations, each with its
    citing paper and reference index (at most MAX_CITING); and each work as those references name it:
    its DOI, arXiv id and title (the first each gives, by observation id), the work the notice is on."""
    tables = store.alerts
    covers = tables.covering(sorted({c.work_id for c in fresh}))
    oids = sorted({oid for _, _, oid in covers if oid})
    facts = store.works.observation_facts(oids, -(2**62), 2**62) if oids else []
    cited: dict[str, dict[str, Any]] = {}
    works: dict[str, dict[str, Any]] = {}
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
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
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
    citing: Sequence[dict[str, Any]],
    work: dict[str, Any],
) -> dict[str, Any]:
    """The alert as a webhook, a feed and the API carry it: `work` is the work the notice is on (its
    work_id, DOI, arXiv id and title), `citing` the references that cite it."""
    paper = watch.target if watch.kind == PAPER else (citing[0]["arxiv_id"] if citing else None)
    links: dict[str, str] = {"proof": f"/evidence/{c.seq}/proof", "watch": f"/watches/{watch.id}/alerts"}
    if paper is not None:
        # from the watch's making, or from just before the check when the check is dated earlier (a
        # source file observed before the watch was made): `from` must come before `to`
        at = parse_ts(c.observed_at)
        since = min(parse_ts(watch.created_at), at - 1)
        links["record"] = f"/paper/{paper}/citation-record?" + urlencode({"as_of": c.observed_at}, safe=":")
        links["changes"] = f"/paper/{paper}/changes?" + urlencode(
            {"from": format_recorded(since), "to": c.observed_at}, safe=":"
        )
    body = {
        "id": alert_id(c.watch_id, c.work_id, c.key),
        "watch": {"id": watch.id, "kind": watch.kind, "target": _target(watch)},
        "work": dict(work),
        "notice": {**c.notice, "source": c.source},
        "event": {"seq": c.seq, "hash": c.hash, "type": _STANDING, "observed_at": c.observed_at},
        "citing": list(citing),
        "held_before_watch": held,
        "raised_at": raised_at,
        "links": links,
    }
    if c.resolution_seq is not None and c.seq < c.resolution_seq:
        # held before a resolution named the work: the notice was known before the reference was resolved
        body["known_before"] = {"seq": c.seq, "resolution_seq": c.resolution_seq}
    return body


def _target(watch: Watch) -> Any:
    return msgspec.json.decode(watch.target) if watch.kind == WORKS else watch.target


_TARGET_KEY = {PAPER: "arxiv_id", COLLECTION: "collection", WORKS: "works"}


def watch_json(watch: Watch, covered: Sequence[str] | None = None, made: bool = False) -> dict[str, Any]:
    """A watch as the API answers it: the secret the server `made` for it only in the answer that made
    it, never after (nor one the caller gave)."""
    out: dict[str, Any] = {
        "id": watch.id,
        "kind": watch.kind,
        _TARGET_KEY.get(watch.kind, "works"): _target(watch),
        "callback_url": watch.callback_url,
        "signed": watch.secret is not None,
        "created_at": watch.created_at,
        "created_at_seq": watch.created_seq,
    }
    if covered is not None:
        out["works_covered"] = list(covered)
    if made and watch.secret is not None:
        out["secret"] = watch.secret
    return out


def watch_of(store: Store, watch_id: str, owner: str | None = None) -> Watch:
    """The watch in force under this id, or NotFound; given an `owner`, only one that owner made
    (another's is not found either, so its existence is not confirmed)."""
    w = store.alerts.watch(watch_id)
    if w is None or w.removed_at is not None or (owner is not None and w.owner != owner):
        raise NotFound(f"no watch {watch_id!r}", details={"watch_id": watch_id})
    return w


# -- a paper's notices (the record page's alerts and the Atom feed) ---------------------------------


class PaperNotice(NamedTuple):
    """A notice a standing check holds for a work the paper cites, and the first check that held it."""

    id: str  # stable: the paper, the work and the notice
    work_id: str
    title: str | None  # the cited work's, as parsed
    observation_id: str
    reference_index: int | None
    source: str
    notice: dict[str, Any]
    seq: int  # the first check (as of T) whose rows for the work hold it
    hash: str
    observed_at: str
    doi: str | None = None  # the cited work's, as its reference or resolution gives it
    arxiv_id: str | None = None

    def work(self) -> dict[str, Any]:
        """The work the notice is on, as an alert names it."""
        return {"work_id": self.work_id, "doi": self.doi, "arxiv_id": self.arxiv_id, "title": self.title}


def work_name(work: dict[str, Any]) -> str:
    """A work as a reader names it: its DOI or arXiv id and its title in quotes; its work_id only when
    it has neither (the ledger's own id, which names it nowhere else)."""
    ids = [
        f"DOI {work['doi']}" if work.get("doi") else "",
        f"arXiv:{work['arxiv_id']}" if work.get("arxiv_id") else "",
    ]
    named = " ".join(i for i in ids if i)
    title = f"“{work['title']}”" if work.get("title") else ""
    if not named and not title:
        return f"work {work.get('work_id')} (no identifier or title given)"
    return " ".join(p for p in (named, title) if p)


def paper_notices(
    store: Store, arxiv_id: str, as_of_us: int, known_us: int | None = None
) -> list[PaperNotice]:
    """The notices in force as of T (the latest check of each source, as the record shows them) for the
    works the paper's outbound references cite, each with the first check that listed it; by seq."""
    return paper_alerts(store, arxiv_id, as_of_us, known_us)[0]


def paper_alerts(
    store: Store, arxiv_id: str, as_of_us: int, known_us: int | None = None
) -> tuple[list[PaperNotice], list[str]]:
    """`paper_notices`, and the sources that had checked works as of T (what "no notice" covers)."""
    with store.snapshot(as_of_us, known_us) as reader:
        return alerts_in(reader, arxiv_id, reader.paper_stream(arxiv_id))


def alerts_in(reader: Any, arxiv_id: str, facts: list[Fact]) -> tuple[list[PaperNotice], list[str]]:
    """`paper_alerts` from a reader as of T and the paper's stream as of T, already read."""
    sources = sorted({h.source for h in reader.source_heads()})
    refs: dict[str, tuple[str, int | None, CitedWork]] = {}  # work_id -> observation, index, the work
    for oid, o in sorted(observations(facts).items()):
        w = displayed(o.cit.data.cited_work, None if o.res is None else o.res.data.cited_work)
        if w is not None and w.work_id is not None and w.work_id not in refs:
            refs[w.work_id] = (oid, o.cit.data.reference_index, w)
    history = reader.check_history(sorted(refs))
    first: dict[tuple[str, str, str], tuple[str, int, str]] = {}  # (work, source, notice key) -> first row
    current: dict[tuple[str, str], list[Notice]] = {}  # (work, source) -> notices of its latest check
    for work_id, source, observed_at, _, seq, hash_, raw in history:
        notices = _NOTICES.decode(raw)
        for w in refs if work_id == "*" else [work_id]:
            mine = [n for n in notices if n.work_id == w]
            current[(w, source)] = mine
            for n in mine:
                first.setdefault((w, source, notice_key(source, n)), (observed_at, seq, hash_))
    out = []
    for (work_id, source), notices in current.items():
        oid, index, w = refs[work_id]
        for n in notices:
            key = notice_key(source, n)
            observed_at, seq, hash_ = first[(work_id, source, key)]
            # a PaperNotice holds the notice as JSON values: the feed, the page and the alerts read keys
            out.append(PaperNotice(alert_id(f"paper:{arxiv_id}", work_id, key), work_id, w.title, oid, index,
                                   source, msgspec.to_builtins(n), seq, hash_, observed_at, w.doi,
                                   w.arxiv_id or w.pith_arxiv_id))  # fmt: skip
    return sorted(out, key=lambda n: (n.seq, n.work_id, n.source, n.id)), sources

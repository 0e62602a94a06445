"""The screen of a set of papers (or the whole ledger) as of T, known at K, a page at a time: each
reference resolved (verified) to a work carrying a standing notice, the notice, when the ledger learned
it and who resolved the reference; and what became flagged or cleared between two instants.

It reads the screen's index (ledger/storage/derived/screen.py): the works some check lists a notice
for, then only the references that ever named one of them, a few citing papers at a time in code-point
order, until a page is full. The answer names the head it was read at and the seq of every event it
shows, so it can be proven (an inclusion proof per seq against a checkpoint of that head).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple, Protocol

import msgspec

from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent
from ledger.model.events import NOTICE_KINDS, Notice
from ledger.model.facts import Fact, Head
from ledger.model.instants import format_as_of, format_recorded
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.record_types import NoticeEvent
from ledger.storage.interface import Store
from projections import screen as proj

SCHEMA = "citation-ledger.screen.v1"
CHANGES_SCHEMA = "citation-ledger.screen-changes.v1"
# the fewest citing papers read per step while a page fills
MIN_CHUNK = 50
PAGE_SETTING = "LEDGER_SCREEN_PAGE_MAX"
DEFAULT_PAGE = 100  # lines of a page when none is asked for
_NOTICE_FIELDS = Notice.__struct_fields__


class Query(NamedTuple):
    """What a screen asks: the papers (None: every paper), T, K (None: now), the notice kinds (None:
    every kind) and whether only exact resolutions count."""

    papers: frozenset[str] | None
    as_of_us: int
    known_us: int | None = None
    kinds: frozenset[str] | None = None
    exact_only: bool = False


Key = tuple[str, int, str, int]  # citing paper, reference index, observation id, place in the reference


class ScreenReader(Protocol):
    """What a screen reads from a snapshot as of T and K (ledger/storage/sql_store.py `SqlReader`)."""

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]: ...
    def screen_citing(self, papers: Sequence[str] | None, after: str | None, limit: int) -> list[str]: ...
    def notices_learned(self, work_ids: Sequence[str]) -> dict[tuple[str, str, str], tuple[int, int]]: ...


class Item(NamedTuple):
    """One line of a screen or of its changes: a flag, where it sorts, and for a change what changed
    and the events that made it."""

    key: Key
    flag: proj.Flag
    change: str | None = None
    events: tuple[int, ...] = ()


class Page(NamedTuple):
    """A page of a screen or of its changes, the head it was read at, the token of the next page
    (None on the last), and what the lines show beside their flags."""

    query: Query
    head: Head
    items: list[Item]
    next_page: str | None
    titles: dict[str, str]  # citing paper -> its title as of T
    learned: dict[tuple[str, str, str], tuple[int, int]]  # (work, source, notice) -> (recorded_us, seq)
    from_us: int | None = None  # a page of changes: from this instant to the query's T


def event_links(seq: int) -> dict[str, str]:
    """Where an event is served (its envelope in the log) and its inclusion proof."""
    return {"event": f"/evidence?after={seq - 1}&limit=1", "proof": f"/evidence/{seq}/proof"}


def check_kinds(kinds: Collection[str] | None, where: str = "kind") -> frozenset[str] | None:
    """The notice kinds asked for (None or empty: every kind); InvalidEvent naming `where` for an
    unknown one, listing the kinds there are."""
    if not kinds:
        return None
    unknown = sorted(set(kinds) - set(NOTICE_KINDS))
    if unknown:
        raise InvalidEvent(where, f"{unknown[0]!r} is no notice kind; one of {', '.join(NOTICE_KINDS)}")
    return frozenset(kinds)


def check_limit(limit: int | None, cap: int, where: str = "limit", setting: str = PAGE_SETTING) -> int:
    """The page size asked for (default DEFAULT_PAGE, at most `cap`, the setting named in a refusal)."""
    if limit is None:
        return min(DEFAULT_PAGE, cap)
    if limit < 1 or limit > cap:
        raise InvalidEvent(where, f"{limit} is not within 1..{cap} (the page cap, set by {setting})")
    return limit


def page_token(key: Key) -> str:
    """The token of the page after `key` (opaque to a client: it names where the last page ended)."""
    return (
        base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode().rstrip("=")
    )


def read_page(token: str | None, where: str = "page") -> Key | None:
    """The key a page token names; InvalidEvent naming `where` for anything that is not one."""
    if token is None or token == "":
        return None
    reason = f"{token[:40]!r} is not a page token of this screen: give back the next_page of an answer"
    if len(token) > 2048:
        raise InvalidEvent(where, "a page token is at most 2048 characters")
    try:
        value = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidEvent(where, reason) from None
    types = (str, int, str, int)
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(type(v) is t for v, t in zip(value, types, strict=True))
    ):
        raise InvalidEvent(where, reason)
    for text in (value[0], value[2]):
        # what reaches SQL: no NUL (PostgreSQL text holds none), nothing UTF-8 cannot spell
        if "\x00" in text or not text.isprintable() or len(text) > 200:
            raise InvalidEvent(where, reason)
    return (value[0], value[1], value[2], value[3])


def screen(store: Store, query: Query, page: str | None, limit: int) -> Page:
    """A page of the screen: the flags after `page`'s key, at most `limit`, in (citing paper,
    reference index, observation id, the record's order of notices) order."""
    after = read_page(page)
    with store.snapshot(query.as_of_us, query.known_us) as reader:
        head = reader.head()
        titles: dict[str, str] = {}

        def items_of(citing: Sequence[str]) -> list[Item]:
            facts = reader.screen_facts(reader.screen_observations(_with_record(reader, citing, titles)))
            states = proj.states(facts, reader.work_checks, kinds=query.kinds, exact_only=query.exact_only)
            return _numbered(proj.flags(states), None)

        items, next_key = _fill(reader, query.papers, after, limit, items_of)
        return _page(reader, query, head, items, next_key, titles)


def screen_changes(store: Store, query: Query, from_us: int, page: str | None, limit: int) -> Page:
    """A page of what became flagged or cleared from `from_us` to the query's T (both known at K), each
    with the events of the later state that made it so."""
    after = read_page(page)
    if from_us > query.as_of_us:
        raise InvalidEvent("from", f"{format_as_of(from_us)} is after to ({format_as_of(query.as_of_us)})")
    with store.snapshot(query.as_of_us, query.known_us) as reader:
        head = reader.head()
        before = reader.at(from_us, query.known_us)
        titles: dict[str, str] = {}

        def items_of(citing: Sequence[str]) -> list[Item]:
            # a work with a notice as of `from` has it as of the later T too: the later T's
            # observations are every one either instant may show
            oids = reader.screen_observations(_with_record(reader, citing, titles))
            kinds, exact_only = query.kinds, query.exact_only
            was = proj.states(
                before.screen_facts(oids), before.work_checks, kinds=kinds, exact_only=exact_only
            )
            had = set(_with_record(before, citing, {}))  # a paper with no record then showed nothing
            was = {o: st._replace(flags=[f for f in st.flags if f.citing in had]) for o, st in was.items()}
            now = proj.states(
                reader.screen_facts(oids), reader.work_checks, kinds=kinds, exact_only=exact_only
            )
            changed = proj.changes(was, now)
            return _numbered([c.flag for c in changed], changed)

        items, next_key = _fill(reader, query.papers, after, limit, items_of)
        return _page(reader, query, head, items, next_key, titles)._replace(from_us=from_us)


def _with_record(reader: ScreenReader, citing: Sequence[str], titles: dict[str, str]) -> list[str]:
    """Those of these papers that have a record as of T (a snapshot): the screen shows what records
    show, and a paper with no snapshot has none. Each one's latest title goes into `titles`."""
    latest: dict[str, tuple[int, int]] = {}
    for f in reader.snapshots(citing):
        at = (f.observed_us, f.seq)
        if f.data.arxiv_id not in latest or at > latest[f.data.arxiv_id]:
            latest[f.data.arxiv_id] = at
            titles[f.data.arxiv_id] = f.data.title
    return sorted(latest)


def _numbered(flags: Sequence[proj.Flag], changes: Sequence[proj.Change] | None) -> list[Item]:
    """Items of flags in order, each keyed by its reference and its place there."""
    out: list[Item] = []
    place: dict[tuple[str, int, str], int] = {}
    for i, f in enumerate(flags):
        n = place[f.key] = place.get(f.key, -1) + 1
        c = None if changes is None else changes[i]
        out.append(Item((*f.key, n), f, c and c.change, tuple(c.events) if c else ()))
    return out


def _fill(
    reader: ScreenReader,
    papers: frozenset[str] | None,
    after: Key | None,
    limit: int,
    items_of: Callable[[Sequence[str]], list[Item]],
) -> tuple[list[Item], Key | None]:
    """Items past `after` until `limit` are found (and one more, to know a next page is there),
    reading the citing papers a chunk at a time: the page costs what it shows, not the ledger."""
    items: list[Item] = []
    last: str | None = None
    # the store binds the papers as a sorted list
    some = None if papers is None else sorted(papers)
    if after is not None:
        # the paper the last page ended in, read alone; then the papers after it
        if papers is None or after[0] in papers:
            items = [i for i in items_of([after[0]]) if i.key > after]
        last = after[0]
    while len(items) <= limit:
        # at least a paper a line still wanted: most flagged papers show one line or more
        citing = reader.screen_citing(some, last, max(MIN_CHUNK, limit + 1 - len(items)))
        if not citing:
            break
        items += items_of(citing)
        last = citing[-1]
    if len(items) > limit:
        return items[:limit], items[limit - 1].key
    return items, None


def _page(
    reader: ScreenReader,
    query: Query,
    head: Head,
    items: list[Item],
    next_key: Key | None,
    titles: dict[str, str],
) -> Page:
    shown = {i.flag.citing: titles[i.flag.citing] for i in items}
    learned = reader.notices_learned(sorted({str(i.flag.work.work_id) for i in items}))
    token = None if next_key is None else page_token(next_key)
    return Page(query, head, items, token, shown, learned)


def notice_text(n: NoticeEvent) -> str:
    """A notice's canonical JSON as its check gave it (without the check's observed_at and source)."""
    return canonical({k: getattr(n, k) for k in _NOTICE_FIELDS}).decode()


def learned_of(page: Page, f: proj.Flag) -> tuple[int, int] | None:
    """(recorded_us, seq) of the first check that listed this flag's notice for its work."""
    return page.learned.get((str(f.work.work_id), f.notice.source, notice_text(f.notice)))


def item_json(page: Page, item: Item) -> JsonObject:
    """One line of a page as JSON: the citing paper, the reference, its resolution (with its evidence
    link), the notice, when the ledger learned it, and the seq of every event shown."""
    f = item.flag
    n = f.notice
    learned = learned_of(page, f)
    # a cleared line shows the earlier state: its evidence is as of then
    shown_at = page.from_us if item.change == "cleared" and page.from_us is not None else page.query.as_of_us
    as_of = format_as_of(shown_at)
    seqs: list[Json] = [
        *sorted({f.citation_seq, f.resolution_seq, f.check_seq, *([learned[1]] if learned else [])})
    ]
    out: JsonObject = {
        "citing": {"arxiv_id": f.citing, "title": page.titles.get(f.citing), "link": f"/paper/{f.citing}"},
        "reference_index": f.reference_index,
        "observation_id": f.observation_id,
        "work": msgspec.to_builtins(f.work),
        "resolution": {
            "status": f.status,
            "resolver_source": f.resolver_source,
            "observed_at": f.resolved_at,
            "seq": f.resolution_seq,
            "citation_seq": f.citation_seq,
            "evidence": f"/paper/{f.citing}/observations/{f.observation_id}/resolution?as_of={as_of}",
            "proof": event_links(f.resolution_seq)["proof"],
        },
        "notice": {
            **msgspec.to_builtins(n),
            "check_seq": f.check_seq,
            "learned_at": None if learned is None else format_recorded(learned[0]),
            "learned_seq": None if learned is None else learned[1],
            "evidence": event_links(f.check_seq)["event"],
            "proof": event_links(f.check_seq)["proof"],
        },
        "seqs": seqs,
    }
    if item.change is not None:
        out = {"change": item.change, "events": list(item.events), **out}
    return out


def page_json(page: Page, collection: str | None = None) -> JsonObject:
    """A page as JSON: what was asked, the head it was computed at (tree size and hash), the lines and
    the next page's token."""
    q = page.query
    out: JsonObject = {
        "schema": SCHEMA if page.from_us is None else CHANGES_SCHEMA,
        "as_of": format_as_of(q.as_of_us),
        "known_at": None if q.known_us is None else format_as_of(q.known_us),
        "head": {"tree_size": page.head.seq, "hash": page.head.hash},
        "filters": {
            "papers": None if q.papers is None or collection is not None else _sorted(q.papers),
            "collection": collection,
            "kinds": None if q.kinds is None else _sorted(q.kinds),
            "exact_only": q.exact_only,
        },
        "items": [item_json(page, i) for i in page.items],
        "next_page": page.next_page,
    }
    if page.from_us is not None:
        out = {"from": format_as_of(page.from_us), "to": out.pop("as_of"), **out}
    return out


CSV_COLUMNS = (
    "change",
    "citing_arxiv_id",
    "citing_title",
    "reference_index",
    "observation_id",
    "work_id",
    "work_doi",
    "work_arxiv_id",
    "work_title",
    "status",
    "resolver_source",
    "resolved_at",
    "resolution_seq",
    "kind",
    "source",
    "notice_doi",
    "notice_date",
    "checked_at",
    "check_seq",
    "learned_at",
    "learned_seq",
    "evidence",
)


def item_row(page: Page, item: Item) -> list[str]:
    """One line as CSV cells, in CSV_COLUMNS order."""
    j = item_json(page, item)
    who, w, r, n = (json_part(j[k]) for k in ("citing", "work", "resolution", "notice"))
    cells: list[Json] = [
        item.change,
        who["arxiv_id"],
        who["title"],
        j["reference_index"],
        j["observation_id"],
        w["work_id"],
        w["doi"],
        w["arxiv_id"],
        w["title"],
        r["status"],
        r["resolver_source"],
        r["observed_at"],
        r["seq"],
        n["kind"],
        n["source"],
        n["notice_doi"],
        n["notice_date"],
        n["observed_at"],
        n["check_seq"],
        n["learned_at"],
        n["learned_seq"],
        r["evidence"],
    ]
    return ["" if c is None else str(c) for c in cells]


def _sorted(names: frozenset[str]) -> list[Json]:
    """Names in code-point order, as a JSON list."""
    return [*sorted(names)]


def json_part(value: Json) -> JsonObject:
    """A part of an item's JSON that item_json builds as an object (citing, work, resolution, notice)."""
    if not isinstance(value, dict):
        raise TypeError(f"an object was expected, not {type(value).__name__}")
    return value

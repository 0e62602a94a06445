"""The projector: what the events imply beyond what an append needs, kept by following the log.

An append writes each event and only the keys that refuse a duplicate or a conflict. Every other derived
table is a projection: a name, the last seq it has applied (`projections`, name -> seq), and a rule that
turns the events past that seq into rows. `catch_up` applies them a batch at a time, each batch and its
new position in one transaction, so a kill at any point leaves the rows and the position agreeing and
the next run starts where the last commit left off. Any number of processes may run it at once: each
batch re-reads the position under a lock only projectors take, so a batch is never applied twice.

Who runs it: the process that appended (a CLI import projects what it wrote before it exits, and an
append that finds the projector too far behind projects the lag itself), and the server, whose
workers elect one of them by a lease row (`take_lease`) so one projector follows the log for all. The
server's projector passes its `Lease` down: each batch checks and renews it inside its own transaction,
under the lock that taking the lease also needs, and a step whose lease was taken or ran out stops
before writing (`LeaseLost`), so two holders never write at once however long a step takes.

A projection is added by one line in `PROJECTIONS`: a `Logged` one (its rows are a function of the
events past its position, written in the projector's transaction, e.g. `Logged.pure(...)` for a table
whose rows are a pure function of each event), or a `Cursor` over a table that keeps its own position.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import msgspec

from ledger.model.errors import LedgerError
from ledger.model.events import ChainLink, GlanceWork
from ledger.model.instants import Clock
from ledger.storage.derived import screen
from ledger.storage.derived.checks import stored_checks
from ledger.storage.derived.keys import CHECK_WORKS, WORK_KEYS, cited_keys
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    RESOLUTION,
    Row,
    Span,
    Step,
    bucket_deltas,
    data_steps,
    delta,
)
from ledger.storage.derived.spans import (
    NAME as SPANS_NAME,
)
from ledger.storage.interface import Store
from ledger.storage.sql import ENVELOPE_COLUMNS, Connection, Dialect, SqlParams, link_row
from ledger.storage.sql_store import SqlStore, insert_check_works, insert_keys
from ledger.storage.tables.shared import COUNT_BUCKETS, INSERT_SPANS, STEP_DATA_COLUMNS, steps_of

_CITED_WORK = msgspec.json.Decoder(GlanceWork)
BATCH = 5_000  # events a projector transaction applies: a kill loses at most one batch's work
SPANS = SPANS_NAME

_POSITION = "SELECT seq FROM projections WHERE name = ?"
_SAVE = (
    "INSERT INTO projections (name, seq) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET seq = excluded.seq"
)
_EVENTS = (
    f"SELECT {ENVELOPE_COLUMNS}, observed_us, recorded_us FROM events WHERE seq > ? AND seq <= ? ORDER BY seq"
)

# a span opened at the recorded_us that closes it was never visible to a read: it goes
# (a span is found by its key: the delta names the cited and citing papers, the reference and its start)
_SPAN_KEY = "cited = ? AND citing = ? AND reference_index = ? AND observation_id = ? AND t_from = ?"
_DROP_SPAN = f"DELETE FROM inbound_spans WHERE {_SPAN_KEY} AND k_from = ? AND k_to = {OPEN}"
_CLOSE_SPAN = f"UPDATE inbound_spans SET k_to = ? WHERE {_SPAN_KEY} AND k_to = {OPEN}"


# (store, its connection in the batch's transaction, the position before, the position after): the rule
# reads what it needs of the events in (before, after] itself
Apply = Callable[[SqlStore, Connection, int, int], None]


@dataclass(frozen=True)
class Lease:
    """What a projector writes under: `holder`'s lease in `projector_lease`, renewed by each batch to
    the clock's now + `ttl_us`."""

    holder: str
    ttl_us: int
    clock: Clock


class LeaseLost(LedgerError):
    """A projector step found its lease taken by another holder or run out: it wrote nothing more."""

    code = "lease_lost"


class Projection(Protocol):
    """A derived table kept by following the log."""

    @property
    def name(self) -> str:
        """What `projections` and the reports call it."""
        ...

    def position(self, store: Store) -> int:
        """The last seq whose events the projection holds."""
        ...

    def advance(self, store: Store, upto: int, batch: int = BATCH, lease: Lease | None = None) -> int:
        """Apply the events up to seq `upto` (a committed head); the seq reached (less on a ledger that
        cannot be written). Under a `lease`, raises LeaseLost before any write once it is not held."""
        ...


def _sql(store: Store) -> SqlStore:
    """Both backends are SqlStores: the projector speaks SQL to them."""
    return cast(SqlStore, store)


def _begin(store: SqlStore) -> tuple[str, ...]:
    """A transaction one projector at a time runs in: SQLite's write lock; on PostgreSQL a lock only
    projectors take, so readers and appends are not held up."""
    if store.dialect.name == "sqlite":
        return ("BEGIN IMMEDIATE",)
    return ("BEGIN", "LOCK TABLE projections IN EXCLUSIVE MODE")


def position_of(store: SqlStore, name: str, conn: Connection | None = None) -> int:
    """The position of the projection `name` (0 before its first batch), read on `conn` (else the
    thread's connection)."""
    row = store.query(conn or store.connection(), _POSITION, (name,)).fetchone()
    return 0 if row is None else int(row[0])


@dataclass(frozen=True)
class Logged:
    """A projection whose position is a row of `projections`, applied by `apply` a batch at a time."""

    name: str
    apply: Apply
    # a test's fault: called between the batch's rows and its new position (a kill mid-batch)
    fault: Callable[[int], None] | None = None

    @staticmethod
    def pure(name: str, insert: str, rows_of: Callable[[ChainLink], Iterable[SqlParams]]) -> Logged:
        """A projection whose rows are a pure function of each event, inserted by `insert`."""

        def apply(store: SqlStore, conn: Connection, after: int, upto: int) -> None:
            links = map(link_row, store.query(conn, _EVENTS, (after, upto)).fetchall())
            rows = [r for link in links for r in rows_of(link)]
            if rows:
                store.query_many(conn, insert, rows)

        return Logged(name, apply)

    def position(self, store: Store) -> int:
        """The last seq applied."""
        return position_of(_sql(store), self.name)

    def advance(self, store: Store, upto: int, batch: int = BATCH, lease: Lease | None = None) -> int:
        """Apply the events after the position up to `upto`, `batch` per transaction (each one first
        checking and renewing `lease`, if given)."""
        sql = _sql(store)
        done = self.position(store)
        while done < upto:
            try:
                with sql.transaction(_begin(sql)) as conn:
                    if lease is not None:
                        hold(sql, conn, lease, self.name)
                    start = position_of(sql, self.name, conn)  # another projector may have gone on
                    end = min(upto, start + batch)
                    if start < end:
                        self.apply(sql, conn, start, end)
                        if self.fault is not None:
                            self.fault(end)
                        sql.query(conn, _SAVE, (self.name, end))
            except sql.readonly_errors:
                return done
            done = max(start, end)
        return done


@dataclass(frozen=True)
class Cursor:
    """A projection over a table that keeps its own cursor and extender (the title search, the
    catalogue): the projector only drives it."""

    name: str
    indexed: Callable[[Store], int]
    extend: Callable[[Store, int], int]

    def position(self, store: Store) -> int:
        """The table's own cursor."""
        return self.indexed(store)

    def advance(self, store: Store, upto: int, batch: int = BATCH, lease: Lease | None = None) -> int:
        """Extend the table to `upto` (its own chunks and transactions), once `lease` (if given) is
        checked and renewed: any reader extends these tables too, so their chunks do not check it."""
        if lease is not None:
            sql = _sql(store)
            with sql.transaction(_begin(sql)) as conn:
                hold(sql, conn, lease, self.name)
        return self.extend(store, upto)


def apply_spans(store: SqlStore, conn: Connection, after: int, upto: int) -> None:
    """Close and open the inbound spans (and their per-day counts) of the observations the events in
    (after, upto] change, from each one's events up to `after` (what the stored rows hold) and the new
    ones. The new steps are read by seq range (each event's data decoded for its few fields), the earlier
    ones only of the observations that have any (found by their keys); each event's data decoded here."""
    new: dict[str, list[Step]] = {}
    for step in data_steps(store.query(conn, _STEP_EVENTS, (after, upto)).fetchall()):
        new.setdefault(step.observation_id, []).append(step)
    if not new:
        return
    prior = steps_of(store, conn, list(new), after)
    # each closed span's key (cited .. t_from) and the recorded_us that closed it
    closed: list[tuple[str, str, int, str, int, int]] = []
    gone: list[Span] = []
    opened: list[Row] = []
    for oid in sorted(new):
        change = delta(prior.get(oid, []), sorted(new[oid], key=_seq))
        closed += [(*s[:5], k) for s, k in change.closed]
        gone += [s for s, _ in change.closed]
        opened += change.opened
    if closed:
        store.query_many(conn, _DROP_SPAN, closed)
        store.query_many(conn, _CLOSE_SPAN, [(c[-1], *c[:-1]) for c in closed])
    if opened:
        store.query_many(conn, INSERT_SPANS, opened)
    counts = bucket_deltas(opened, gone)
    if counts:
        store.query_many(conn, COUNT_BUCKETS, counts)


_seq = operator.attrgetter("seq")
_STEP_EVENTS = (
    f"SELECT {STEP_DATA_COLUMNS} FROM events WHERE seq > ? AND seq <= ? "
    f"AND type IN ('{CITATION}', '{RESOLUTION}')"
)


def apply_work_keys(store: SqlStore, conn: Connection, after: int, upto: int) -> None:
    """Write the works-index keys of the citations and resolutions in (after, upto] that cite a work
    with a work_id: the database picks those events and their cited work (no envelope is decoded
    here); the DOI rules (ledger/model/doi.py) that make the keys are Python's."""
    d = store.dialect
    rows = store.query(
        conn,
        f"SELECT seq, {d.json_value('cited_work')} FROM events WHERE seq > ? AND seq <= ? "
        f"AND type IN ('{CITATION}', '{RESOLUTION}') AND {_holds(d, _WORK_ID)} "
        f"AND {d.json_text('cited_work.work_id')} IS NOT NULL",
        (after, upto),
    ).fetchall()
    decode = _CITED_WORK.decode
    keys = sorted(
        (k, seq)
        for seq, work in rows
        for w in (decode(work),)
        for k in cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)
    )
    if keys:
        store.query_many(conn, insert_keys(_level(store)), keys)


# what the stored (canonical: no space after a colon) data of an event whose cited work has a work_id
# holds: most citations have none, and a search of the text is cheaper than parsing it
_WORK_ID = '"work_id":"'


def _holds(d: Dialect, text: str) -> str:
    """A condition: the event's stored data holds `text` (no quote or percent sign in it)."""
    return f"instr(data, '{text}') > 0" if d.name == "sqlite" else f"strpos(data, '{text}') > 0"


def _level(store: SqlStore) -> str:
    """The level a projection's keyed rows are written to. SQLite: the recent one, which appends move
    down (its write lock keeps a projector's batch and an append's move apart), so a batch rewrites a
    few small pages rather than a leaf of the big level per row. PostgreSQL: the merged one, which no
    move deletes from (an append's move of a smaller level may run beside a projector there)."""
    return "recent" if store.dialect.name == "sqlite" else "merged"


def apply_check_works(store: SqlStore, conn: Connection, after: int, upto: int) -> None:
    """Write the per-work rows of the standing checks in (after, upto] (few events, each decoded: its
    notices are split per work into canonical JSON, byte for byte what a reader derives)."""
    rows = store.query(
        conn,
        "SELECT seq, observed_at, observed_us, recorded_us, data FROM events WHERE seq > ? AND seq <= ? "
        "AND type = 'standing.checked'",
        (after, upto),
    ).fetchall()
    checks = sorted((*c[:5], c.notices.decode()) for r in rows for c in stored_checks(*r))
    if checks:
        store.query_many(conn, insert_check_works(_level(store)), checks)


SPAN_PROJECTION = Logged(SPANS, apply_spans)
WORK_KEYS_PROJECTION = Logged(WORK_KEYS, apply_work_keys)
CHECK_WORKS_PROJECTION = Logged(CHECK_WORKS, apply_check_works)
TITLES = Cursor(
    "search_titles", lambda s: s.search.titles_indexed(), lambda s, upto: s.search.index_titles(upto)
)
CATALOGUE = Cursor(
    "catalogue", lambda s: s.catalogue.catalogue_indexed(), lambda s, upto: s.catalogue.index_catalogue(upto)
)

SCREEN = Logged(screen.NAME, screen.apply)

# every projection, in the order the projector advances them; one line adds one
PROJECTIONS: tuple[Projection, ...] = (
    SPAN_PROJECTION,
    WORK_KEYS_PROJECTION,
    CHECK_WORKS_PROJECTION,
    TITLES,
    CATALOGUE,
    SCREEN,
)
# the ones a record, a walk or a screen reads and no reader extends itself (the others are extended on
# first read): an appender keeps them within the allowed lag, which bounds what a reader folds
READ_BY_RECORDS: tuple[Logged, ...] = (SPAN_PROJECTION, WORK_KEYS_PROJECTION, CHECK_WORKS_PROJECTION, SCREEN)


def catch_up(store: Store, projections: Sequence[Projection] = PROJECTIONS, upto: int | None = None) -> int:
    """Advance each projection to `upto` (default the committed head); the lowest seq reached."""
    head = store.head().seq if upto is None else upto
    return min((p.advance(store, head) for p in projections), default=head)


def lowest_position(store: Store, projections: Sequence[Logged]) -> int:
    """The lowest position of these projections (0 for one that has none yet), in one statement."""
    sql = _sql(store)
    names = [p.name for p in projections]
    count, lowest = sql.query(
        sql.connection(),
        f"SELECT count(*), min(seq) FROM projections WHERE {sql.dialect.any_of('name')}",
        (sql.dialect.bind_list(names),),
    ).fetchone()
    return int(lowest) if count == len(names) else 0


def lag(store: Store, projections: Sequence[Projection] = READ_BY_RECORDS) -> int:
    """How many events the furthest-behind of these projections is behind the head."""
    head = store.head().seq
    return max((head - p.position(store) for p in projections), default=0)


# -- the lease: one projector across a server's workers ------------------------------------------------

_TAKE = (
    "INSERT INTO projector_lease (id, holder, expires_us) VALUES (1, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_us = excluded.expires_us "
    "WHERE projector_lease.holder = excluded.holder OR projector_lease.expires_us < ?"
)


_RENEW = "UPDATE projector_lease SET expires_us = ? WHERE id = 1 AND holder = ? AND expires_us >= ?"


def hold(store: SqlStore, conn: Connection, lease: Lease, name: str) -> None:
    """In a transaction begun by `_begin` (the lock `take_lease` also takes, so no other holder can take
    the lease until it ends): renew `lease` if its holder still holds it unexpired, else raise LeaseLost
    before anything of `name`'s batch is written."""
    now = lease.clock.now_us()
    if store.query(conn, _RENEW, (now + lease.ttl_us, lease.holder, now)).rowcount == 1:
        return
    row = store.query(conn, "SELECT holder, expires_us FROM projector_lease WHERE id = 1").fetchone()
    if row is None:
        why = "released"
    elif row[0] != lease.holder:
        why = f"taken by {row[0]}"
    else:
        why = f"expired {now - int(row[1]):,} us ago"
    raise LeaseLost(
        f"projector {lease.holder}: lease {why}; the step stopped before writing {name}'s next batch",
        details={"holder": lease.holder, "why": why, "projection": name},
    )


def take_lease(store: Store, holder: str, now_us: int, ttl_us: int) -> bool:
    """Take (or renew) the projector's lease for `holder` until now + ttl, if it is free, expired or
    already `holder`'s: one compare-and-set, so two holders never both succeed."""
    sql = _sql(store)
    with sql.transaction(_begin(sql)) as conn:
        taken = sql.query(conn, _TAKE, (holder, now_us + ttl_us, now_us)).rowcount == 1
    return taken


def release_lease(store: Store, holder: str) -> None:
    """Give the lease up (if `holder` has it), so another worker takes it without waiting for expiry."""
    sql = _sql(store)
    with sql.transaction(_begin(sql)) as conn:
        sql.query(conn, "DELETE FROM projector_lease WHERE id = 1 AND holder = ?", (holder,))


_LAPSE = "UPDATE projector_lease SET expires_us = ? WHERE id = 1 AND holder = ?"


def lapse_lease(store: Store, holder: str, now_us: int) -> None:
    """Let `holder`'s lease run out now (if it has it): anyone may take it at once, and the row still
    names who held it last."""
    sql = _sql(store)
    with sql.transaction(_begin(sql)) as conn:
        sql.query(conn, _LAPSE, (now_us - 1, holder))


def lease_holder(store: Store, now_us: int) -> str | None:
    """Who holds an unexpired lease now."""
    sql = _sql(store)
    row = sql.query(
        sql.connection(), "SELECT holder FROM projector_lease WHERE id = 1 AND expires_us >= ?", (now_us,)
    ).fetchone()
    return None if row is None else str(row[0])

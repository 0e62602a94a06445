"""The tables of standing alerts (watches, the works each covers, alerts, the webhook outbox and its
deliveries), written once over a store's dialect: what service/alerts/alerts.py and the doors keep and read.

They are the ledger's own state, not events: nothing here is hashed, and rows change in place (a
watch removed, an outbox entry delivered). Everything that raises alerts runs inside `raising`, a
transaction holding the append lock, so alerts are numbered in the order they commit and a stream of
them resumed from a number misses none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple, TypeVar

from ledger.storage.sql import Cursor, DialectStore, SqlParams, SqlRow, first, integer

WATCH_COLUMNS = (
    "id, kind, target, callback_url, secret, created_at, created_seq, removed_at, owner, old_secret, "
    "old_secret_until_us"
)
ALERT_COLUMNS = "n, id, watch_id, work_id, notice_key, seq, held, body, raised_at, raised_us"
DELIVERY_COLUMNS = "id, alert_n, watch_id, attempt, at, address, status, error, next_at"
PENDING, DELIVERED, GAVE_UP = "pending", "delivered", "gave_up"


class Watch(NamedTuple):
    """One watch: a paper's outbound references, a collection's papers', or a list of works."""

    id: str
    kind: str  # "paper" | "works" | "collection"
    target: str  # the arXiv id, the works as given (canonical JSON list), or the collection's name
    callback_url: str | None
    secret: str | None
    created_at: str
    created_seq: int  # the head when it was made: notices held by then are marked `held`
    removed_at: str | None
    owner: str | None = None  # the sha256 of the token that made it; None: the operator's (the CLI's)
    old_secret: str | None = None  # the secret the last rotation replaced
    old_secret_until_us: int | None = None  # until when it signs beside `secret` (then it is dropped)


class Alert(NamedTuple):
    """One (watch, work, notice), the first time the ledger held it."""

    n: int  # the order it was raised in
    id: str
    watch_id: str
    work_id: str
    notice_key: str
    seq: int  # the standing check that brought the notice
    held: bool
    body: str  # the alert JSON, exactly as delivered
    raised_at: str
    raised_us: int


class Delivery(NamedTuple):
    """One attempt at delivering an alert to a watch's callback."""

    id: int
    alert_n: int
    watch_id: str
    attempt: int
    at: str
    address: str | None  # the address connected to (or refused)
    status: int | None  # the HTTP status answered, None when none came
    error: str | None
    next_at: str | None  # when the next attempt is due, None when none will be made


class Due(NamedTuple):
    """An outbox entry a deliverer took: the alert, its watch's callback and secret, the attempt."""

    alert_n: int
    watch_id: str
    attempts: int
    first_us: int
    body: str
    alert_id: str
    callback_url: str
    secret: str | None
    old_secret: str | None = None  # the one a rotation replaced, signing too before `old_until_us`
    old_until_us: int | None = None


R = TypeVar("R")


class _Watcher(NamedTuple):
    key: str
    watch_id: str


class _WorkWatch(NamedTuple):
    work_id: str
    watch_id: str
    observation_id: str


class _Covered(NamedTuple):
    work_id: str
    observation_id: str


class _Raised(NamedTuple):
    watch_id: str
    work_id: str
    notice_key: str


class AlertTables:
    """The alert tables over one store's per-thread connection."""

    def __init__(self, store: DialectStore) -> None:
        self.store = store

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.store.connection(), sql, params)

    @contextmanager
    def raising(self) -> Iterator[None]:
        """One transaction holding the append lock: alerts are raised (and numbered) one writer at a time."""
        with self.store.transaction(self.store.write_begin()):
            yield

    @contextmanager
    def updating(self) -> Iterator[None]:
        """One short write transaction (an outbox entry taken or settled)."""
        with self.store.transaction(self.store.write_begin()):
            yield

    # -- watches -----------------------------------------------------------------------

    def add_watch(self, w: Watch, keys: Sequence[str]) -> None:
        """Store a watch and the keys it is found by (inside `raising`)."""
        self._q(f"INSERT INTO watches ({WATCH_COLUMNS}) VALUES ({', '.join('?' * len(w))})", tuple(w))
        if keys:
            self.store.query_many(
                self.store.connection(),
                "INSERT INTO watch_keys (key, watch_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(k, w.id) for k in sorted(set(keys))],
            )

    def add_keys(self, watch_id: str, keys: Sequence[str]) -> None:
        """Find a watch by these keys too (inside `raising`): a collection's paper joining it."""
        if keys:
            self.store.query_many(
                self.store.connection(),
                "INSERT INTO watch_keys (key, watch_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(k, watch_id) for k in sorted(set(keys))],
            )

    def drop_keys(self, watch_id: str, keys: Sequence[str]) -> None:
        """Stop finding a watch by these keys (inside `raising`): a collection's paper leaving it."""
        if keys:
            d = self.store.dialect
            self._q(
                f"DELETE FROM watch_keys WHERE watch_id = ? AND {d.any_of('key')}",
                (watch_id, d.bind_list(sorted(set(keys)))),
            )

    def uncover(self, watch_id: str, observation_ids: Sequence[str]) -> None:
        """The watch no longer covers works through these observations (inside `raising`)."""
        if observation_ids:
            d = self.store.dialect
            self._q(
                f"DELETE FROM watch_works WHERE watch_id = ? AND {d.any_of('observation_id')}",
                (watch_id, d.bind_list(sorted(set(observation_ids)))),
            )

    def watch(self, watch_id: str) -> Watch | None:
        """One watch (removed ones too), or None."""
        row = self._q(f"SELECT {WATCH_COLUMNS} FROM watches WHERE id = ?", (watch_id,)).fetchone()
        return None if row is None else Watch._make(row)

    def watches(self, after: str = "", limit: int = 100, owner: str | None = None) -> list[Watch]:
        """The watches not removed, by id, after `after`: only `owner`'s, or every one for None."""
        mine, args = ("owner = ? AND ", (owner,)) if owner is not None else ("", ())
        rows = self._q(
            f"SELECT {WATCH_COLUMNS} FROM watches WHERE {mine}removed_at IS NULL AND id > ? "
            "ORDER BY id LIMIT ?",
            (*args, after, limit),
        )
        return [Watch._make(r) for r in rows]

    def owned(self, owner: str) -> int:
        """How many watches in force `owner` made."""
        sql = "SELECT count(*) FROM watches WHERE owner = ? AND removed_at IS NULL"
        return integer(first(self._q(sql, (owner,)))[0])

    def any_watch(self) -> bool:
        """Whether any watch is in force (the raiser has nothing to do otherwise)."""
        return self._q("SELECT 1 FROM watches WHERE removed_at IS NULL LIMIT 1").fetchone() is not None

    def remove_watch(self, watch_id: str, at: str) -> bool:
        """Mark a watch removed and drop its pending deliveries; False when there was none in force."""
        cur = self._q("UPDATE watches SET removed_at = ? WHERE id = ? AND removed_at IS NULL", (at, watch_id))
        if cur.rowcount == 0:
            return False
        self._q("DELETE FROM watch_keys WHERE watch_id = ?", (watch_id,))
        self._q(
            f"UPDATE outbox SET state = '{GAVE_UP}' WHERE watch_id = ? AND state = '{PENDING}'", (watch_id,)
        )
        return True

    def rotate_secret(self, watch_id: str, secret: str, until_us: int) -> bool:
        """Give a watch in force a new secret, the one it replaces signing beside it until `until_us`;
        False when there was none in force. One statement, so of two rotations at once the later
        keeps the earlier's secret as its old one (a secret handed out always signs for the grace)."""
        cur = self._q(
            "UPDATE watches SET old_secret = secret, old_secret_until_us = ?, secret = ? "
            "WHERE id = ? AND removed_at IS NULL",
            (until_us, secret, watch_id),
        )
        return bool(cur.rowcount)

    def _in_force(
        self, make: Callable[[SqlRow], R], columns: str, table: str, key: str, keys: Sequence[str]
    ) -> list[R]:
        """`columns` of the `table` rows (as t) whose `key` is one of `keys`, of watches in force."""
        if not keys:
            return []
        d = self.store.dialect
        rows = self._q(
            f"SELECT {columns} FROM {table} AS t JOIN watches AS w ON w.id = t.watch_id "
            f"WHERE {d.any_of(key)} AND w.removed_at IS NULL",
            (d.bind_list(sorted(set(keys))),),
        )
        return [make(r) for r in rows]

    def watchers(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        """(key, watch id) of the watches in force found by any of these keys."""
        return self._in_force(_Watcher._make, "t.key, t.watch_id", "watch_keys", "t.key", keys)

    def cover(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """(work_id, watch_id, observation_id): the watch covers the work, through that observation."""
        if rows:
            self.store.query_many(
                self.store.connection(),
                "INSERT INTO watch_works (work_id, watch_id, observation_id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                rows,
            )

    def covering(self, work_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(work_id, watch_id, observation_id) of the watches in force covering any of these works."""
        columns = "t.work_id, t.watch_id, t.observation_id"
        return self._in_force(_WorkWatch._make, columns, "watch_works", "t.work_id", work_ids)

    def covered(self, watch_id: str) -> list[tuple[str, str]]:
        """(work_id, observation_id) a watch covers, by work."""
        rows = self._q(
            "SELECT work_id, observation_id FROM watch_works WHERE watch_id = ? "
            "ORDER BY work_id, observation_id",
            (watch_id,),
        )
        return [_Covered._make(r) for r in rows]

    # -- the raiser's place in the log ---------------------------------------------------

    def cursor(self) -> int:
        """The last seq whose events have raised their alerts."""
        row = self._q("SELECT seq FROM alert_cursor WHERE id = 1").fetchone()
        return 0 if row is None else integer(row[0])

    def advance(self, seq: int) -> None:
        """Move the cursor (inside `raising`)."""
        self._q("UPDATE alert_cursor SET seq = ? WHERE id = 1", (seq,))

    # -- alerts --------------------------------------------------------------------------

    def known(self, triples: Sequence[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """Which (watch_id, work_id, notice_key) were already raised."""
        if not triples:
            return set()
        d = self.store.dialect
        ids = sorted({t[0] for t in triples})
        rows = self._q(
            f"SELECT watch_id, work_id, notice_key FROM alerts WHERE {d.any_of('watch_id')}",
            (d.bind_list(ids),),
        )
        found: set[tuple[str, str, str]] = {_Raised._make(r) for r in rows}
        return found & set(triples)

    def add_alerts(self, alerts: Sequence[Alert], outbox: Sequence[tuple[int, str, int]]) -> None:
        """Store new alerts, numbered already, and the outbox entries (n, watch_id, due) of those to
        deliver (inside `raising`)."""
        conn = self.store.connection()
        if alerts:
            self.store.query_many(
                conn,
                f"INSERT INTO alerts ({ALERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*a[:6], int(a.held), *a[7:]) for a in alerts],
            )
        if outbox:
            self.store.query_many(
                conn,
                "INSERT INTO outbox (alert_n, watch_id, state, attempts, next_us, first_us, lease_us) "
                f"VALUES (?, ?, '{PENDING}', 0, ?, ?, 0)",
                [(n, w, due, due) for n, w, due in outbox],
            )

    def last_n(self) -> int:
        """The number of the last alert raised (0 when none)."""
        return integer(first(self._q("SELECT max(n) FROM alerts"))[0] or 0)

    def alerts(
        self, watch_id: str | None, after: int = 0, limit: int = 100, since_us: int | None = None
    ) -> list[Alert]:
        """A watch's alerts (every watch's, for None) after number `after` (raised at or after
        `since_us`), in order."""
        which, args = ("watch_id = ? AND ", (watch_id,)) if watch_id is not None else ("", ())
        rows = self._q(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE {which}n > ? AND raised_us >= ? ORDER BY n LIMIT ?",
            (*args, after, since_us or 0, limit),
        )
        return [_alert(r) for r in rows]

    def alerts_of(self, work_ids: Sequence[str]) -> list[Alert]:
        """Every alert about any of these works (a paper's feed), in order."""
        if not work_ids:
            return []
        d = self.store.dialect
        rows = self._q(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE {d.any_of('work_id')} ORDER BY n",
            (d.bind_list(sorted(set(work_ids))),),
        )
        return [_alert(r) for r in rows]

    # -- the outbox ----------------------------------------------------------------------

    def take_due(self, now_us: int, lease_us: int, limit: int = 16, busy: Sequence[str] = ()) -> list[Due]:
        """Outbox entries due now and not held by another deliverer, the first of each watch not in
        `busy` (so one watch's backlog never fills a batch), leased to this one until
        `now_us + lease_us` (inside `updating`)."""
        # a secret replaced whose grace is over signs nothing more: it is not kept either
        self._q(
            "UPDATE watches SET old_secret = NULL, old_secret_until_us = NULL WHERE old_secret_until_us <= ?",
            (now_us,),
        )
        d = self.store.dialect
        rows = self._q(
            "SELECT o.alert_n, o.watch_id, o.attempts, o.first_us, a.body, a.id, w.callback_url, w.secret, "
            "w.old_secret, w.old_secret_until_us "
            "FROM (SELECT alert_n, watch_id, attempts, first_us, next_us, "
            "row_number() OVER (PARTITION BY watch_id ORDER BY next_us, alert_n) AS k FROM outbox "
            f"WHERE state = '{PENDING}' AND next_us <= ? AND lease_us <= ? AND NOT ({d.any_of('watch_id')})"
            ") AS o JOIN alerts AS a ON a.n = o.alert_n JOIN watches AS w ON w.id = o.watch_id "
            "WHERE o.k = 1 ORDER BY o.next_us, o.alert_n LIMIT ?",
            (now_us, now_us, d.bind_list(sorted(set(busy))), limit),
        ).fetchall()
        if rows:
            self.store.query_many(
                self.store.connection(),
                "UPDATE outbox SET lease_us = ? WHERE alert_n = ?",
                [(now_us + lease_us, r[0]) for r in rows],
            )
        return [Due._make(r) for r in rows]

    def settle(self, due: Due, state: str, next_us: int, d: Delivery) -> None:
        """Record an attempt and what follows it: delivered, given up, or due again at `next_us`."""
        self._q(
            "UPDATE outbox SET state = ?, attempts = ?, next_us = ?, lease_us = 0 WHERE alert_n = ?",
            (state, due.attempts + 1, next_us, due.alert_n),
        )
        self._q(
            f"INSERT INTO deliveries ({DELIVERY_COLUMNS.removeprefix('id, ')}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            tuple(d)[1:],
        )

    def deliveries(self, watch_id: str, after: int = 0, limit: int = 100) -> list[Delivery]:
        """A watch's delivery attempts after id `after`, in order."""
        rows = self._q(
            f"SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE watch_id = ? AND id > ? ORDER BY id LIMIT ?",
            (watch_id, after, limit),
        )
        return [Delivery._make(r) for r in rows]

    def outbox_depth(self) -> int:
        """Entries still to deliver."""
        return integer(first(self._q(f"SELECT count(*) FROM outbox WHERE state = '{PENDING}'"))[0])

    def next_due_us(self) -> int | None:
        """When the earliest pending entry is due (None when none is pending)."""
        row = self._q(f"SELECT min(next_us) FROM outbox WHERE state = '{PENDING}'").fetchone()
        return None if row is None or row[0] is None else integer(row[0])


def _alert(row: SqlRow) -> Alert:
    a = Alert._make(row)
    return a._replace(held=bool(a.held))  # SQLite keeps a boolean as 0 or 1

"""Recompute the whole chain from the stored rows and name the first seq that breaks it.

Besides the chain, the walk recomputes the Merkle tree over the same body bytes: every stored
complete-subtree node must match the events, and a checkpoint this ledger signed must match the tree
(or name the truncation when the ledger now holds fewer events). `resume=True` picks up where the last
remembered full walk ended, after checking that seq still has the hash it had then: the prefix before
it is trusted, not re-hashed (run without resume to recheck everything), and the report says so.
`walk_paced` is the scrubber's walk: from seq 1, a batch at a time, each batch in its own short read.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from time import perf_counter
from typing import TYPE_CHECKING, NamedTuple

from blake3 import blake3

from ledger.model.events import ChainLink, StoredEvent
from ledger.model.facts import Head, VerifiedPoint
from ledger.model.instants import Clock, parse_instants
from ledger.model.jsonvalue import JsonObject
from ledger.storage.derived.checks import link_checks
from ledger.storage.derived.keys import (
    CHECK_WORKS,
    EVENT,
    OBSERVATION,
    WORK_KEYS,
    stored_both,
)
from ledger.storage.derived.screen import NAME as SCREEN
from ledger.storage.derived.screen import event_rows as screen_event_rows
from ledger.storage.derived.spans import NAME as SPANS
from ledger.storage.derived.spans import Row, Step, history
from ledger.storage.derived.sums import Derived, Page, Positions, Sums, page_sums
from ledger.storage.sql import ChainRow
from ledger.storage.tables.keys import IndexRow
from ledger.storage.tables.screen import ScreenEvent, ScreenRow
from ledger.tlog import merkle_store as ms
from ledger.tlog.chain import GENESIS, Follower, envelope_body
from ledger.tlog.checkpoint_notes import Checkpoint, NoteError, unsigned_checkpoint
from ledger.tlog.merkle import CompactRange, leaf_hash

if TYPE_CHECKING:
    from ledger.storage.interface import Store


class VerifyStep(NamedTuple):
    """One step of a walk: what it checks, whether it passed, and how long it took."""

    name: str  # "chain" or "derived"
    ok: bool
    seconds: float
    checks: str

    def to_dict(self) -> JsonObject:
        """JSON shape of a step in the report."""
        return {"name": self.name, "ok": self.ok, "seconds": round(self.seconds, 3), "checks": self.checks}


# what each step checks, as the report says it
CHAIN_CHECKS = (
    "sequence, stream versions, instants and their index columns, each stored hash recomputed from the "
    "stored bytes, the Merkle tree's stored nodes and the last signed checkpoint"
)
DERIVED_CHECKS = (
    "the rows the events imply, recomputed from them: lookup keys, no event id stored twice, and each "
    "projection against the events up to its position (works-index keys, standing checks' works, "
    "inbound spans and counts), and (a whole walk) the resolver's catalogue"
)
CHAIN, DERIVED = "chain", "derived"


class VerifyReport(NamedTuple):
    """What verify checked and the first break, if any."""

    ok: bool
    events_checked: int
    head: Head
    first_bad_seq: int | None
    reason: str | None
    resumed_from: int | None = None
    merkle_nodes_checked: int = 0
    # the remembered point a resumed walk started after: seqs 1..point.seq were not re-hashed
    point: VerifiedPoint | None = None
    # the walk's steps, each timed: the chain, then the derived rows (a break names the step it is in)
    steps: tuple[VerifyStep, ...] = ()

    @property
    def walked(self) -> tuple[int, int] | None:
        """(first, last) seq this walk re-hashed and found good, None when it found none."""
        first = (self.resumed_from or 0) + 1
        return (first, first + self.events_checked - 1) if self.events_checked else None

    def to_dict(self) -> JsonObject:
        """JSON shape for the API and `ledger verify --json`."""
        walked = self.walked
        point = self.point if self.resumed_from else None
        return {
            "ok": self.ok,
            "events_checked": self.events_checked,
            "walked": None if walked is None else {"from": walked[0], "to": walked[1]},
            # not re-hashed by this walk: only the last seq's stored hash was compared with the one
            # remembered when a walk got there
            "trusted": None
            if point is None
            else {
                "from": 1,
                "to": point.seq,
                "hash_checked_seq": point.seq,
                "point_saved_at": point.verified_at,
            },
            "head": {"seq": self.head.seq, "hash": self.head.hash},
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "resumed_from": self.resumed_from,
            "merkle_nodes_checked": self.merkle_nodes_checked,
            "steps": [step.to_dict() for step in self.steps],
            "note": TRUNCATION_NOTE,
        }


TRUNCATION_NOTE = (
    "A chain cut off at the end, or rewritten and re-chained, still verifies by itself: hold it to a "
    "checkpoint you kept (ledger verify --checkpoint NOTE) to detect a truncation or a rewrite."
)
_NODE_BATCH = 2048
# keys a resumed walk remembers to check the ids and spans of what it passed (a few MB)
_TOUCHED_MAX = 100_000
_INDEX_MISMATCH = "the derived index rows (check_works, event_keys) do not match the event's data"


class _Start(NamedTuple):
    seq: int
    hash: str
    recorded_us: int
    peaks: list[bytes]


def verify_store(
    store: Store,
    progress: Callable[[int], None] | None = None,
    *,
    resume: bool = False,
    remember: Clock | None = None,
    every: int = 10000,
) -> VerifyReport:
    """Walk the events in seq order: sequence, stream versions, derived columns, hashes, Merkle nodes;
    a whole walk also checks the resolver's catalogue against its events."""
    start = _Start(0, GENESIS, -1, [])
    point: VerifiedPoint | None = None
    if resume:
        point = store.verifying.verified_point()
        if point is not None and store.tree.event_hash(point.seq) == point.hash:
            start = _Start(point.seq, point.hash, store.verifying.recorded_us_at(point.seq), point.peaks)
        elif point is not None:
            # The remembered point moved: walk everything to name the first break, if there is one.
            full = verify_store(store, progress, every=every)
            if not full.ok:
                return full
            return full._replace(
                ok=False,
                first_bad_seq=point.seq,
                reason=f"seq {point.seq} no longer has the hash it had when verified at "
                f"{point.verified_at}: the chain was rewritten or cut off up to there",
            )
    walked = _walk(store, start, progress, every)
    assert walked is not None  # only a paced walk stops early
    resumed = start.seq if resume and start.seq else None
    return _report(store, *walked, resumed, point if resumed else None, remember)


def walk_paced(
    store: Store,
    *,
    batch: int,
    between: Callable[[], bool],
    remember: Clock | None = None,
    progress: Callable[[int], None] | None = None,
    every: int = 10000,
) -> VerifyReport | None:
    """A full walk from seq 1, `batch` events per short read (no read held for the whole walk);
    `between()` runs after each batch (to pause) and stops the walk, answering None, if it is False."""
    walked = _walk(store, _Start(0, GENESIS, -1, []), progress, every, batch, between)
    return None if walked is None else _report(store, *walked, None, None, remember)


def _walk(
    store: Store,
    start: _Start,
    progress: Callable[[int], None] | None,
    every: int,
    batch: int | None = None,
    between: Callable[[], bool] | None = None,
    exact: bool = False,
) -> tuple[_Walk, tuple[int, str] | None, Head] | None:
    """Walk after `start` to the head or the first break; the end checks (index rows past the last
    event, Merkle fill, signed checkpoint) in the same read as the last rows, so an append landing
    meanwhile is never taken for a cut-off.

    A walk in one read (whole or resumed) holds the derived rows (keys, standing checks' works) of the
    events it walks to those events as two multisets, the stored ones read in any order; a paced walk,
    or one whose multisets differ (walked again to name the seq), compares each event's rows as it
    passes it."""
    exact = exact or batch is not None
    walk = _Walk(store, start, progress, every, exact)
    held: Checkpoint | str | None = None
    first = True
    while True:
        # one consistent read per batch (one for everything when unpaced): events appended meanwhile
        # are neither walked nor half-seen in the index
        with store.verifying.consistent_read():
            if first:
                first = False
                held = _held_checkpoint(store)
                if held is not None and not isinstance(held, str):
                    walk.root_sizes.add(held.size)
            rows: Iterable[ChainLink]
            if not exact:
                walk.begin(iter(()))
                same = walk.run_pages(store.iter_pages(after=start.seq, batch=_PAGE))
                if same:
                    with walk.timed(DERIVED):
                        same = walk.same_index()
                if not same:
                    # a break, or rows that differ: walked again, each event's rows compared as it
                    # passes, to name whichever break comes first
                    return _walk(store, start, progress, every, exact=True)
                rows, final = (), True
            elif batch is None:
                rows, final = store.iter_chain(after=walk.last_seq), True
                walk.begin(store.keys.index_after(walk.last_seq))
            else:
                rows = list(islice(store.iter_chain(after=walk.last_seq, batch=batch), batch))
                final = len(rows) < batch
                # the last batch also reads the index rows past its events: rows for no event
                upto = None if final else rows[-1].event.seq
                walk.begin(store.keys.index_after(walk.last_seq, upto))
            bad = walk.run(rows)
            leftover = walk.index_leftover()  # also closes the index cursor before anything writes
            if bad is None and final:
                # a cut-off end is named as such first, then rows the events do not account for
                with walk.timed(CHAIN):
                    bad = _check_fill(store, walk.last_seq) or _check_checkpoint(held, walk)
                walk.broke(bad, CHAIN)
                if bad is None:
                    with walk.timed(DERIVED):
                        bad = (
                            leftover
                            or _check_event_ids(store, walk.touched)
                            or _check_spans(store, walk.touched)
                            or _check_counts(store, walk.touched, walk.last_seq)
                            or (None if walk.screen_same else _check_screen(store, walk.start.seq))
                        )
                    walk.broke(bad, DERIVED)
            head = store.head()
        if bad is None and final and batch is None and start.seq == 0:
            # the catalogue is checked whole (in a read of its own, as far as its cursor), so only by a
            # whole walk: not a paced or a resumed one
            with walk.timed(DERIVED):
                bad = store.catalogue.catalogue_check()
            walk.broke(bad, DERIVED)
        if bad is not None or final:
            return walk, bad, head
        if between is not None and not between():
            return None


def _report(
    store: Store,
    walk: _Walk,
    bad: tuple[int, str] | None,
    head: Head,
    resumed: int | None,
    point: VerifiedPoint | None,
    remember: Clock | None,
) -> VerifyReport:
    steps = walk.steps()
    if bad is not None:
        # a check after the walk (a repeated event id) can name a seq the walk passed: count up to it
        checked = min(walk.checked, bad[0] - 1 - walk.start.seq)
        return VerifyReport(False, checked, head, bad[0], bad[1], resumed, walk.nodes_checked, point, steps)
    if remember is not None and walk.last_seq:
        # best effort: a read-only ledger still verifies, it just cannot be resumed from later
        store.verifying.save_verified_point(walk.last_seq, walk.prev, walk.tree.peaks, remember.now_us())
    return VerifyReport(True, walk.checked, head, None, None, resumed, walk.nodes_checked, point, steps)


class _Walk:
    """One pass over the events after `start`, keeping the chain and the tree."""

    def __init__(
        self,
        store: Store,
        start: _Start,
        progress: Callable[[int], None] | None,
        every: int,
        exact: bool = True,
    ) -> None:
        self.store = store
        self.start = start
        self.exact = exact
        # not exact: the derived rows the walked events imply, as multisets (derived/sums.py)
        self.derived = Derived()
        # whether the screen's stored rows are what the walked events give, held as multisets (a whole
        # or resumed walk in one read; otherwise compared row by row after the walk)
        self.screen_same = False
        self.page: Page | None = None  # the columns of the page the chain step passed
        self.progress = progress
        self.every = every
        # after a resume, a stream may have events before the starting point
        before = (lambda stream: store.verifying.stream_version_at(stream, start.seq)) if start.seq else None
        self.chain = Follower(start.hash, start.seq, start.recorded_us, before)
        self.tree = CompactRange(start.seq, start.peaks)
        self.filled = 0
        self.index_rows: Iterator[IndexRow] = iter(())
        self.index_next: IndexRow | None = None
        # the positions of the works-index keys' and standing checks' projections, as the read sees
        # them: the events up to each have its rows, the events past it none
        self.work_keys_at = self.check_works_at = self.screen_at = 0
        self.checked = 0
        self.nodes_checked = 0
        self.pending: list[tuple[int, int, bytes]] = []
        self.roots: dict[int, bytes] = {}  # tree size -> root, for the sizes a checkpoint names
        self.root_sizes: set[int] = set()
        # a resumed walk checks the event ids and spans of the events it walks past (their keys; None:
        # every event id and observation)
        self.touched: set[str] | None = set() if start.seq else None
        self.seconds = {CHAIN: 0.0, DERIVED: 0.0}  # each step's time so far
        self.bad_step: str | None = None  # the step the break was found in

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Count the time of the block to `step`."""
        started = perf_counter()
        try:
            yield
        finally:
            self.seconds[step] += perf_counter() - started

    def broke(self, bad: tuple[int, str] | None, step: str) -> None:
        """Note the step a break was found in."""
        if bad is not None and self.bad_step is None:
            self.bad_step = step

    def steps(self) -> tuple[VerifyStep, ...]:
        """The walk's steps, each with its time and whether the break (if any) lies in it."""
        return (
            VerifyStep(CHAIN, self.bad_step != CHAIN, self.seconds[CHAIN], CHAIN_CHECKS),
            VerifyStep(DERIVED, self.bad_step != DERIVED, self.seconds[DERIVED], DERIVED_CHECKS),
        )

    @property
    def last_seq(self) -> int:
        """The last seq walked and found good."""
        return self.chain.last_seq

    @property
    def prev(self) -> str:
        """The chain hash at `last_seq`."""
        return self.chain.prev

    def begin(self, index_rows: Iterator[IndexRow]) -> None:
        """Start a read: the derived rows of the events it walks, and the Merkle fill as of now."""
        # derived rows are compared per event as the walk passes it, so memory stays flat
        self.index_rows = index_rows
        self.index_next = next(self.index_rows, None)
        self.filled = self.store.tree.fill_state()[0]
        self.work_keys_at = self.store.spans.projection_position(WORK_KEYS)
        self.check_works_at = self.store.spans.projection_position(CHECK_WORKS)
        self.screen_at = self.store.spans.projection_position(SCREEN)

    def run(self, links: Iterable[ChainLink]) -> tuple[int, str] | None:
        """Walk `links` to their end or the first break; the earliest of a chain break, a derived rows'
        mismatch and a node mismatch. Each event's two steps are taken together, and timed apart."""
        started = perf_counter()
        derived = 0.0
        bad: tuple[int, str] | None = None
        step = CHAIN
        for link in links:
            seq = link.event.seq
            reason, body = self.chain.check(link)
            if reason is not None:
                bad = (seq, reason)
                break
            t = perf_counter()
            e = link.event
            keys, work_keys = stored_both(e.event_id, e.type, e.data)
            if self.touched is not None:
                self.touched.update(keys)
                if len(self.touched) > _TOUCHED_MAX:
                    self.touched = None  # a long resumed walk: check everything rather than hold it
            if seq <= self.work_keys_at:
                keys += work_keys
            checks = link_checks(link) if seq <= self.check_works_at else []
            expected: list[IndexRow] = sorted(
                [(seq, "key", k) for k in keys]
                + [(c.seq, "check", c.work_id, c.source, c.observed_us, c.recorded_us, c.notices.decode())
                   for c in checks]
            )  # fmt: skip
            index_bad = self._index_upto(seq, expected)
            derived += perf_counter() - t
            if index_bad is not None:
                bad, step = index_bad, DERIVED
                break
            for node in self.tree.append(leaf_hash(body)):
                if node[0] >= ms.STORED_LEVEL and (node[1] + 1) << node[0] <= self.filled:
                    self.pending.append(node)
            if seq in self.root_sizes:
                self.roots[seq] = self.tree.root()
            self.chain.take(link)
            self.checked += 1
            if len(self.pending) >= _NODE_BATCH and (node_bad := self._flush()) is not None:
                bad, step = node_bad, CHAIN
                break
            if self.progress is not None and self.checked % self.every == 0:
                self.progress(self.checked)
        node_bad = self._flush()  # the nodes completed before the break (none left after one in the loop)
        if node_bad is not None and (bad is None or node_bad[0] < bad[0]):
            bad, step = node_bad, CHAIN
        self.seconds[DERIVED] += derived
        self.seconds[CHAIN] += perf_counter() - started - derived
        self.broke(bad, step)
        return bad

    def run_pages(self, pages: Iterable[list[ChainRow]]) -> bool:
        """A whole walk's pass over raw rows (ENVELOPE_COLUMNS, observed_us, recorded_us), a page at a
        time: the chain step over the page, then the derived step (the rows its events imply, summed
        into `derived` to be held to the stored ones after the walk). False at the first event any
        check doubts (the exact walk then names it)."""
        for rows in pages:
            with self.timed(CHAIN):
                same = self._chain_page(rows)
            if not same:
                return False
            with self.timed(DERIVED):
                try:
                    self._derived_page()
                except (ValueError, TypeError, AttributeError):  # data that does not decode: walked exactly
                    return False
            if self.progress is not None:
                done = self.checked // self.every
                if done > (self.checked - len(rows)) // self.every:
                    self.progress(done * self.every)
        with self.timed(CHAIN):
            return self._flush() is None

    def _chain_page(self, rows: list[ChainRow]) -> bool:
        """The chain step over one page of rows: each check a comparison of whole columns or a
        comprehension of compiled calls (blake3, SHA-256), rather than a loop of Python a row. The
        hashes are recomputed down the page from the hash the chain had before it and held to the
        stored ones, and each stored prev_hash to the stored hash before it: together, the chain
        recomputed from the start."""
        chain, n = self.chain, len(rows)
        try:
            seqs, ids, streams, versions, types, observed, recorded, data, prevs, hashes, obs_us, rec_us = (
                zip(*rows, strict=True)
            )
        except ValueError:
            return False
        self.page = Page(seqs, ids, streams, types, observed, data, obs_us, rec_us)
        first = chain.last_seq + 1
        if seqs != tuple(range(first, first + n)) or prevs[0] != chain.prev or prevs[1:] != hashes[:-1]:
            return False
        if not self._versions(streams, versions) or not self._instants(observed, recorded, obs_us, rec_us):
            return False
        try:
            text = "".join(ids) + "".join(observed) + "".join(recorded) + "".join(streams) + "".join(types)
            verbatim = _verbatim(text) and set(map(type, versions)) == {int}
            rows_ = zip(data, ids, observed, recorded, seqs, streams, versions, types, strict=True)
            if verbatim:  # the same bytes as chain.envelope_body's, joined from the columns as they are
                bodies = [(_BODY % r).encode() for r in rows_]
            else:  # a string the encoder escapes: envelope_body's own bytes
                bodies = [
                    envelope_body(StoredEvent(row[0], row[1], row[2], row[3], row[4], row[5], row[6],
                                              row[7].encode(), row[8], row[9]))
                    for row in rows
                ]  # fmt: skip
            if not _chained(chain.prev, bodies, hashes):
                return False
        except (TypeError, ValueError, AttributeError):  # a column of another type: the exact walk names it
            return False
        sha256 = hashlib.sha256
        leaves = [sha256(b"\x00" + b).digest() for b in bodies]
        tree, filled, pending = self.tree, self.filled, self.pending
        at = 0
        # the tree is taken a part at a time up to each size a checkpoint names, whose root is kept
        for size in sorted(x for x in self.root_sizes if first <= x < first + n) + [first + n - 1]:
            for level, index, h in tree.extend(leaves[at : size - first + 1], ms.STORED_LEVEL):
                if (index + 1) << level <= filled:
                    pending.append((level, index, h))
            at = size - first + 1
            if size in self.root_sizes:
                self.roots[size] = tree.root()
        chain.prev, chain.last_seq, chain.last_recorded = hashes[-1], seqs[-1], rec_us[-1]
        self.checked += n
        return not (len(pending) >= _NODE_BATCH and self._flush() is not None)

    def _versions(self, streams: tuple[str, ...], versions: tuple[int, ...]) -> bool:
        """Each event's stream version follows its stream's last one."""
        known = self.chain.versions
        if self.start.seq:  # a resumed walk: a stream's version before the start is read once, when first met
            version_of = self.chain.version
            for stream, version in zip(streams, versions, strict=True):
                if version != version_of(stream) + 1:
                    return False
                known[stream] = version
            return True
        get = known.get
        for stream, version in zip(streams, versions, strict=True):
            if version != get(stream, 0) + 1:
                return False
            known[stream] = version
        return True

    def _instants(
        self,
        observed: tuple[str, ...],
        recorded: tuple[str, ...],
        obs_us: tuple[int, ...],
        rec_us: tuple[int, ...],
    ) -> bool:
        """recorded_us never goes back, and both instants are their index columns (each distinct text of
        the page parsed once: a batch shares its recorded_at, a record's events their observed_at)."""
        if rec_us[0] < self.chain.last_recorded or list(rec_us) != sorted(rec_us):
            return False
        try:
            texts = list({*observed, *recorded})
            parsed = dict(zip(texts, parse_instants(texts), strict=True)).__getitem__
        except (TypeError, ValueError):
            return False
        return tuple(map(parsed, recorded)) == rec_us and tuple(map(parsed, observed)) == obs_us

    def _derived_page(self) -> None:
        """The derived step over the page the chain step just passed: the rows its events imply (keys,
        standing checks' works, the screen's rows), summed as multisets into `derived`."""
        assert self.page is not None
        at = Positions(self.work_keys_at, self.check_works_at, self.screen_at)
        written = page_sums(self.page, at, self.derived)
        if self.touched is not None:
            self.touched.update(written)
            if len(self.touched) > _TOUCHED_MAX:
                self.touched = None  # a long resumed walk: check everything
        self.page = None

    def same_index(self) -> bool:
        """Whether the stored keys and check_works rows of the events walked are the ones they imply;
        if so, note whether the screen's are too."""
        d = self.derived
        if self.store.keys.index_sums(self.start.seq) != (d.keys, d.checks):
            return False
        self.screen_same = self.store.screen.screen_sums(self.start.seq) == (d.refs, d.notices)
        return True

    def _index_upto(self, seq: int, expected: list[IndexRow]) -> tuple[int, str] | None:
        """Consume the derived rows up to `seq`; they must be exactly `expected` (the event's)."""
        found: list[IndexRow] = []
        while self.index_next is not None and self.index_next[0] <= seq:
            row, self.index_next = self.index_next, next(self.index_rows, None)
            if row[0] < seq:
                return row[0], _INDEX_MISMATCH  # a row for an event that is not a standing check
            found.append(row)
        if sorted(found) != expected:
            return seq, _INDEX_MISMATCH
        return None

    def index_leftover(self) -> tuple[int, str] | None:
        """Index rows past the last event walked: rows for events the ledger does not hold."""
        row, self.index_next = self.index_next, None
        self.index_rows = iter(())
        if row is None:
            return None
        return row[0], f"{_INDEX_MISMATCH}: rows for seq {row[0]}, past the last event (events cut off?)"

    def _flush(self) -> tuple[int, str] | None:
        """Compare the nodes the walk completed with the stored ones."""
        if not self.pending:
            return None
        stored = self.store.tree.nodes([(lv, i) for lv, i, _ in self.pending])
        self.nodes_checked += len(self.pending)
        pending, self.pending = self.pending, []
        for level, index, h in pending:
            if stored.get((level, index)) != h:
                first, last = (index << level) + 1, (index + 1) << level
                what = "is missing" if (level, index) not in stored else "does not match the events"
                return first, f"the stored Merkle node ({level}, {index}) over seqs {first}..{last} {what}"
        return None


def _check_event_ids(store: Store, touched: set[str] | None) -> tuple[int, str] | None:
    """No event id is stored twice (appends refuse it; only a write around them can do it): every id,
    or those of the events a resumed walk passed."""
    ids = None if touched is None else sorted(k[len(EVENT) :] for k in touched if k.startswith(EVENT))
    repeated = store.verifying.repeated_event_id(ids)
    if repeated is None:
        return None
    event_id, seqs = repeated
    shown = " and ".join(map(str, seqs))
    return seqs[-1], f"event_id {event_id} is stored more than once (seq {shown})"


def _check_spans(store: Store, only: set[str] | None) -> tuple[int, str] | None:
    """The inbound spans are the ones the events give (derived/spans.py), observation by observation:
    every one, or those whose keys are in `only` (a resumed walk: the walk it resumes checked the rest)."""
    if only is None:
        return _check_spans_of(store, None)
    oids = sorted(k[len(OBSERVATION) :] for k in only if k.startswith(OBSERVATION))
    # a part at a time where the store reads a part in proportion to it, in order: a part's steps are
    # read whole and sorted in memory
    part = store.verifying.list_part or len(oids) or 1
    for i in range(0, len(oids), part):
        bad = _check_spans_of(store, oids[i : i + part])
        if bad is not None:
            return bad
    return None


def _check_spans_of(store: Store, oids: list[str] | None) -> tuple[int, str] | None:
    """_check_spans of these observations (sorted; None: every one), as far as their projection holds
    the events (the projector follows the log: ledger/storage/projector.py)."""
    position = store.spans.projection_position(SPANS)

    def steps_of(oids: list[str] | None, cited_only: bool = False) -> Iterator[tuple[str, list[Step]]]:
        for oid, mine in store.spans.observation_steps(oids, cited_only=cited_only):
            held = [s for s in mine if s.seq <= position]
            if held:
                yield oid, held

    # an observation has spans only if a resolution of it names a paper
    derived, part = Sums(), list[Row]()
    for _, mine in steps_of(oids, cited_only=True):
        if any(s.cited for s in mine):
            part += history(mine)
            if len(part) >= _PAGE:
                derived.add(part)
                part = []
    derived.add(part)
    if derived == store.spans.span_sums(oids):
        return None  # every span (of these observations): held equal as two multisets, read in any order
    # a mismatch (or a few observations): observation by observation, to name the first that breaks
    stored = itertools.groupby(store.spans.span_rows(oids), key=lambda r: r.observation_id)
    have = next(stored, None)
    for oid, steps in steps_of(oids):
        rows: list[Row] = []
        while have is not None and have[0] <= oid:
            if have[0] < oid:  # rows of an observation with no event
                return _span_break(have[0], list(have[1]), [])
            rows = list(have[1])
            have = next(stored, None)
        if rows != history(steps):
            return _span_break(oid, rows, steps)
    if have is not None:
        return _span_break(have[0], list(have[1]), [])
    return None


# body(e), as chain.body_bytes encodes it when no string needs an escape: data, then the envelope's fields
_BODY = (
    '{"data":%s,"event_id":"%s","observed_at":"%s","recorded_at":"%s","seq":%d,"stream":"%s",'
    '"stream_version":%d,"type":"%s"}'
)


def _verbatim(text: str) -> bool:
    """Whether canonical JSON writes the string as it is (chain.envelope_body's test, or a stricter
    one: a printable string is also free of the control characters it escapes; a string this refuses
    takes envelope_body's own path)."""
    return text.isprintable() and '"' not in text and "\\" not in text


def _chained(prev: str, bodies: list[bytes], hashes: tuple[str, ...]) -> bool:
    """Whether the stored hashes are the chain of these bodies after `prev`: each blake3 over the digest
    before it and the body, and the digests' hex held to the stored hashes joined (each 64 long)."""
    digest = bytes.fromhex(prev)
    digests = [digest := blake3(digest + body).digest() for body in bodies]
    return set(map(len, hashes)) == {64} and b"".join(digests).hex() == "".join(hashes)


# rows a page of the whole walk: one read, and one comprehension of each kind of call, a page; a page is
# held with its columns and bodies (some 2 kB a row), and a walker process runs alongside each import
_PAGE = 5_000


def _check_counts(store: Store, only: set[str] | None, last_seq: int) -> tuple[int, str] | None:
    """inbound_counts holds what the spans known now add up to: of every paper, or of those the
    observations whose keys are in `only` point at."""
    oids = None if only is None else sorted(k[len(OBSERVATION) :] for k in only if k.startswith(OBSERVATION))
    cited = None if oids is None else sorted({r.cited for r in store.spans.span_rows(oids, ordered=False)})
    if cited == []:
        return None
    stored, counted = store.spans.count_rows(cited)
    for a, b in itertools.zip_longest(stored, counted):
        if a != b:  # the first (cited, bucket) that differs, in their order
            wrong = min(x for x in (a, b) if x is not None)
            break
    else:
        return None
    return last_seq, (
        f"inbound_counts of arXiv:{wrong[0]} (bucket {wrong[1]}) do not add up to its inbound spans "
        "(counts altered, added or removed)"
    )


def _check_screen(store: Store, after: int) -> tuple[int, str] | None:
    """The screen's rows of the events after `after` are what those events give, as far as its
    projection holds them (a row of an event past the position is one too many): the first seq whose
    rows differ is named."""
    position = store.spans.projection_position(SCREEN)
    held = itertools.takewhile(lambda e: e[0] <= position, store.screen.screen_events(after))
    stored = itertools.groupby(store.screen.screen_rows(after), key=lambda r: r[2])
    derived = itertools.groupby(_screen_rows(held), key=lambda r: r[2])
    a, b = next(stored, None), next(derived, None)
    while a is not None or b is not None:
        if a is not None and (b is None or a[0] < b[0]):
            return a[0], _SCREEN_MISMATCH
        if b is not None and (a is None or b[0] < a[0]):
            return b[0], _SCREEN_MISMATCH
        assert a is not None and b is not None
        if sorted(a[1]) != sorted(b[1]):
            return a[0], _SCREEN_MISMATCH
        a, b = next(stored, None), next(derived, None)
    return None


_SCREEN_MISMATCH = "the screen's index rows (screen_refs, screen_notices) do not match the event's data"


def _screen_rows(events: Iterable[ScreenEvent]) -> Iterator[ScreenRow]:
    for seq, type_, stream, observed_us, recorded_us, data in events:
        refs, notices = screen_event_rows(seq, type_, stream, observed_us, recorded_us, data)
        yield from (("ref", *r) for r in refs)
        yield from (("notice", *n) for n in notices)


def _span_break(oid: str, rows: list[Row], steps: list[Step]) -> tuple[int, str]:
    seq = max([s.seq for s in steps] or [r.resolution_seq for r in rows])
    return seq, (
        f"the inbound spans of observation {oid} do not match its citations and resolutions "
        "(inbound_spans rows altered, added or removed)"
    )


def _check_fill(store: Store, last_seq: int) -> tuple[int, str] | None:
    """The Merkle nodes must not cover events the ledger no longer holds."""
    filled, chain_hash = store.tree.fill_state()
    if filled > last_seq:
        return last_seq + 1, (
            f"the Merkle tree was built over {filled} events but the ledger holds {last_seq}: "
            "events were cut off the end"
        )
    if filled and store.tree.event_hash(filled) != chain_hash:
        return filled, f"seq {filled} is not the event the Merkle tree was built over (rewritten)"
    return None


def _held_checkpoint(store: Store) -> Checkpoint | str | None:
    """The last checkpoint this ledger signed, or why it does not parse."""
    note = store.tree.last_checkpoint()
    if note is None:
        return None
    try:
        return unsigned_checkpoint(note)
    except NoteError as e:
        return f"the last signed checkpoint does not parse: {e.message}"


def _check_checkpoint(held: Checkpoint | str | None, walk: _Walk) -> tuple[int, str] | None:
    """The last signed checkpoint must still hold: not beyond the head, and the same root."""
    if held is None:
        return None
    if isinstance(held, str):
        return walk.last_seq + 1, held
    if held.size > walk.last_seq:
        return walk.last_seq + 1, (
            f"a checkpoint of {held.size} events was signed but the ledger holds {walk.last_seq}: "
            "events were cut off the end or the database was rolled back"
        )
    got = walk.roots.get(held.size)
    if got is not None and got != held.root:
        return (
            held.size,
            f"events 1..{held.size} do not hash to the root of the checkpoint signed for that size",
        )
    return None  # size 0, or a size before a resumed walk's start: checked by the walk that passed it

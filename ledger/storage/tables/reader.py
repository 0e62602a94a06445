"""A record's reads, one statement each, in one consistent snapshot as of T and K."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import NamedTuple, Protocol

from ledger.model.facts import (
    Checked,
    CheckRow,
    CheckWorkRow,
    Fact,
    Head,
    InboundDay,
    SourceHead,
)
from ledger.storage.derived import screen, spans
from ledger.storage.derived.checks import stored_checks
from ledger.storage.derived.keys import (
    LEVELS,
    OBSERVATION,
    level_table,
)
from ledger.storage.derived.past import Past, PastIndex, Touching
from ledger.storage.derived.spans import (
    OPEN,
    Span,
)
from ledger.storage.sql import (
    FACT_COLUMNS,
    FAR_FUTURE,
    HEAD_SQL,
    SOURCE_HEADS_SQL,
    Connection,
    DialectStore,
    SqlParam,
    SqlParams,
    fact_row,
)
from ledger.storage.tables.inbound import (
    COUNT_NOW,
    INBOUND_ORDER,
    VISIBLE,
    VISIBLE_NOW,
    TailRow,
    fold,
    record_order,
    tail_sql,
)
from ledger.storage.tables.shared import (
    CHECK_WINDOW,
    CHECKS_TAIL,
    each_level,
    head_of,
    starts_ends,
)


class CheckHistoryRow(NamedTuple):
    """A standing check covering a work as of T and K: its per-work row, or its every-work row ('*')."""

    work_id: str
    source: str
    observed_at: str
    observed_us: int
    seq: int
    hash: str
    notices: str  # the notices JSON


class ReaderStore(DialectStore, Protocol):
    """What a reader uses of its store (sql_store.SqlStore): its statements and what records last read."""

    @property
    def past(self) -> PastIndex: ...


class SqlReader:
    """The five queries one record needs, one statement each, filtered to observed <= T, recorded <= K."""

    def __init__(self, store: ReaderStore, conn: Connection, as_of_us: int, known_us: int) -> None:
        self.store = store
        self.conn = conn
        self.t = as_of_us
        self.k = known_us
        self._noticed_cache: list[str] | None = None
        self._screen_tail: screen.Tail | None = None
        self._tail_refs: list[screen.RefRow] | None = None

    def _facts(self, sql: str, params: SqlParams) -> list[Fact]:
        return [fact_row(r) for r in self.store.query(self.conn, sql, params)]

    def head(self) -> Head:
        """The head this snapshot sees (not counted in the statement budget)."""
        return head_of(self.store.query(self.conn, HEAD_SQL).fetchone())

    def paper_stream(self, arxiv_id: str) -> list[Fact]:
        """Statement 1: the paper's own stream (snapshots, citations, resolutions, measurements)."""
        return self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE stream = ? AND observed_us <= ? "
            "AND recorded_us <= ? ORDER BY seq",
            (f"paper:{arxiv_id}", self.t, self.k),
        )

    def inbound(self, arxiv_id: str, limit: int) -> tuple[int, list[Fact]]:
        """Statements 2 and 3: how many observations are inbound to the paper, counted over its spans,
        and the citations and resolutions of the first `limit` of them in the record's order. The spans
        hold the events up to their projection's position: the observations of the events past it that
        can touch this paper (read with the count, see derived/past.py) are left out of the spans read
        and folded in from their events."""
        where = (arxiv_id, self.t, self.t, self.k, self.k)
        held = self.store.past.held()
        since = (-1, 0) if held is None else (held.position, held.upto)
        if self.k < FAR_FUTURE:  # known at an earlier K: every span of the paper is read, once
            tail = self.store.query(self.conn, f"SELECT {tail_sql(self.store.dialect)}", since).fetchone()
            count_all = f"SELECT (SELECT count(*) FROM inbound_spans WHERE {VISIBLE})"
            return self._inbound(
                count_all, where, where, limit, past=self._past(held, TailRow._make(tail), arxiv_id)
            )
        start = self.t - self.t % spans.BUCKET_US
        row = self.store.query(
            self.conn,
            f"SELECT {COUNT_NOW}, "
            "(SELECT coalesce(sum(starts - ends), 0) FROM inbound_counts WHERE cited = ?), "
            + tail_sql(self.store.dialect),
            (arxiv_id, self.t // spans.BUCKET_US, *(arxiv_id, start, self.t) * 2, arxiv_id, *since),
        ).fetchone()
        # int(): PostgreSQL sums bigints as numeric
        count, spans_now = int(row[0]), int(row[1])
        # The first `limit` in the record's order: walking the paper's spans in that order finds them
        # after about limit * spans_now / count spans; when few are visible as of T (an early T), the
        # spans started by T, read by start and then sorted, are fewer (the ORDER BY expression keeps
        # the planner off the ordered walk).
        early = count * count * 4 < limit * spans_now
        order = "citing || '', reference_index, observation_id" if early else INBOUND_ORDER
        return self._inbound(
            f"SELECT {count}", (), (arxiv_id, self.t, self.t), limit, order, VISIBLE_NOW,
            past=self._past(held, TailRow._make(row[2:]), arxiv_id),
        )  # fmt: skip

    def _past(self, held: Past | None, tail: TailRow, cited: str) -> tuple[int, Touching]:
        """The spans' position, and what of the events past it the paper folds in."""
        position, head = int(tail.position or 0), int(tail.head or 0)
        return position, self.store.past.touching(held, position, head, tail.rows, cited)

    def _inbound(
        self,
        count: str,
        counted: SqlParams,
        where: SqlParams,
        limit: int,
        order: str = INBOUND_ORDER,
        visible: str = VISIBLE,
        *,
        past: tuple[int, Touching],
    ) -> tuple[int, list[Fact]]:
        # the count on a row of its own, joined to the shown events (none when nothing is shown), and
        # every event of the observations past the spans' position that can touch this paper
        d = self.store.dialect
        position, touching = past
        touched = skip = extra = ""
        params: list[SqlParam] = []
        if touching:
            listed = "SELECT value FROM json_each(?)" if d.json_lists else "SELECT unnest(CAST(? AS text[]))"
            touched = (
                "touched AS (SELECT observation_id AS oid FROM inbound_spans WHERE cited = ? AND "
                f"{d.any_of('citing')} UNION {listed}), "
            )
            params += [where[0], d.bind_list(touching.citing), d.bind_list(touching.named)]
            skip = " AND observation_id NOT IN (SELECT oid FROM touched)"
            keyed = (
                f"SELECT k.seq FROM touched AS t JOIN event_keys_all AS k ON k.key = '{OBSERVATION}' || t.oid"
                if d.json_lists
                else "SELECT seq FROM event_keys_all WHERE key = "
                f"ANY(ARRAY(SELECT '{OBSERVATION}' || oid FROM touched))"
            )
            extra = f" UNION ALL SELECT seq, 1 FROM events WHERE seq IN ({keyed})"
        params += [*where, limit, *counted]
        rows = self.store.query(
            self.conn,
            f"WITH {touched}shown AS (SELECT citation_seq, resolution_seq FROM inbound_spans "
            f"  WHERE {visible}{skip} ORDER BY {order} LIMIT ?), "
            " picked AS (SELECT citation_seq AS seq, 0 AS tail FROM shown"
            f"  UNION ALL SELECT resolution_seq, 0 FROM shown{extra}) "
            f"SELECT c.n, p.tail, e.recorded_us, {', '.join('e.' + c for c in FACT_COLUMNS.split(', '))} "
            f"FROM ({count} AS n) AS c "
            "LEFT JOIN (picked AS p JOIN events AS e ON e.seq = p.seq) ON 1 = 1 "
            "ORDER BY e.seq",
            params,
        ).fetchall()
        total = int(rows[0][0])
        facts = [fact_row(r[3:]) for r in rows if r[3] is not None and not r[1]]
        if not touching:
            return total, facts
        folded_from = [(fact_row(r[3:]), int(r[2])) for r in rows if r[3] is not None and r[1]]
        more, folded = fold(str(where[0]), self.t, self.k, position, folded_from)
        # the first `limit` observations in the record's order, of those read and those folded in
        by_oid: dict[str, list[Fact]] = {}
        for f in (*facts, *folded):
            by_oid.setdefault(f.data.observation_id, []).append(f)
        first = sorted(by_oid.values(), key=record_order)[:limit]
        return total + more, sorted((f for mine in first for f in mine), key=lambda f: f.seq)

    def inbound_seqs(self, arxiv_id: str, offset: int, limit: int) -> list[tuple[int, int]]:
        """(citation seq, resolution seq) of the inbound observations `offset`.. `offset + limit` in
        the record's order (the integrity report's and the bundle's pages)."""
        rows = self.store.query(
            self.conn,
            f"SELECT citation_seq, resolution_seq FROM inbound_spans WHERE {VISIBLE} "
            f"ORDER BY {INBOUND_ORDER} LIMIT ? OFFSET ?",
            (arxiv_id, self.t, self.t, self.k, self.k, limit, offset),
        )
        return [(r[0], r[1]) for r in rows]

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]:
        """Statement 3: paper.observed events of the given papers."""
        if not arxiv_ids:
            return []
        d = self.store.dialect
        return self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE type = 'paper.observed' AND {d.any_of('stream')} "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY seq",
            (d.bind_list([f"paper:{a}" for a in arxiv_ids]), self.t, self.k),
        )

    def source_heads(self) -> list[SourceHead]:
        """Statement 4: the latest standing check of every source, by index seeks.

        A recursive skip-scan finds each source stream (one seek per source), then a backward seek on
        events_stream_type_time its latest check as of T and K: the cost does not grow with the
        number of checks in the ledger (a window over every check did: 30 ms per record at 1M).
        """
        rows = self.store.query(self.conn, SOURCE_HEADS_SQL, (self.t, self.k))
        return [SourceHead(*r) for r in rows]

    def check_history(self, work_ids: Sequence[str]) -> list[CheckHistoryRow]:
        """Every standing check covering any of these works as of T and K (its per-work row, or its
        every-work row): (work_id, source, observed_at, observed_us, seq, hash, notices JSON), by seq.
        Not a record's statement: the alerts a page and a feed show."""
        if not work_ids:
            return []
        d = self.store.dialect
        # a work no check ever listed a notice for has nothing to show: its rows are not read
        noticed = self._noticed(work_ids)
        rows = self.store.query(
            self.conn,
            "SELECT c.work_id, c.source, e.observed_at, c.observed_us, c.seq, e.hash, c.notices, "
            "c.recorded_us FROM check_works_all AS c JOIN events AS e ON e.seq = c.seq "
            f"WHERE {d.any_of('c.work_id')} AND c.observed_us <= ? AND c.recorded_us <= ? "
            # the checks past the projection's position, their rows derived here
            "UNION ALL SELECT NULL, NULL, observed_at, observed_us, seq, hash, data, recorded_us FROM events "
            f"WHERE {CHECKS_TAIL} ORDER BY 5",
            (d.bind_list(noticed), self.t, self.k, self.t, self.k),
        )
        wanted = set(noticed)
        out: list[CheckHistoryRow] = []
        for w, source, observed_at, observed_us, seq, hash_, notices, recorded_us in rows:
            if w is not None:
                out.append(CheckHistoryRow(w, source, observed_at, observed_us, seq, hash_, notices))
                continue
            out += [
                CheckHistoryRow(c.work_id, c.source, observed_at, observed_us, seq, hash_, c.notices.decode())
                for c in stored_checks(seq, observed_at, observed_us, recorded_us, notices)
                if c.work_id in wanted
            ]
        # by seq, then work: the same order whichever rows were folded in
        return sorted(out, key=lambda r: (r.seq, r.work_id))

    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]:
        """Statement 5: per (work_id, since) and source, the latest check covering the work. The
        projection holds the checks up to its position; the checks past it come with the same
        statement (a row each, work_id NULL, its data for notices) and are folded in here."""
        if not works:
            return []
        d = self.store.dialect
        # each level joined on its own (a join into the UNION ALL view would read all of it)
        covering = " UNION ALL ".join(
            "SELECT w.work_id, w.since, c.source, e.observed_at, c.observed_us, c.seq, c.notices"
            f" FROM wanted w JOIN {level_table('check_works', level)} c ON c.work_id IN (w.work_id, '*')"
            " JOIN events e ON e.seq = c.seq"
            " WHERE c.observed_us <= ? AND c.observed_us >= w.since AND c.recorded_us <= ?"
            for level in LEVELS
        )
        rows = self.store.query(
            self.conn,
            f"WITH wanted(work_id, since) AS ({d.pairs('text', 'bigint')}) "
            "SELECT work_id, since, source, observed_at, observed_us, seq, notices FROM ("
            "  SELECT *, row_number() OVER (PARTITION BY work_id, since, source"
            "   ORDER BY observed_us DESC, seq DESC) AS rn"
            f"  FROM ({covering}) AS c"
            ") AS r WHERE rn = 1"
            f" UNION ALL SELECT NULL, recorded_us, NULL, observed_at, observed_us, seq, data FROM events"
            f" WHERE {CHECKS_TAIL}",
            (*d.bind_pairs(works), *(self.t, self.k) * len(LEVELS), self.t, self.k),
        ).fetchall()
        latest = {
            (w, s, src): CheckRow(w, s, src, oa, ous, seq, json.loads(n))
            for w, s, src, oa, ous, seq, n in rows
            if w is not None
        }
        sinces: dict[str, list[int]] = {}
        for w, since in works:
            sinces.setdefault(w, []).append(since)
        for _, recorded_us, _, observed_at, observed_us, seq, data in (r for r in rows if r[0] is None):
            for c in stored_checks(seq, observed_at, observed_us, recorded_us, data):
                for w in sinces if c.work_id == "*" else (c.work_id,) if c.work_id in sinces else ():
                    for since in sinces[w]:
                        held = latest.get((w, since, c.source))
                        if observed_us >= since and (
                            held is None or (held.observed_us, held.seq) < (observed_us, seq)
                        ):
                            notices = json.loads(c.notices)
                            latest[w, since, c.source] = CheckRow(
                                w, since, c.source, observed_at, observed_us, seq, notices
                            )
        return [latest[key] for key in sorted(latest)]

    # -- the screen (service/screen.py): references to works with notices ----------------

    # The screen's index holds the events up to its projection's position; each read folds in those
    # past it (at most the allowed lag) from this snapshot's events, so the answer never waits on the
    # projector and is the same whatever its lag, on a ledger that cannot be written too.

    def _tail(self) -> screen.Tail:
        """The events past the screen projection's position, and their notices (read once per reader)."""
        if self._screen_tail is None:
            self._screen_tail = screen.tail(self.store, self.conn)
        return self._screen_tail

    def _noticed_works(self) -> list[str]:
        """The works some check as of T and K lists a notice for (read once per reader)."""
        if self._noticed_cache is None:
            folded = self._tail().noticed(self.t, self.k)
            rows = self.store.query(
                self.conn,
                "SELECT DISTINCT work_id FROM screen_notices WHERE observed_us <= ? AND recorded_us <= ?",
                (self.t, self.k),
            )
            self._noticed_cache = sorted({r[0] for r in rows} | folded)
        return self._noticed_cache

    def _folded_refs(self, papers: Collection[str] | None) -> list[screen.RefRow]:
        """The references past the projection's position that name a work with a notice (of `papers`)."""
        if self._tail_refs is None:
            self._tail_refs = screen.tail_refs(self.store, self.conn, self._tail(), self._noticed_works())
        return [r for r in self._tail_refs if papers is None or r.citing in papers]

    def _flagged_refs(self, papers: Sequence[str] | None) -> tuple[str, list[SqlParam]]:
        """The screen_refs rows of works some check as of T and K lists a notice for (of `papers`).
        The works are bound as a list: each is one seek of the table's key, whatever the planner
        knows of the table's size."""
        d = self.store.dialect
        where = d.any_of("r.work_id")
        params: list[SqlParam] = [d.bind_list(self._noticed_works())]
        if papers is not None:
            where += f" AND {d.any_of('r.citing')}"
            params.append(d.bind_list(sorted(papers)))
        return where, params

    def screen_citing(self, papers: Sequence[str] | None, after: str | None, limit: int) -> list[str]:
        """The first `limit` citing papers (after `after`, in code-point order) with a reference that
        ever named a work some check as of T and K lists a notice for."""
        where, params = self._flagged_refs(papers)
        if after is not None:
            where += " AND r.citing > ?"
            params.append(after)
        rows = self.store.query(
            self.conn,
            f"SELECT DISTINCT r.citing FROM screen_refs AS r WHERE {where} ORDER BY r.citing LIMIT ?",
            (*params, limit),
        )
        folded = (r.citing for r in self._folded_refs(None if papers is None else set(papers)))
        return sorted({r[0] for r in rows} | {c for c in folded if after is None or c > after})[:limit]

    def screen_observations(self, citing: Sequence[str]) -> list[str]:
        """The references of these papers that ever named a work some check as of T and K lists a
        notice for: their observation ids, sorted."""
        if not citing:
            return []
        where, params = self._flagged_refs(citing)
        rows = self.store.query(
            self.conn, f"SELECT DISTINCT r.observation_id FROM screen_refs AS r WHERE {where}", params
        )
        folded = {r.observation_id for r in self._folded_refs(set(citing))}
        return sorted({r[0] for r in rows} | folded)

    def screen_facts(self, observation_ids: Sequence[str]) -> list[Fact]:
        """The citations and resolutions as of T and K of these observations, in seq order."""
        if not observation_ids:
            return []
        d = self.store.dialect
        # sorted here: with ORDER BY seq PostgreSQL merge-joined the keys to the whole events index
        facts = self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')} "
            "AND observed_us <= ? AND recorded_us <= ?",
            (d.bind_list([OBSERVATION + o for o in observation_ids]), self.t, self.k),
        )
        return sorted(facts, key=lambda f: f.seq)

    def notices_learned(self, work_ids: Sequence[str]) -> dict[tuple[str, str, str], tuple[int, int]]:
        """(work_id, source, notice JSON) -> (recorded_us, seq) of the first check as of T and K that
        listed that notice for the work: when the ledger learned it."""
        if not work_ids:
            return {}
        d = self.store.dialect
        rows = self.store.query(
            self.conn,
            "SELECT work_id, source, notice, min(recorded_us), min(seq) FROM screen_notices "
            f"WHERE {d.any_of('work_id')} AND observed_us <= ? AND recorded_us <= ? "
            "GROUP BY work_id, source, notice",
            (d.bind_list(sorted(set(work_ids))), self.t, self.k),
        )
        found = {(r[0], r[1], r[2]): (r[3], r[4]) for r in rows}
        return self._tail().learned(found, work_ids, self.t, self.k)

    # -- a paper's timeline (projections/timeline.py): every instant, not one -----------

    def at(self, as_of_us: int, known_us: int | None = None) -> SqlReader:
        """A reader over the same consistent read, filtered to another T (and K)."""
        return SqlReader(self.store, self.conn, as_of_us, FAR_FUTURE if known_us is None else known_us)

    def checks(self) -> list[Checked]:
        """Every standing check of every source, in (observed_us, seq) order."""
        rows = self.store.query(
            self.conn,
            "SELECT substr(stream, 8), observed_at, observed_us, seq FROM events "
            "WHERE stream >= 'source:' AND stream < 'source;' AND type = 'standing.checked' "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY observed_us, seq",
            (self.t, self.k),
        )
        return [Checked(*r) for r in rows]

    def _check_works(self, columns: str, work_ids: Sequence[str], also: str = "") -> list[CheckWorkRow]:
        """The check_works rows of these works as of T and K (where `also` holds too): the
        projection's (`columns` of them, the rest NULL) and, from the same statement, those of the
        checks past its position, derived from their events here (whole rows)."""
        d = self.store.dialect
        wanted = set(work_ids)
        where = f"{d.any_of('work_id')} AND {also}{CHECK_WINDOW}"
        # `also` given: a set of works is asked for (UNION), else every row
        union = "UNION" if also else "UNION ALL"
        rows = self.store.query(
            self.conn,
            each_level("check_works", columns, where, union)
            + f" UNION ALL SELECT NULL, observed_at, observed_us, seq, recorded_us, data FROM events "
            f"WHERE {CHECKS_TAIL}",
            (*(d.bind_list(sorted(wanted)), self.t, self.k) * len(LEVELS), self.t, self.k),
        ).fetchall()
        out = [
            CheckWorkRow(w, src, o_us, seq, r_us, n) for w, src, o_us, seq, r_us, n in rows if w is not None
        ]
        for _, observed_at, observed_us, seq, recorded_us, data in (r for r in rows if r[0] is None):
            out += [
                c
                for c in stored_checks(seq, observed_at, observed_us, recorded_us, data)
                if c.work_id in wanted
            ]
        return out

    def _noticed(self, work_ids: Sequence[str]) -> list[str]:
        """Those of these works some check as of T and K lists a notice for, and '*' (every check of
        all works): the only ones whose check rows can hold a notice."""
        # typed NULLs: PostgreSQL types a UNION's columns pairwise, and the folded rows' come last
        blank = "CAST(NULL AS TEXT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), NULL"
        noticed = self._check_works(f"work_id, {blank}", work_ids, "notices <> '[]' AND ")
        return sorted({r.work_id for r in noticed if r.notices is None or r.notices != b"[]"} | {"*"})

    def notice_rows(self, work_ids: Sequence[str]) -> list[CheckWorkRow]:
        """Every check_works row of those of these works that some check lists a notice for, and of
        every check of all works ('*'), in (observed_us, seq, work_id) order: what the notices of the
        paper's cited works were at each check (the rows of works never noticed are not read)."""
        if not work_ids:
            return []
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        rows = self._check_works(columns, self._noticed(work_ids))
        return sorted(
            (r if isinstance(r.notices, bytes) else r._replace(notices=r.notices.encode()) for r in rows),
            key=lambda r: (r.observed_us, r.seq, r.work_id),
        )

    def inbound_spans(self, arxiv_id: str, limit: int) -> list[tuple[Span, int | None]] | None:
        """The paper's inbound spans known now that start by T, by (t_from, observation_id), each with
        the seq of the event that ended it (the latest of its observation's at t_to; None while open);
        None when there are more than `limit` (the timeline then counts them per day)."""
        ended = (
            f"CASE WHEN s.t_to < {OPEN} THEN (SELECT max(e.seq) FROM events AS e WHERE e.seq IN ("
            f"  SELECT k.seq FROM event_keys_all AS k WHERE k.key = '{OBSERVATION}' || s.observation_id)"
            "  AND e.observed_us = s.t_to) END"
        )
        rows = self.store.query(
            self.conn,
            "SELECT s.cited, s.citing, s.reference_index, s.observation_id, s.t_from, s.t_to, "
            f"s.citation_seq, s.resolution_seq, {ended} FROM inbound_spans AS s "
            f"WHERE s.cited = ? AND s.k_to = {OPEN} AND s.t_from <= ? "
            "ORDER BY s.t_from, s.observation_id LIMIT ?",
            (arxiv_id, self.t, limit + 1),
        ).fetchall()
        return None if len(rows) > limit else [(Span(*r[:8]), r[8]) for r in rows]

    def inbound_days(self, arxiv_id: str) -> list[InboundDay]:
        """Per day of observed time, the paper's inbound spans known now that start or end in it
        (up to T): the first and last such instant, how many distinct ones, how many start and end."""
        rows = self.store.query(
            self.conn,
            "SELECT bucket, min(t), max(t), count(DISTINCT t), sum(s), sum(e) FROM ("
            + starts_ends("", " AND cited = ? AND t_from <= ?", " AND cited = ? AND t_to <= ?")
            + ") AS c GROUP BY bucket ORDER BY bucket",
            (arxiv_id, self.t, arxiv_id, self.t),
        )
        # int(): PostgreSQL sums bigints as numeric
        return [InboundDay(*(int(v) for v in r)) for r in rows]

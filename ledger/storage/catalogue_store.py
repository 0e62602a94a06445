"""The catalogue's SQL (ledger/storage/derived/catalogue.py holds its rules), written once for both
backends: extending it from the events past its cursor, and the three batched candidate reads of
`CatalogueTables`. Reads run in one read transaction, so a reader never sees half of an extension."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from ledger.model.codec import ARXIV_RE
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.works import CatalogueWork
from ledger.storage.derived.catalogue import (
    CHUNK,
    COLUMNS,
    PAPER,
    WHOLE,
    WORK,
    WORK_COLUMNS,
    Ranking,
    Row,
    cut,
    event_row,
    fold,
    index_terms,
    latest_rows,
    looked_for,
    reads_whole,
    search_tokens,
    tiers,
    to_work,
)
from ledger.storage.sql import Connection, Cursor, DialectStore, SqlParams, SqlRow

KEYS_PER_STATEMENT = 500

_UPSERT = (
    f"INSERT INTO catalogue_works ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)}) "
    "ON CONFLICT (ident) DO UPDATE SET "
    # a row replaced keeps its first_seq: the row held is older than any event past the cursor
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS if c not in ("ident", "first_seq"))
    + " WHERE (excluded.observed_us, excluded.seq) > (catalogue_works.observed_us, catalogue_works.seq)"
)
_EVENTS = (
    "SELECT seq, type, observed_at, observed_us, data FROM events "
    f"WHERE seq > ? AND seq <= ? AND type IN ('{WORK}', '{PAPER}') ORDER BY seq"
)


# a stream's catalogue events in the order that makes its last one the latest; a work's stream is
# work:{doi} and a paper's paper:{arxiv_id}, so stream order is the order of the rows' idents
_BY_STREAM = (
    "SELECT seq, type, observed_at, observed_us, data, stream FROM events "
    f"WHERE seq <= ? AND type IN ('{WORK}', '{PAPER}') AND (stream, observed_us, seq) > (?, ?, ?) "
    "ORDER BY stream, observed_us, seq LIMIT ?"
)
_BY_IDENT = f"SELECT {', '.join(COLUMNS)} FROM catalogue_works WHERE ident > ? ORDER BY ident LIMIT ?"
PAGE = 5_000  # rows a check reads at a time: a page per statement, so no backend holds them all

_TERMS = (
    "INSERT INTO catalogue_terms (term, docs) VALUES (?, ?) "
    "ON CONFLICT (term) DO UPDATE SET docs = catalogue_terms.docs + excluded.docs"
)


class SqlCatalogue:
    """The catalogue table of one store (either backend), over the store's per-thread connection."""

    def __init__(self, store: DialectStore, readonly_errors: tuple[type[BaseException], ...]) -> None:
        self.store = store
        self.readonly_errors = readonly_errors  # a write gives up on these (a read-only file or role)
        sqlite = store.dialect.name == "sqlite"
        # one extender at a time; on PostgreSQL readers and appends are not held up
        self._begin = (
            ("BEGIN IMMEDIATE",) if sqlite else ("BEGIN", "LOCK TABLE catalogue_cursor IN EXCLUSIVE MODE")
        )

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.store.connection(), sql, params)

    def catalogue_indexed(self) -> int:
        """The last seq the catalogue holds the works of."""
        return int(self._q("SELECT seq FROM catalogue_cursor WHERE id = 1").fetchone()[0])

    def index_catalogue(self, upto: int) -> int:
        """Extend the catalogue with the events after its cursor up to seq `upto` (a committed head), a
        chunk per transaction; returns the seq it holds through (where it stopped on a ledger that cannot
        be written: a read-only file or role)."""
        done = self.catalogue_indexed()
        while done < upto:
            try:
                with self.store.transaction(self._begin) as conn:
                    start = self.catalogue_indexed()  # another process may have gone further meanwhile
                    end = min(upto, start + CHUNK)
                    if start < end:
                        found = self.store.query(conn, _EVENTS, (start, end)).fetchall()
                        rows = [event_row(*r) for r in found]
                        latest = latest_rows([r for r in rows if r is not None])
                        if latest:
                            self._count_terms(conn, latest)
                            self.store.query_many(conn, _UPSERT, latest)
                        self.store.query(conn, "UPDATE catalogue_cursor SET seq = ? WHERE id = 1", (end,))
            except self.readonly_errors:
                return done
            done = max(start, end)
        return done

    def _count_terms(self, conn: Connection, latest: list[Row]) -> None:
        """Keep catalogue_terms (how many works hold each word a search may look for) in step with the
        rows about to be written: the words of a row replaced are taken off, those of its successor added."""
        d = self.store.dialect
        held: dict[str, tuple[int, int, str]] = {}
        for i in range(0, len(latest), KEYS_PER_STATEMENT):
            part = d.bind_list([r.ident for r in latest[i : i + KEYS_PER_STATEMENT]])
            held.update(
                (ident, (int(us), int(seq), text))
                for ident, us, seq, text in self.store.query(
                    conn,
                    "SELECT ident, observed_us, seq, search_text FROM catalogue_works "
                    f"WHERE {d.any_of('ident')}",
                    (part,),
                ).fetchall()
            )
        delta: Counter[str] = Counter()
        for r in latest:
            old = held.get(r.ident)
            if old is not None:
                if (r.observed_us, r.seq) <= old[:2]:
                    continue  # not the latest: the upsert leaves the row as it is
                delta.subtract(index_terms(old[2]))
            delta.update(index_terms(r.search_text))
        changed = sorted((t, n) for t, n in delta.items() if n)
        if changed:
            self.store.query_many(conn, _TERMS, changed)

    def catalogue_check(self) -> tuple[int, str] | None:
        """(the cursor's seq, what is wrong) when the catalogue is not what its events give up to its
        cursor: each row the latest work.observed of its DOI or paper.observed of its paper, and each
        word counted by as many works as hold it; None when it is. Streams both sides in ident order."""
        with self.store.reading() as conn:
            upto = int(self.store.query(conn, "SELECT seq FROM catalogue_cursor WHERE id = 1").fetchone()[0])
            events = self._pages(conn, _BY_STREAM, (upto,), ("", -1, -1), lambda r: (r[5], r[3], r[0]))
            given = _latest_by_stream(events)
            held = map(Row._make, self._pages(conn, _BY_IDENT, (), ("",), lambda r: (r[0],)))
            counted: Counter[str] = Counter()
            for want, have in itertools.zip_longest(given, held):
                if want != have:
                    return upto, _row_break(want, have)
                counted.update(index_terms(want.search_text))
            terms = self.store.query(conn, "SELECT term, docs FROM catalogue_terms WHERE docs <> 0")
            stored = {t: int(n) for t, n in terms}
        if stored != counted:
            wrong = min(set(stored.items()) ^ set(counted.items()))[0]
            return upto, (
                f"catalogue_terms counts {stored.get(wrong, 0)} works holding {wrong!r}; the catalogue's "
                f"rows hold {counted.get(wrong, 0)} (counts altered, added or removed)"
            )
        return None

    def _pages(
        self,
        conn: Connection,
        sql: str,
        fixed: SqlParams,
        start: SqlParams,
        key: Callable[[SqlRow], SqlParams],
    ) -> Iterator[SqlRow]:
        """The rows of `sql` a page at a time, each page after the `key` of the last row read."""
        after = start
        while True:
            rows = self.store.query(conn, sql, (*fixed, *after, PAGE)).fetchall()
            yield from rows
            if len(rows) < PAGE:
                return
            after = key(rows[-1])

    def catalogue_rows(self) -> list[Row]:
        """Every row, by identity (what tests and benchmarks compare)."""
        cols = ", ".join(COLUMNS)
        return [Row(*r) for r in self._q(f"SELECT {cols} FROM catalogue_works ORDER BY ident").fetchall()]

    def latest_work_data(self, dois: Sequence[str]) -> dict[str, bytes]:
        """The data (canonical bytes) of the latest work.observed of each of these normalised DOIs the
        catalogue holds, as far as it is extended."""
        d = self.store.dialect
        out: dict[str, bytes] = {}
        wanted = sorted(set(dois))
        with self.store.reading() as conn:
            for i in range(0, len(wanted), KEYS_PER_STATEMENT):
                idents = d.bind_list(["doi:" + x for x in wanted[i : i + KEYS_PER_STATEMENT]])
                rows = self.store.query(
                    conn,
                    "SELECT c.doi, e.data FROM catalogue_works AS c JOIN events AS e ON e.seq = c.seq "
                    f"WHERE {d.any_of('c.ident')}",
                    (idents,),
                ).fetchall()
                out.update(
                    (doi, data.encode() if isinstance(data, str) else bytes(data)) for doi, data in rows
                )
        return out

    # -- the reads of CatalogueTables --------------------------------------------------

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        """The works whose DOI key or arXiv key (ledger/model/doi.py) is each key, by seq; a bare arXiv
        id is taken as its arXiv key."""
        asked = [arxiv_key(k) if ARXIV_RE.fullmatch(k.strip()) else doi_key(k) for k in keys]
        wanted = sorted({k for k in asked if k is not None})
        d = self.store.dialect
        found: dict[str, list[CatalogueWork]] = {}
        with self.store.reading() as conn:
            for i in range(0, len(wanted), KEYS_PER_STATEMENT):
                part = d.bind_list(wanted[i : i + KEYS_PER_STATEMENT])
                rows = self.store.query(
                    conn,
                    f"SELECT {WORK_COLUMNS}, doi_key, arxiv_key FROM catalogue_works "
                    f"WHERE {d.any_of('doi_key')} OR {d.any_of('arxiv_key')} ORDER BY seq",
                    (part, part),
                ).fetchall()
                for r in rows:
                    work = to_work(r[:-2])
                    for k in {r[-2], r[-1]} - {None}:
                        found.setdefault(k, []).append(work)
        return [list(found.get(k, ())) if k is not None else [] for k in asked]

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        """For each text, the `limit` works that hold most of its rarest words, weighted by rarity, best
        first, ties by seq. The database answers only which works (the `limit` of least seq) hold all
        the words of a set; which sets are asked, in what order, the ranking and the cut are decided
        in code (derived/catalogue.py `Ranking`, `tiers`, `cut`), so both backends answer the same list.

        A batch of texts costs a bounded number of statements, however many texts it holds: the words'
        counts and the catalogue's size in one; the works of each word of the texts of rare words
        (`reads_whole`) in one, those texts ranked from them; then one per round for the others (every
        text's next sets at once); the works picked in one. Asking a text's later sets early would save
        rounds, but a text of common words mostly stops at its first tiers: it would ask twice the sets."""
        queries = [search_tokens(t) for t in texts]
        with self.store.reading() as conn:
            docs, total = self._counts(conn, sorted({w for words in queries for w in words}))
            chosen = [looked_for(words, docs) for words in queries]
            if not any(chosen):
                return [[] for _ in texts]
            rare = sorted({w for words in chosen if reads_whole(words, docs) for w in words})
            # a word whose works are more than its count says (the index folds what the count keeps
            # apart) is not read whole: its texts are ranked a tier at a time
            postings = {
                a[0]: held
                for a, held in self._holding(conn, [(w,) for w in rare], WHOLE + 1).items()
                if len(held) <= WHOLE
            }
            picked: list[list[int]] = [[] for _ in texts]
            rankings: list[tuple[int, Ranking]] = []
            for n, words in enumerate(chosen):
                if all(w in postings for w in words):
                    picked[n] = cut(tiers(words, docs, total, postings), limit)
                else:
                    rankings.append((n, Ranking(words, docs, total, limit)))
            found: dict[tuple[str, ...], frozenset[int]] = {}
            # a round per tier: each text's next word sets, asked once for the batch in one statement
            while pending := [r for _, r in rankings if r.asks()]:
                asks = sorted({a for r in pending for a in r.asks()} - found.keys())
                if asks:
                    found.update(self._holding(conn, asks, limit))
                for r in pending:
                    r.take(found)
            for n, r in rankings:
                picked[n] = cut(r.tiers, limit)
            works = self._by_seqs(conn, sorted({s for p in picked for s in p}))
        return [[works[s] for s in p] for p in picked]

    def _counts(self, conn: Connection, words: list[str]) -> tuple[dict[str, int], int]:
        """How many works hold each of these words (those some work holds), and how many works there
        are, in one statement."""
        d = self.store.dialect
        docs: dict[str, int] = {}
        total = 0
        for t, n in self.store.query(
            conn,
            f"SELECT term, docs FROM catalogue_terms WHERE {d.any_of('term')} "
            "UNION ALL SELECT NULL, COUNT(*) FROM catalogue_works",
            (d.bind_list(words),),
        ).fetchall():
            if t is None:
                total = int(n)
            else:
                docs[t] = int(n)
        return docs, total

    def _holding(
        self, conn: Connection, asks: list[tuple[str, ...]], limit: int
    ) -> dict[tuple[str, ...], frozenset[int]]:
        """For each ask, the seqs of the `limit` works of least seq that hold all its words, found by the
        index (which intersects the words), every ask in one statement."""
        found: dict[tuple[str, ...], set[int]] = {a: set() for a in asks}
        if not asks:
            return {}
        if self.store.dialect.name == "sqlite":
            # the rowid is the seq: FTS5 gives each ask's matches in rowid order and stops at the limit
            sql = (
                "SELECT q.key, w.seq FROM json_each(?) AS q JOIN catalogue_works AS w ON w.seq IN "
                "(SELECT rowid FROM catalogue_works_fts WHERE catalogue_works_fts MATCH q.value "
                "ORDER BY rowid LIMIT ?)"
            )
            params: SqlParams = (json.dumps([" AND ".join(f'"{w}"' for w in a) for a in asks]), limit)
        else:
            # each ask's works through the GIN index. `seq + 0`: ordered by the key's own index, the
            # planner would walk the works in seq order testing each one's words, which for a rare set
            # of words reads most of the table
            sql = (
                "SELECT q.n, w.seq FROM (SELECT n, to_tsquery('simple', x) AS x "
                "  FROM unnest(?::int[], ?::text[]) AS u(n, x)) AS q "
                "CROSS JOIN LATERAL (SELECT seq FROM catalogue_works WHERE words @@ q.x "
                "  ORDER BY seq + 0 LIMIT ?) AS w"
            )
            params = (list(range(len(asks))), [" & ".join(f"'{w}'" for w in a) for a in asks], limit)
        for n, s in self.store.query(conn, sql, params).fetchall():
            found[asks[int(n)]].add(int(s))
        return {a: frozenset(ids) for a, ids in found.items()}

    def _by_seqs(self, conn: Connection, seqs: list[int]) -> dict[int, CatalogueWork]:
        """The works of these seqs, in one statement (a batch picks at most `limit` a text)."""
        d = self.store.dialect
        rows = self.store.query(
            conn,
            f"SELECT {WORK_COLUMNS} FROM catalogue_works WHERE {d.any_of('seq')}",
            (d.bind_list(seqs),),
        ).fetchall()
        return {int(r[0]): to_work(r) for r in rows}

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        """For each (volume, first page), up to `limit` works with that volume and first page (trimmed,
        case folded), by seq."""
        asked = [(fold(v), fold(p)) for v, p in pairs]
        wanted = sorted({(v, p) for v, p in asked if v is not None and p is not None})
        d = self.store.dialect
        found: dict[tuple[str, str], list[CatalogueWork]] = {}
        cols = ", ".join("w." + c.strip() for c in WORK_COLUMNS.split(","))
        with self.store.reading() as conn:
            for i in range(0, len(wanted), KEYS_PER_STATEMENT):
                part = wanted[i : i + KEYS_PER_STATEMENT]
                rows = self.store.query(
                    conn,
                    f"WITH p (v, pg) AS ({d.pairs('text', 'text')}) "
                    f"SELECT * FROM (SELECT {cols}, w.vol_key, w.page_key, "
                    "  ROW_NUMBER() OVER (PARTITION BY w.vol_key, w.page_key ORDER BY w.seq) AS n "
                    "  FROM p JOIN catalogue_works AS w ON w.vol_key = p.v AND w.page_key = p.pg"
                    ") AS ranked WHERE n <= ? ORDER BY seq",
                    (*d.bind_pairs(part), limit),
                ).fetchall()
                for r in rows:
                    found.setdefault((r[-3], r[-2]), []).append(to_work(r[:-3]))
        return [list(found.get((v, p), ())) if v is not None and p is not None else [] for v, p in asked]


def _latest_by_stream(events: Iterable[SqlRow]) -> Iterator[Row]:
    """The catalogue row of the last event of each stream, from events in _BY_STREAM's order."""
    last: Row | None = None
    first = 0
    for e in events:
        row = event_row(*e[:5])
        if row is None:
            continue
        if last is not None and row.ident != last.ident:
            yield last._replace(first_seq=first)
            last = None
        first = row.seq if last is None else min(first, row.seq)
        last = row
    if last is not None:
        yield last._replace(first_seq=first)


def _row_break(want: Row | None, have: Row | None) -> str:
    if have is None or (want is not None and want.ident < have.ident):
        assert want is not None
        return f"catalogue_works has no row for {want.ident}, which seq {want.seq} gives (row removed)"
    if want is None or have.ident < want.ident:
        return f"catalogue_works holds {have.ident}, which no event gives (row added)"
    return f"catalogue_works' row for {have.ident} is not the one seq {want.seq} gives (row altered)"

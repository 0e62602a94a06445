"""The ledger's current stored layout, described once, and the DDL each backend spells it in.

A fresh ledger is made from this description in one step, as sqlite-utils' `create_table_sql` writes a
table's SQL from a description of it; that one speaks SQLite only, so the two spellings are rendered
here, from plain dataclasses. A ledger made by an earlier layout is brought to this one by upgrade.py;
tests/contract/test_schema.py checks that a fresh ledger and an upgraded one hold the same catalogue,
and that the two backends agree once each spelling is mapped back to the abstract types below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args, get_type_hints

from ledger.storage.derived.catalogue import Row
from ledger.storage.derived.spans import OPEN
from ledger.storage.sql import Dialect

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
BOTH = (SQLITE, POSTGRESQL)

# Abstract column types. SQLite has one INTEGER and no booleans (0/1 held under a CHECK); PostgreSQL
# text compares byte-wise (COLLATE "C") as SQLite's does.
TEXT, INT, BIGINT, BOOL, BYTES = "text", "integer", "bigint", "boolean", "bytes"
_SPELLING = {
    SQLITE: {TEXT: "TEXT", INT: "INTEGER", BIGINT: "INTEGER", BOOL: "INTEGER", BYTES: "BLOB"},
    POSTGRESQL: {TEXT: 'text COLLATE "C"', INT: "integer", BIGINT: "bigint", BOOL: "boolean", BYTES: "bytea"},
}


@dataclass(frozen=True)
class Column:
    """One column: its abstract type, whether NULL is refused, its CHECK and where its CHECK holds."""

    name: str
    type: str = TEXT
    not_null: bool = True
    check: str | None = None
    check_on: tuple[str, ...] = BOTH
    references: str | None = None
    # PostgreSQL's identity (ALWAYS or BY DEFAULT); SQLite's INTEGER PRIMARY KEY is its rowid
    identity: str | None = None


@dataclass(frozen=True)
class Index:
    """A secondary index; `where` makes it partial; `on` the backends that keep it."""

    name: str
    columns: tuple[str, ...]
    where: str | None = None
    on: tuple[str, ...] = BOTH


@dataclass(frozen=True)
class Guard:
    """Rows a trigger refuses to change: `append_only` refuses UPDATE and DELETE (and TRUNCATE on
    PostgreSQL), `no_update` UPDATE only (a merge moves the rows of the small key levels by deleting
    them). `replace`: SQLite also refuses an INSERT OR REPLACE, which deletes without firing DELETE
    triggers (recursive_triggers is off)."""

    kind: str
    replace: bool = False
    refusal: str = "the ledger is append-only"


@dataclass(frozen=True)
class Table:
    """One table of the layout."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    uniques: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[Index, ...] = ()
    guard: Guard | None = None
    # stored in primary-key order (SQLite: WITHOUT ROWID); PostgreSQL has only heaps
    clustered: bool = False
    # a title search over this text column: FTS5 on SQLite, a GIN-indexed tsvector on PostgreSQL
    search: str | None = None
    # rows are changed in place: SQLite's FTS5 index follows updates and deletes too
    search_changes: bool = False
    # PostgreSQL keys a long text column in a unique constraint by its md5 (a B-tree entry holds
    # some 2.7 kB); SQLite's index takes any length
    long_text: str | None = None
    # a cursor: one row (id 1) whose seq starts at 0
    cursor: bool = False
    on: tuple[str, ...] = BOTH


@dataclass(frozen=True)
class View:
    """A view: the union of same-shaped tables."""

    name: str
    columns: tuple[str, ...]
    tables: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """Tables (in creation order) and views."""

    tables: tuple[Table, ...]
    views: tuple[View, ...] = field(default=())

    def table(self, name: str) -> Table:
        """The table called `name`."""
        return next(t for t in self.tables if t.name == name)


_c = Column


def _columns_of(row: type) -> tuple[Column, ...]:
    """A table's columns from the NamedTuple a row is held in: int as BIGINT, `| None` as nullable."""
    columns = []
    for name, hint in get_type_hints(row).items():
        args = get_args(hint) or (hint,)
        kind = BIGINT if int in args else TEXT
        columns.append(Column(name, kind, not_null=type(None) not in args))
    return tuple(columns)


_APPEND_ONLY = Guard("append_only", replace=True)
_CHECK_COLUMNS = (
    _c("work_id"),
    _c("source"),
    _c("observed_us", BIGINT),
    _c("seq", BIGINT),
    _c("recorded_us", BIGINT),
    _c("notices"),
)
_CHECK_KEY = ("work_id", "source", "observed_us", "seq")
_KEY_COLUMNS = (_c("key"), _c("seq", BIGINT))
# the levels of derived/keys.py, smallest last: each merge moves the rows of a level into the next one
_LEVELS = ("", "_deep", "_middle", "_recent")


def _smaller_levels(base: str, columns: tuple[Column, ...], key: tuple[str, ...]) -> tuple[Table, ...]:
    """The deep, middle and recent levels under `base`: their rows are never changed, only moved by a
    merge (which deletes them). Each keeps an index by seq for the walk, which reads a level's rows
    after its point; on SQLite only the deep one, since a commit there writes every page it dirties
    and the small levels' index would be rewritten by every append; PostgreSQL adds each entry past
    those the index holds (an append's and a move's seqs come after them), and without the index a
    walk read a small level whole."""
    return tuple(
        Table(
            f"{base}{level}",
            columns,
            key,
            indexes=(Index(f"{base}{level}_seq", ("seq",), on=BOTH if level == "_deep" else (POSTGRESQL,)),),
            guard=Guard("no_update"),
            clustered=True,
        )
        for level in _LEVELS[1:]
    )


# the resolver's catalogue (ledger/storage/derived/catalogue.py): one row per DOI (its latest
# work.observed) and per arXiv paper (its latest paper.observed), replaced in place as later ones arrive.
# Keyed by its event's seq: on SQLite the seq is the rowid, so the title index gives a search's works in
# seq order and stops at the first `limit` of them (ledger/storage/catalogue_store.py)
_CATALOGUE = (
    Table(
        "catalogue_works",
        _columns_of(Row),
        ("seq",),
        uniques=(("ident",),),
        indexes=(
            Index("catalogue_works_doi_key", ("doi_key",)),
            Index("catalogue_works_arxiv_key", ("arxiv_key",)),
            Index("catalogue_works_volume_page", ("vol_key", "page_key")),
        ),
        search="search_text",
        search_changes=True,
    ),
    # how many rows hold each word a search may look for: which of a text's words are rarest
    Table("catalogue_terms", (_c("term"), _c("docs", BIGINT)), ("term",), clustered=True),
    Table("catalogue_cursor", (_c("id", INT, check="id = 1"), _c("seq", BIGINT)), ("id",), cursor=True),
)


LAYOUT = Layout(
    tables=(
        Table(
            "events",
            (
                _c("seq", BIGINT, check="seq >= 1", check_on=(POSTGRESQL,)),
                _c("event_id"),
                _c("stream"),
                _c("stream_version", BIGINT, check="stream_version >= 1"),
                _c("type"),
                _c("observed_at"),
                _c("observed_us", BIGINT),
                _c("recorded_at"),
                _c("recorded_us", BIGINT),
                # the canonical bytes as UTF-8 text, exactly as hashed (never jsonb)
                _c("data"),
                _c("prev_hash"),
                _c("hash"),
            ),
            ("seq",),
            uniques=(("stream", "stream_version"),),
            indexes=(Index("events_stream_type_time", ("stream", "type", "observed_us")),),
            guard=_APPEND_ONLY,
        ),
        # one row per (work, standing check): that work's notices in the check, so a record reads
        # only its works' rows instead of every check's full work list
        Table(
            "check_works",
            tuple(
                _c("seq", BIGINT, references="events (seq)") if c.name == "seq" else c for c in _CHECK_COLUMNS
            ),
            _CHECK_KEY,
            indexes=(Index("check_works_seq", ("seq",)),),
            guard=_APPEND_ONLY,
            clustered=True,
        ),
        # complete-subtree hashes of the RFC 6962 tree over the events (ledger/tlog/merkle_store.py)
        Table(
            "merkle_nodes",
            (
                _c("level", INT, check="level >= 0"),
                _c("idx", BIGINT, check="idx >= 0"),
                _c("hash", BYTES, check="length(hash) = 32"),
            ),
            ("level", "idx"),
            guard=Guard("append_only", replace=True, refusal="Merkle nodes never change"),
            clustered=True,
        ),
        # how many leaves the nodes cover and the chain hash of the last one
        Table(
            "merkle_fill",
            (_c("id", INT, check="id = 1"), _c("leaves", BIGINT), _c("chain_hash")),
            ("id",),
        ),
        # the last point `ledger verify` walked the chain to, for `ledger verify --resume`
        Table(
            "verified_point",
            (
                _c("id", INT, check="id = 1"),
                _c("seq", BIGINT),
                _c("hash"),
                _c("peaks"),
                _c("verified_at"),
            ),
            ("id",),
        ),
        # the last signed checkpoint; SQLite keeps it in a file beside the database
        Table("signed_checkpoint", (_c("id", INT, check="id = 1"), _c("note")), ("id",), on=(POSTGRESQL,)),
        # one row per full walk of the chain from seq 1 (service/ops/scrub.py)
        Table(
            "scrub_passes",
            (
                _c("id", BIGINT, identity="ALWAYS"),
                _c("kind", check="kind IN ('scrub', 'verify', 'integrity')"),
                _c("started_at"),
                _c("started_us", BIGINT),
                _c("finished_at"),
                _c("finished_us", BIGINT),
                _c("events", BIGINT, check="events >= 0"),
                _c("head_seq", BIGINT, check="head_seq >= 0"),
                _c("ok", BOOL),
                _c("first_bad_seq", BIGINT, not_null=False),
                _c("reason", not_null=False),
            ),
            ("id",),
            indexes=(Index("scrub_passes_finished", ("finished_us",)),),
        ),
        # the merged level only grows (its rows are all key: REPLACE cannot change one)
        Table(
            "event_keys",
            _KEY_COLUMNS,
            ("key", "seq"),
            indexes=(Index("event_keys_seq", ("seq",)),),
            guard=Guard("append_only"),
            clustered=True,
        ),
        *_smaller_levels("event_keys", _KEY_COLUMNS, ("key", "seq")),
        *_smaller_levels("check_works", _CHECK_COLUMNS, _CHECK_KEY),
        # when each observation points at which paper (ledger/storage/derived/spans.py)
        Table(
            "inbound_spans",
            (
                _c("cited"),
                _c("citing"),
                _c("reference_index", BIGINT),
                _c("observation_id"),
                _c("t_from", BIGINT),
                _c("t_to", BIGINT),
                _c("citation_seq", BIGINT),
                _c("resolution_seq", BIGINT),
                _c("k_from", BIGINT),
                _c("k_to", BIGINT),
            ),
            ("cited", "citing", "reference_index", "observation_id", "t_from", "k_from"),
            indexes=(
                Index("inbound_spans_from", ("cited", "k_to", "t_from")),
                # a walk checks the spans of the observations it passed: found by id, not by a scan
                Index("inbound_spans_by_observation", ("observation_id", "t_from", "k_from")),
                # only spans that end (an observation re-resolved away): most never do
                Index("inbound_spans_to", ("cited", "k_to", "t_to"), where=f"t_to < {OPEN}"),
            ),
            clustered=True,
        ),
        Table(
            "inbound_counts",
            (_c("cited"), _c("bucket", BIGINT), _c("starts", BIGINT), _c("ends", BIGINT)),
            ("cited", "bucket"),
            clustered=True,
        ),
        Table("derived_pending", (_c("name"),), ("name",), clustered=True),
        # the screen's index (ledger/storage/derived/screen.py): the references that name a work, and
        # the notices standing checks list for a work
        Table(
            "screen_refs",
            (_c("work_id"), _c("seq", BIGINT), _c("observation_id"), _c("citing")),
            ("work_id", "seq"),
            indexes=(Index("screen_refs_seq", ("seq",)),),
            clustered=True,
        ),
        Table(
            "screen_notices",
            (
                _c("work_id"),
                _c("seq", BIGINT),
                _c("ordinal", BIGINT),
                _c("source"),
                _c("observed_us", BIGINT),
                _c("recorded_us", BIGINT),
                _c("notice"),
            ),
            ("work_id", "seq", "ordinal"),
            indexes=(Index("screen_notices_seq", ("seq",)),),
            clustered=True,
        ),
        # standing alerts (service/alerts): the ledger's own state, not hashed events, changed in place
        Table(
            "watches",
            (
                _c("id"),
                # a collection's watch covers the works its members cite, as the members change
                _c("kind", check="kind IN ('paper', 'works', 'collection')"),
                _c("target"),
                _c("callback_url", not_null=False),
                _c("secret", not_null=False),
                _c("created_at"),
                _c("created_seq", BIGINT),
                _c("removed_at", not_null=False),
                # the sha256 of the token that made the watch; NULL is the operator's
                _c("owner", not_null=False),
                # the secret a rotation replaced, still signing beside the new one until the instant after
                _c("old_secret", not_null=False),
                _c("old_secret_until_us", BIGINT, not_null=False),
            ),
            ("id",),
            indexes=(
                Index("watches_by_owner", ("owner", "id"), where="removed_at IS NULL"),
                # the few secrets still in their grace, found to be dropped when it ends
                Index(
                    "watches_old_secret", ("old_secret_until_us",), where="old_secret_until_us IS NOT NULL"
                ),
            ),
        ),
        Table("watch_keys", (_c("key"), _c("watch_id")), ("key", "watch_id"), clustered=True),
        Table(
            "watch_works",
            (_c("work_id"), _c("watch_id"), _c("observation_id")),
            ("work_id", "watch_id", "observation_id"),
            indexes=(Index("watch_works_by_watch", ("watch_id", "work_id")),),
            clustered=True,
        ),
        Table(
            "alerts",
            (
                _c("n", BIGINT),
                _c("id"),
                _c("watch_id"),
                _c("work_id"),
                _c("notice_key"),
                _c("seq", BIGINT),
                _c("held", INT, check="held IN (0, 1)"),
                _c("body"),
                _c("raised_at"),
                _c("raised_us", BIGINT),
            ),
            ("n",),
            uniques=(("id",), ("watch_id", "work_id", "notice_key")),
            indexes=(Index("alerts_by_watch", ("watch_id", "n")),),
        ),
        Table(
            "outbox",
            (
                _c("alert_n", BIGINT),
                _c("watch_id"),
                _c("state", check="state IN ('pending', 'delivered', 'gave_up')"),
                _c("attempts", INT),
                _c("next_us", BIGINT),
                _c("first_us", BIGINT),
                _c("lease_us", BIGINT),
            ),
            ("alert_n",),
            indexes=(Index("outbox_due", ("state", "next_us")),),
        ),
        Table(
            "deliveries",
            (
                _c("id", BIGINT, identity="BY DEFAULT"),
                _c("alert_n", BIGINT),
                _c("watch_id"),
                _c("attempt", INT),
                _c("at"),
                _c("address", not_null=False),
                _c("status", INT, not_null=False),
                _c("error", not_null=False),
                _c("next_at", not_null=False),
            ),
            ("id",),
            indexes=(Index("deliveries_by_watch", ("watch_id", "id")),),
        ),
        Table("alert_cursor", (_c("id", INT, check="id = 1"), _c("seq", BIGINT)), ("id",), cursor=True),
        # each distinct title of a paper (observation_id '') or of a reference in its citing paper,
        # with the first event that carried it (ledger/storage/derived/search.py)
        Table(
            "search_titles",
            (
                _c("seq", BIGINT),
                _c("arxiv_id"),
                _c("observation_id"),
                _c("reference_index", INT, not_null=False),
                _c("title"),
            ),
            (),
            uniques=(("arxiv_id", "observation_id", "title"),),
            search="title",
            long_text="title",
        ),
        Table("search_cursor", (_c("id", INT, check="id = 1"), _c("seq", BIGINT)), ("id",), cursor=True),
        *_CATALOGUE,
        # one row per acknowledged ingest, written in the transaction of its events (service/sources)
        Table(
            "ingest_receipts",
            (
                _c("id", BIGINT, identity="ALWAYS"),
                _c("source"),
                _c("observed_at"),
                _c("observed_us", BIGINT),
                _c("accepted_at"),
                _c("accepted_us", BIGINT),
                _c("sha256"),
                _c("bytes", BIGINT, check="bytes >= 0"),
                _c("rows_read", BIGINT, check="rows_read >= 0"),
                _c("rows_matched", BIGINT, check="rows_matched >= 0"),
                _c("appended", BIGINT, check="appended >= 0"),
                _c("seq", BIGINT, not_null=False),
            ),
            ("id",),
            indexes=(Index("ingest_receipts_source", ("source", "id")),),
        ),
        # how far `ledger import` has committed each file (service/intake), written in each batch's
        # transaction: a stopped import resumes after its last committed batch
        Table(
            "import_progress",
            (
                _c("file_key"),
                _c("name"),
                _c("bytes_done", BIGINT, check="bytes_done >= 0"),
                _c("lines_done", BIGINT, check="lines_done >= 0"),
                _c("prefix_sha256"),
                _c("appended", BIGINT, check="appended >= 0"),
                _c("duplicates", BIGINT, check="duplicates >= 0"),
                _c("head_seq", BIGINT, check="head_seq >= 0"),
                _c("updated_at"),
                _c("updated_us", BIGINT),
            ),
            ("file_key",),
        ),
        # background resolve jobs (ledger/storage/state/jobs.py): every server process answers for each
        Table(
            "resolve_jobs",
            (
                _c("id"),
                _c("state", check="state IN ('running', 'done', 'failed')"),
                _c("started_at"),
                _c("started_us", BIGINT),
                _c("finished_at", not_null=False),
                _c("beat_us", BIGINT),
                _c("summary", not_null=False),
                _c("error", not_null=False),
                # whose job (a token's sha256; '' for a job of an older layout) and what it does
                _c("owner", not_null=False),
                _c("kind", not_null=False),
            ),
            ("id",),
            indexes=(Index("resolve_jobs_by_owner", ("owner", "started_us")),),
        ),
        # who made each write (ledger/storage/writers.py): the seqs one acknowledged batch appended and
        # its writer, written in that batch's transaction; kept outside the chain, not proven by it
        Table(
            "event_writers",
            (
                _c("first_seq", BIGINT, check="first_seq >= 1"),
                _c("last_seq", BIGINT, check="last_seq >= 1"),
                _c("writer"),
                _c("via"),
            ),
            ("first_seq",),
            guard=Guard("append_only", replace=True, refusal="the writers of writes never change"),
            clustered=True,
        ),
        # the resolves running now, one row a slot, each leased by the process running it and beaten;
        # a lease not beaten for a while is taken as its process gone (service/resolver/bounds.py)
        Table(
            "resolve_slots",
            (
                _c("slot", INT, check="slot >= 0"),
                _c("holder"),
                _c("owner"),
                _c("beat_us", BIGINT),
                _c("examined", BIGINT, check="examined >= 0"),
            ),
            ("slot",),
        ),
        # each token's budget of references examined, as the instant its spending is paid off by
        # (a generic cell rate: the budget refills at its rate up to one minute's worth)
        Table("resolve_budget", (_c("owner"), _c("paid_us", BIGINT)), ("owner",)),
        # each projection's position: the last seq whose events its rows hold (ledger/storage/projector.py)
        Table("projections", (_c("name"), _c("seq", BIGINT)), ("name",)),
        # who runs the projector for the server's workers, and until when: taken by compare-and-set
        Table(
            "projector_lease",
            (_c("id", INT, check="id = 1"), _c("holder"), _c("expires_us", BIGINT)),
            ("id",),
        ),
    ),
    views=(
        View("event_keys_all", ("key", "seq"), tuple(f"event_keys{lv}" for lv in _LEVELS)),
        View(
            "check_works_all",
            tuple(c.name for c in _CHECK_COLUMNS),
            tuple(f"check_works{lv}" for lv in _LEVELS),
        ),
    ),
)


def create_statements(dialect: Dialect, layout: Layout = LAYOUT) -> list[str]:
    """The statements that make `layout` in an empty database of `dialect`'s backend."""
    name = dialect.name
    out: list[str] = []
    if name == POSTGRESQL:
        out.append(_PG_REFUSE)
    tables = [t for t in layout.tables if name in t.on]
    for table in tables:
        out.append(_create_table(table, name))
        out.extend(_indexes(table, name))
    for table in tables:
        out.extend(_table_extras(table, name))
    out.extend(view_statement(view) for view in layout.views)
    return out


def table_statements(table: Table, dialect: str) -> list[str]:
    """The statements that make one table of the layout, with its indexes, guards and search index."""
    return [_create_table(table, dialect), *_indexes(table, dialect), *_table_extras(table, dialect)]


def column_definition(column: Column, table: Table, dialect: str) -> str:
    """How `dialect` spells one column of `table` in CREATE TABLE or ADD COLUMN."""
    return _column(column, table, dialect)


def view_statement(view: View) -> str:
    """The CREATE VIEW of a view."""
    cols = ", ".join(view.columns)
    union = " UNION ALL ".join(f"SELECT {cols} FROM {t}" for t in view.tables)
    return f"CREATE VIEW {view.name} AS {union}"


def _table_extras(table: Table, dialect: str) -> list[str]:
    out = _guards(table, dialect)
    if table.search is not None and dialect == SQLITE:
        out.extend(_sqlite_search(table))
    if table.cursor:
        out.append(f"INSERT INTO {table.name} (id, seq) VALUES (1, 0)")
    return out


def _column(column: Column, table: Table, dialect: str) -> str:
    parts = [column.name, _SPELLING[dialect][column.type]]
    if dialect == POSTGRESQL and column.identity is not None:
        parts.append(f"GENERATED {column.identity} AS IDENTITY")
    if table.primary_key == (column.name,):
        parts.append("PRIMARY KEY")
    elif column.not_null:
        parts.append("NOT NULL")
    if column.check is not None and dialect in column.check_on:
        parts.append(f"CHECK ({column.check})")
    elif column.type == BOOL and dialect == SQLITE:
        parts.append(f"CHECK ({column.name} IN (0, 1))")
    if column.references is not None:
        parts.append(f"REFERENCES {column.references}")
    return " ".join(parts)


def _create_table(table: Table, dialect: str) -> str:
    lines = [_column(c, table, dialect) for c in table.columns]
    if table.search is not None and dialect == POSTGRESQL:
        # 'simple': no stemming, as SQLite's unicode61
        lines.append(f"words tsvector GENERATED ALWAYS AS (to_tsvector('simple', {table.search})) STORED")
    for unique in table.uniques:
        if dialect == SQLITE or table.long_text not in unique:
            lines.append(f"UNIQUE ({', '.join(unique)})")
    if len(table.primary_key) > 1:
        lines.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    tail = " WITHOUT ROWID" if table.clustered and dialect == SQLITE else ""
    body = ",\n    ".join(lines)
    return f"CREATE TABLE {table.name} (\n    {body}\n){tail}"


def _indexes(table: Table, dialect: str) -> list[str]:
    out = []
    if dialect == POSTGRESQL:
        for unique in table.uniques:
            if table.long_text in unique:
                cols = ", ".join(f"md5({c})" if c == table.long_text else c for c in unique)
                out.append(f"CREATE UNIQUE INDEX {table.name}_key ON {table.name} ({cols})")
        if table.search is not None:
            out.append(f"CREATE INDEX {table.name}_words ON {table.name} USING GIN (words)")
    for index in table.indexes:
        if dialect not in index.on:
            continue
        where = f" WHERE {index.where}" if index.where else ""
        out.append(f"CREATE INDEX {index.name} ON {table.name} ({', '.join(index.columns)}){where}")
    return out


def _guards(table: Table, dialect: str) -> list[str]:
    guard, t = table.guard, table.name
    if guard is None:
        return []
    if dialect == POSTGRESQL:
        return _pg_guards(t, guard)
    ops = ["UPDATE", "DELETE"] if guard.kind == "append_only" else ["UPDATE"]
    out = [
        f"CREATE TRIGGER {t}_no_{op.lower()} BEFORE {op} ON {t}\n"
        f"BEGIN SELECT RAISE(ABORT, '{guard.refusal}: {op} on {t} refused'); END"
        for op in ops
    ]
    if guard.replace:
        keys = [k for k in (table.primary_key, *table.uniques) if k]
        conds = [" AND ".join(f"{c} = NEW.{c}" for c in key) for key in keys]
        when = (
            conds[0] if len(conds) == 1 else " OR ".join(c if " AND " not in c else f"({c})" for c in conds)
        )
        out.append(
            f"CREATE TRIGGER {t}_no_replace BEFORE INSERT ON {t}\n"
            f"WHEN EXISTS (SELECT 1 FROM {t} WHERE {when})\n"
            f"BEGIN SELECT RAISE(ABORT, '{guard.refusal}: REPLACE on {t} refused'); END"
        )
    return out


# PostgreSQL's refusal: one function for every guarded table; the triggers stay on for sessions in
# replica mode too (ENABLE ALWAYS: a superuser cannot skip them that way)
_PG_REFUSE = """CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END $$"""


def _pg_guards(t: str, guard: Guard) -> list[str]:
    run = "EXECUTE FUNCTION ledger_refuse_change()"
    if guard.kind != "append_only":
        return [
            f"CREATE TRIGGER {t}_no_update BEFORE UPDATE ON {t} FOR EACH ROW {run}",
            f"ALTER TABLE {t} ENABLE ALWAYS TRIGGER {t}_no_update",
        ]
    return [
        f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} FOR EACH ROW {run}",
        f"CREATE TRIGGER {t}_no_truncate BEFORE TRUNCATE ON {t} FOR EACH STATEMENT {run}",
        f"ALTER TABLE {t} ENABLE ALWAYS TRIGGER {t}_append_only",
        f"ALTER TABLE {t} ENABLE ALWAYS TRIGGER {t}_no_truncate",
        f"REVOKE UPDATE, DELETE, TRUNCATE ON {t} FROM PUBLIC",
    ]


def _sqlite_search(table: Table) -> list[str]:
    """The FTS5 index in the shape sqlite-utils' enable_fts(create_triggers=True) gives (so
    `sqlite-utils search` and Datasette find it)."""
    t, col = table.name, table.search
    out = [
        f"CREATE VIRTUAL TABLE {t}_fts USING FTS5 (\n"
        f"    {col},\n    tokenize='unicode61 remove_diacritics 0',\n    content=\"{t}\"\n)",
        f"CREATE TRIGGER {t}_ai AFTER INSERT ON {t} BEGIN\n"
        f"    INSERT INTO {t}_fts (rowid, {col}) VALUES (new.rowid, new.{col});\nEND",
    ]
    if table.search_changes:
        delete = f"    INSERT INTO {t}_fts ({t}_fts, rowid, {col}) VALUES ('delete', old.rowid, old.{col});\n"
        out += [
            f"CREATE TRIGGER {t}_ad AFTER DELETE ON {t} BEGIN\n{delete}END",
            f"CREATE TRIGGER {t}_au AFTER UPDATE ON {t} BEGIN\n{delete}"
            f"    INSERT INTO {t}_fts (rowid, {col}) VALUES (new.rowid, new.{col});\nEND",
        ]
    return out

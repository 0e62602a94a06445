"""PostgreSQL plans at 4M events: no sequential scan in any statement the append, the projector or the
import's walk runs.

    .venv/bin/python -m bench.pg_plans --events 4000000 [--dir /tmp/pg-plans] [--rebuild]

1. The statements are found by running the code, not listed: a real `import_file` of a small synthetic
   file (bench/synth.py, `--seed-lines`) into an empty PostgreSQL ledger, with its walks in this process
   (every `WALK_EVERY` events and at the end), then every projection brought to the head
   (`Ledger.project`). The store's `query` and `query_many` are wrapped for the run: each statement is
   kept with the parameters it ran with (a `query_many`'s first row), tagged by who ran it (the
   append's transaction, the projector, the walk, other) from the call stack.
2. The big ledger is that small one tiled (`CREATE DATABASE ... TEMPLATE`, then each of its tables'
   rows copied `--events / seed events` times by one INSERT ... SELECT each, every id given the tile's
   suffix, seqs and instants shifted by the tile): the rows the product wrote, in the product's schema,
   at the real ratios of keys, spans and screen rows per event, up to `--events` events; the keys'
   levels as at their largest (each small level full, as just before the append that moves it); Merkle
   nodes for every leaf; then ANALYZE, so the planner sees the real sizes. Built by SQL because the
   product's own import of 4M lines takes some twenty minutes of two cores; the chain's hashes are
   not a chain (nothing here verifies them). It is kept in `--dir` for later runs.
3. Each distinct statement is planned on the big ledger with the parameters it ran with, both ways
   PostgreSQL may plan it when run: the plan for those values (psycopg sends a statement bound to a long
   list unprepared: store.PLAN_FOR_LIST) and, for a statement psycopg prepares after five runs, the
   generic plan too (plan_cache_mode=force_generic_plan), which PostgreSQL may pick after five runs.

Every plan with a `Seq Scan` on a table of more than `--rows` rows is printed and counted; a statement
with no WHERE (a level's move, a DELETE of a whole level) reads every row by intent and is listed
apart. The exit status is 1 if any other is found. A plan that reads a large table through an index
with no condition on it (the whole index in its order, e.g. a merge join with it) is printed and
counted apart, as an INDEX WALK: a LIMIT above it may stop it early, so it is read, not failed.
Output: stdout (bench/pg_plans.txt keeps a run).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED, BIG = "plans_seed", "plans_big"
HEAD = "SELECT max(seq) FROM events"
_SEQ_SCAN = re.compile(r"Seq Scan on (\w+)")
_INDEX_SCAN = re.compile(r"Index (?:Only )?Scan (?:Backward )?using \S+ on (\w+)")
# the statements that are not plans of their own
# a placeholder a seq is bound to: after `seq >`, `seq <=` ..., or first in a row compared from (seq, ...)
_SEQ_BEFORE = re.compile(r"(?:\bseq\s*(?:>|<|>=|<=|=)|\(seq, [\w, ]+\)\s*>\s*\()\s*$")
_NOT_PLANNED = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|LOCK|ANALYZE|SET|SHOW|CREATE|DROP|COPY)\b", re.I)


# -- the cluster, kept in a directory across runs --------------------------------------------------------


def cluster(work: Path) -> str:
    """The admin URL of the server whose files are in `work` (started, and made the first time)."""
    from tests.pg_harness import _bin_dir, _free_port

    bindir = _bin_dir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries (apt-get install postgresql)")
    data = work / "data"
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if not data.exists():
        work.mkdir(parents=True, exist_ok=True)
        if run_as:
            subprocess.run(["chown", "postgres:postgres", str(work)], check=True)
        init = [
            f"{bindir}/initdb",
            "-D",
            str(data),
            "-E",
            "UTF8",
            "--locale=C",
            "-U",
            "ledger",
            "--auth=trust",
        ]
        subprocess.run(run_as + init, check=True, capture_output=True)
    port_file = work / "port"
    running = subprocess.run(run_as + [f"{bindir}/pg_ctl", "-D", str(data), "status"], capture_output=True)
    if running.returncode != 0 or not port_file.exists():
        port = _free_port()
        # the harness's settings (fsync off: plans do not depend on it), memory as Debian's defaults
        opts = f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
        opts += " -c full_page_writes=off -c max_wal_size=4GB"
        opts += " -c shared_preload_libraries=pg_stat_statements"  # bench/pg_cost.py reads it
        ctl = [f"{bindir}/pg_ctl", "-D", str(data), "-o", opts, "-l", str(work / "log"), "-w", "start"]
        subprocess.run(run_as + ctl, check=True, capture_output=True)
        port_file.write_text(str(port))
    return f"postgresql://ledger@127.0.0.1:{port_file.read_text().strip()}"


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _exists(admin: str, name: str) -> bool:
    with _connect(admin + "/postgres") as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def _drop(admin: str, name: str) -> None:
    with _connect(admin + "/postgres") as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- 1. the statements, found by running the code --------------------------------------------------------


@dataclass
class Seen:
    """One statement text as run: who ran it, how often, and the parameters of its largest run."""

    sql: str
    who: set[str] = field(default_factory=set)
    runs: int = 0
    params: Sequence[Any] = ()
    size: int = -1
    many: bool = False


def _size(params: Sequence[Any]) -> int:
    return sum(len(p) if isinstance(p, list) else 1 for p in params)


def _who() -> str:
    """Who runs the statement being sent: the nearest of the walk, the projector and the append. A walk
    from seq 1 (an import's first: `verify_store` without resume) is a "full walk", which reads every
    row by intent."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.endswith("storage/verify.py"):
            while frame.f_back is not None and frame.f_back.f_code.co_filename.endswith("storage/verify.py"):
                frame = frame.f_back
            return "walk" if frame.f_locals.get("resume") else "full walk"
        if name.endswith("storage/projector.py") or name.endswith("catalogue_store.py"):
            return "projector"
        if frame.f_code.co_name in ("index_titles",):
            return "projector"
        if name.endswith("storage/append.py") or frame.f_code.co_name == "insert":
            return "append"
        frame = frame.f_back  # type: ignore[assignment]
    return "other"


@contextmanager
def recording() -> Iterator[dict[str, Seen]]:
    """Within the block, every statement a SqlStore runs is kept (by its text as sent)."""
    from ledger.storage.sql_store import SqlStore

    seen: dict[str, Seen] = {}
    query, query_many = SqlStore.query, SqlStore.query_many

    def keep(store: Any, sql: str, params: Sequence[Any], many: bool) -> None:
        text = store.dialect.sql(sql)
        s = seen.setdefault(text, Seen(text, many=many))
        s.who.add(_who())
        s.runs += 1
        if _size(params) >= s.size:  # the largest run, the last of equals
            s.params, s.size = list(params), _size(params)

    def q(self: Any, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        keep(self, sql, params, False)
        return query(self, conn, sql, params)

    def qm(self: Any, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            keep(self, sql, rows[0], True)
        return query_many(self, conn, sql, rows)

    SqlStore.query, SqlStore.query_many = q, qm  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        SqlStore.query, SqlStore.query_many = query, query_many  # type: ignore[method-assign]


def run_seed(admin: str, work: Path, lines: int) -> dict[str, Seen]:
    """A real import of `lines` synthetic lines into a new ledger (walks here), then every projection
    brought to the head; the statements they ran."""
    import service.intake.load as load
    from bench.intake import make_file
    from service.ledger import Ledger

    path = work / f"seed-{lines}.ndjson"
    if not path.exists():
        make_file(path, lines)
    _drop(admin, SEED)
    with _connect(admin + "/postgres") as conn:
        conn.execute(f'CREATE DATABASE "{SEED}" TEMPLATE template0 ENCODING UTF8')
    load.BESIDE = False  # the walks in this process, where their statements are seen
    ledger = Ledger(f"{admin}/{SEED}", raise_alerts=False)
    with recording() as seen:
        done = load.import_file(ledger, path)
        ledger.ops.project()
    ledger.store.close()
    print(f"seed: {done.appended:,} events appended from {lines:,} lines, {len(seen)} distinct statements")
    return seen


# -- 2. the big ledger: the seed's rows tiled --------------------------------------------------------------

# each table's columns as a tile copies them: `{k}` is the tile, `{S}` the seed's events, `{D}` and `{R}`
# the span of its observed and recorded instants, `{B}` that span in buckets
_ID = "{c} || '~{k}'"
_TILED: dict[str, dict[str, str]] = {
    "events": {
        "seq": "seq + {k} * {S}",
        "event_id": _ID,
        "stream": "CASE WHEN stream LIKE 'paper:%' THEN stream || '~{k}' ELSE stream END",
        "stream_version": "CASE WHEN stream LIKE 'paper:%' THEN stream_version"
        " ELSE stream_version + {k} * {V} END",
        "type": "type",
        "observed_at": "observed_at",
        "observed_us": "observed_us + {k} * {D}",
        "recorded_at": "recorded_at",
        "recorded_us": "recorded_us + {k} * {R}",
        "data": "regexp_replace(data, "
        + '\'"(observation_id|citing_arxiv_id|cited_arxiv_id|work_id)":"([^"]*)"\', '
        + "'\"\\1\":\"\\2~{k}\"', 'g')",
        "prev_hash": "prev_hash",
        "hash": "hash",
    },
    "check_works": {
        "work_id": _ID,
        "source": "source",
        "observed_us": "observed_us + {k} * {D}",
        "seq": "seq + {k} * {S}",
        "recorded_us": "recorded_us + {k} * {R}",
        "notices": "notices",
    },
    "event_keys": {
        "key": "CASE WHEN key LIKE 'w:%' THEN key ELSE key || '~{k}' END",
        "seq": "seq + {k} * {S}",
    },
    "inbound_spans": {
        "cited": _ID,
        "citing": _ID,
        "reference_index": "reference_index",
        "observation_id": _ID,
        "t_from": "t_from + {k} * {D}",
        "t_to": "CASE WHEN t_to = {OPEN} THEN t_to ELSE t_to + {k} * {D} END",
        "citation_seq": "citation_seq + {k} * {S}",
        "resolution_seq": "resolution_seq + {k} * {S}",
        "k_from": "k_from + {k} * {R}",
        "k_to": "CASE WHEN k_to = {OPEN} THEN k_to ELSE k_to + {k} * {R} END",
    },
    "inbound_counts": {"cited": _ID, "bucket": "bucket + {k} * {B}", "starts": "starts", "ends": "ends"},
    "screen_refs": {"work_id": _ID, "seq": "seq + {k} * {S}", "observation_id": _ID, "citing": _ID},
    "screen_notices": {
        "work_id": _ID,
        "seq": "seq + {k} * {S}",
        "ordinal": "ordinal",
        "source": "source",
        "observed_us": "observed_us + {k} * {D}",
        "recorded_us": "recorded_us + {k} * {R}",
        "notice": "notice",
    },
    "search_titles": {
        "seq": "seq + {k} * {S}",
        "arxiv_id": _ID,
        "observation_id": "CASE WHEN observation_id = '' THEN '' ELSE observation_id || '~{k}' END",
        "reference_index": "reference_index",
        "title": "title",
    },
    "event_writers": {
        "first_seq": "first_seq + {k} * {S}",
        "last_seq": "last_seq + {k} * {S}",
        "writer": "writer",
        "via": "via",
    },  # fmt: skip
}
# the catalogue's rows: every column as it is but these
_CATALOGUE = {"ident": _ID, "seq": "seq + {k} * {S}", "first_seq": "first_seq + {k} * {S}",
              "doi_key": _ID, "arxiv_key": _ID, "doi": _ID, "arxiv_id": _ID}  # fmt: skip


def _levels(head: int) -> list[tuple[str, int, int]]:
    """(level, first seq, last seq) of the keys' levels with each small one as full as it gets."""
    from ledger.storage.derived.keys import MOVES

    last = head - 1  # the largest state: the head just before the append that moves them all
    bounds = [last // m * m for m in reversed(MOVES)]  # merged up to here, deep, middle
    out, low = [], 0
    for level, high in zip(("merged", "deep", "middle"), bounds, strict=True):
        out.append((level, low + 1, high))
        low = high
    out.append(("recent", low + 1, head))
    return out


def build_big(admin: str, events: int) -> None:
    """The big ledger: the seed's rows tiled up to `events` events, then ANALYZE (a build cut short
    resumes: the tiles once the events are all there, the rest again)."""
    started = time.perf_counter()
    if not _exists(admin, BIG):
        with _connect(admin + "/postgres") as conn:
            conn.execute(f'CREATE DATABASE "{BIG}" TEMPLATE "{SEED}"')
    with _connect(f"{admin}/{SEED}") as seed, _connect(f"{admin}/{BIG}") as conn:
        conn.execute("SET session_replication_role = replica")  # no foreign-key checks while tiling
        conn.execute("SET maintenance_work_mem = '256MB'")
        conn.execute("SET work_mem = '256MB'")
        fmt = _spans(seed)
        tiles = -(-events // fmt["S"])
        if conn.execute("SELECT max(seq) FROM events").fetchone()[0] < events:
            _tile(conn, events, tiles, fmt, started)
        _fill_levels(seed, conn, events, tiles, fmt)
        _fill_rest(conn, events, tiles)
    print(f"big: {events:,} events built in {time.perf_counter() - started:.0f} s", flush=True)


def _spans(seed: Any) -> dict[str, int]:
    """The seed's events, the spans of its instants and its non-paper streams' versions (see _TILED)."""
    from ledger.storage.derived.spans import BUCKET_US, OPEN

    s, d0, d1, r0, r1 = seed.execute(
        "SELECT max(seq), min(observed_us), max(observed_us), min(recorded_us), max(recorded_us) FROM events"
    ).fetchone()
    v = seed.execute("SELECT max(stream_version) FROM events WHERE stream NOT LIKE 'paper:%'").fetchone()[0]
    fmt = {"S": s, "D": d1 - d0 + 1, "R": r1 - r0 + 1, "V": v or 0, "OPEN": OPEN}
    fmt["B"] = -(-fmt["D"] // BUCKET_US) + 1
    return fmt


def _tile(conn: Any, events: int, tiles: int, fmt: dict[str, int], started: float) -> None:
    """Each table's seed rows (tile 0) copied into tiles 1.. (the keys' levels apart: _fill_levels)."""
    s = fmt["S"]
    catalogue = conn.execute("SELECT count(*) FROM catalogue_works").fetchone()[0]
    cat_cols = [r[0] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'catalogue_works' "
        "AND is_generated = 'NEVER' ORDER BY ordinal_position")]  # fmt: skip
    for k in range(1, tiles):
        for table, columns in _TILED.items():
            if table in _LEVELED:
                continue
            sel = ", ".join(e.format(c=c, k=k, **fmt) for c, e in columns.items())
            by = next((c for c in ("seq", "first_seq", "citation_seq") if c in columns), None)
            # the seed's rows only (tile 0): a row of no seq by its id, which no tile has changed
            where = f"{by} <= {s} AND {by} <= {events - k * s}" if by else "cited NOT LIKE '%~%'"
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT {sel} FROM {table} WHERE {where}"
            )
        if catalogue:
            sel = ", ".join(_CATALOGUE.get(c, "{c}").format(c=c, k=k, **fmt) for c in cat_cols)
            conn.execute(
                f"INSERT INTO catalogue_works ({', '.join(cat_cols)}) SELECT {sel} FROM catalogue_works "
                f"WHERE seq <= {s} AND seq <= {events - k * s}"
            )
        print(f"  tile {k}/{tiles - 1}: {time.perf_counter() - started:.0f} s", flush=True)
    conn.execute(f"UPDATE catalogue_terms SET docs = docs * {tiles}")


_LEVELED = {"event_keys": "key, seq", "check_works": "work_id, source, observed_us, seq"}


def _fill_levels(seed: Any, conn: Any, events: int, tiles: int, fmt: dict[str, int]) -> None:
    """Every level of the keys and checks emptied, then the seed's rows of all levels, tiled, put back
    by seq into the levels they are at when each small level is full."""
    from ledger.storage.derived.keys import LEVELS, level_table

    s = fmt["S"]
    for table, key in _LEVELED.items():
        cols = _TILED[table]
        names = ", ".join(cols)
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        for lv in LEVELS:
            conn.execute(f"TRUNCATE {level_table(table, lv)}")
        conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
        conn.execute(f"CREATE TEMP TABLE all_{table} AS SELECT {names} FROM {table} WITH NO DATA")
        with conn.cursor().copy(f"COPY all_{table} ({names}) FROM STDIN") as copy:
            for row in seed.execute(f"SELECT {names} FROM {table}_all"):
                copy.write_row(row)
        for lv, low, high in _levels(events):
            tiled = " UNION ALL ".join(
                f"SELECT {', '.join(e.format(c=c, k=k, **fmt) + ' AS ' + c for c, e in cols.items())} "
                f"FROM all_{table} WHERE seq + {k} * {s} BETWEEN {low} AND {high}"
                for k in range(tiles)
            )
            conn.execute(
                f"INSERT INTO {level_table(table, lv)} ({names}) SELECT * FROM ({tiled}) AS t ORDER BY {key}"
            )
        conn.execute(f"DROP TABLE all_{table}")


def _fill_rest(conn: Any, events: int, tiles: int) -> None:
    """The Merkle tree's complete subtrees over every leaf, the positions at the head, the verified
    point a walk behind it; then every table's statistics."""
    conn.execute("ALTER TABLE merkle_nodes DISABLE TRIGGER USER")
    conn.execute("TRUNCATE merkle_nodes")
    conn.execute("ALTER TABLE merkle_nodes ENABLE TRIGGER USER")
    conn.execute(
        "INSERT INTO merkle_nodes (level, idx, hash) SELECT l, i, decode(md5(l || ':' || i) || "
        "md5(i || ':' || l), 'hex') FROM generate_series(0, 22) AS l, "
        f"LATERAL generate_series(0, ({events} >> l) - 1) AS i"
    )
    conn.execute(
        "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, %s, 'x') "
        "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves",
        (events,),
    )
    conn.execute("UPDATE projections SET seq = %s", (events,))
    for cursor in ("search_cursor", "catalogue_cursor"):
        conn.execute(f"UPDATE {cursor} SET seq = %s WHERE seq > 0", (events,))
    conn.execute("UPDATE verified_point SET seq = %s", (events - 20_000,))
    conn.execute("VACUUM ANALYZE")


# -- 3. the plans --------------------------------------------------------------------------------------


def _pg_type(value: Any) -> str:
    if value is None:
        return "unknown"  # PostgreSQL infers it from where it is used
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, bytes):
        return "bytea"
    if isinstance(value, list):
        return _pg_type(value[0]) + "[]" if value else "text[]"
    return "text"


def modes(params: Sequence[Any]) -> list[str]:
    """How PostgreSQL may plan a statement the store runs with `params`: for those values, and for a
    statement psycopg prepares (after five runs) also the generic plan, which it may keep using."""
    from ledger.storage.postgresql.store import PLAN_FOR_LIST

    if not params or any(isinstance(p, list) and len(p) >= PLAN_FOR_LIST for p in params):
        return ["force_custom_plan"]
    return ["force_custom_plan", "force_generic_plan"]


def plan_of(conn: Any, sql: str, params: Sequence[Any], mode: str) -> str:
    """The plan of `sql` (%s placeholders) with `params` under plan_cache_mode `mode`, as EXPLAIN
    prints it; in a transaction rolled back (`conn` in autocommit)."""
    import psycopg

    texts = sql.split("%s")
    body = "".join(t + (f"${i + 1}" if i < len(texts) - 1 else "") for i, t in enumerate(texts))
    types = ", ".join(_pg_type(p) for p in params)
    # never prepared by psycopg itself (it prepares a statement run five times)
    conn.execute("BEGIN", prepare=False)
    try:
        prepare = f"PREPARE plan_of ({types}) AS {body}" if types else f"PREPARE plan_of AS {body}"
        conn.execute(prepare, prepare=False)
        try:
            conn.execute(f"SET LOCAL plan_cache_mode = {mode}", prepare=False)
            args = f"({', '.join(['%s'] * len(params))})" if params else ""
            rows = psycopg.ClientCursor(conn).execute(f"EXPLAIN EXECUTE plan_of{args}", params).fetchall()
        finally:
            conn.execute("ROLLBACK", prepare=False)
            # PREPARE may or may not outlive the transaction rolled back: gone either way
            left = "SELECT 1 FROM pg_prepared_statements WHERE name = 'plan_of'"
            if conn.execute(left, prepare=False).fetchone() is not None:
                conn.execute("DEALLOCATE plan_of", prepare=False)
    except BaseException:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK", prepare=False)
        raise
    # a list bound inline is printed whole: its first characters are enough
    return "\n".join(r[0] if len(r[0]) <= 240 else r[0][:240] + " ..." for r in rows)


def seq_scans(plan: str, sizes: dict[str, int], rows: int) -> list[str]:
    """The tables of more than `rows` rows (`sizes`) that `plan` reads by a sequential scan."""
    return [t for t in _SEQ_SCAN.findall(plan) if sizes.get(t, 0) > rows]


def index_walks(plan: str, sizes: dict[str, int], rows: int) -> list[str]:
    """The tables of more than `rows` rows that `plan` reads through an index with no condition on
    it: the whole index in its order, which is not a `Seq Scan` (a LIMIT above may stop it early)."""
    lines = plan.splitlines()
    found = []
    for n, line in enumerate(lines):
        m = _INDEX_SCAN.search(line)
        if m is None or sizes.get(m.group(1), 0) <= rows:
            continue
        depth = len(line) - len(line.lstrip(" ->"))
        detail = []
        for more in lines[n + 1 :]:
            if more.lstrip().startswith("->") or len(more) - len(more.lstrip(" ")) <= depth:
                break
            detail.append(more)
        if not any("Index Cond" in d for d in detail):
            found.append(m.group(1))
    return found


def table_sizes(conn: Any) -> dict[str, int]:
    """Rows of each table, as the planner counts them."""
    return dict(conn.execute(
        "SELECT relname, reltuples::bigint FROM pg_class WHERE relkind = 'r' "
        "AND relnamespace = 'public'::regnamespace").fetchall())  # fmt: skip


def at_head(sql: str, params: Sequence[Any], shift: int) -> list[Any]:
    """The parameters as the statement would have them on the big ledger: each seq moved by `shift`
    (the big head less the small one), so a walk from the last verified point reads the last events
    of the big ledger as it read the last ones of the small ledger."""
    texts = sql.split("%s")
    return [
        p + shift
        if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 2**62 and _SEQ_BEFORE.search(before)
        else p
        for p, before in zip(params, texts, strict=False)
    ]


def plans(admin: str, seen: dict[str, Seen], rows: int) -> tuple[list[str], int, int]:
    """The report's lines, how many plans scan a large table against their intent, and by intent."""
    import psycopg

    out: list[str] = []
    faults = whole = small = walked = 0
    from ledger.storage.postgresql import store

    store.PostgresStore(f"{admin}/{BIG}").close()  # brought to this code's layout by its own upgrade
    with _connect(f"{admin}/{BIG}") as conn:
        for sql in getattr(store, "SESSION", ()):  # the settings of the store's own sessions
            conn.execute(sql)
        sizes = table_sizes(conn)
        with _connect(f"{admin}/{SEED}") as seed:
            shift = conn.execute(HEAD).fetchone()[0] - seed.execute(HEAD).fetchone()[0]
        out.append("tables of the big ledger (rows, as the planner counts them):")
        out += [f"  {t:<24} {n:>12,}" for t, n in sorted(sizes.items(), key=lambda x: -x[1]) if n > 0]
        out.append("")
        for s in sorted(seen.values(), key=lambda s: (sorted(s.who), s.sql)):
            if _NOT_PLANNED.match(s.sql):
                continue
            params = at_head(s.sql, s.params, shift)
            for mode in modes(params):
                head = f"[{'/'.join(sorted(s.who))}] {s.runs} run(s), {mode.split('_')[1]} plan: {s.sql}"
                try:
                    plan = plan_of(conn, s.sql, params, mode)
                except psycopg.Error as e:
                    out += ["", f"NOT PLANNED ({e}) {head}"]
                    continue
                scans = seq_scans(plan, sizes, rows)
                # no WHERE: the statement reads (moves, deletes, counts) the whole table by intent
                by_intent = " WHERE " not in s.sql.upper() or s.who == {"full walk"}
                if scans and not by_intent:
                    faults += 1
                    small += all(t.endswith(("_recent", "_middle")) for t in scans)
                    out += ["", "SEQ SCAN " + head, _params(params), plan, ""]
                elif scans:
                    whole += 1
                    out += ["", "whole table by intent " + head, plan, ""]
                elif walks := index_walks(plan, sizes, rows):
                    walked += 1
                    out += ["", f"INDEX WALK ({', '.join(walks)}) " + head, _params(params), plan, ""]
                else:
                    out.append(f"ok {head[:240]}")
    if small:
        out.append(
            f"\n{small} of them scan only the small key levels (_recent, _middle), which hold at most the "
            "keys of the last 50,000 events whatever the ledger's size"
        )
    out.append(
        f"\n{walked} plan(s) read a table of over {rows:,} rows through an index with no condition on it"
    )
    return out, faults, whole


def _params(params: Sequence[Any]) -> str:
    shown = [f"list of {len(p)}" if isinstance(p, list) else repr(p)[:60] for p in params]
    return f"  parameters: {', '.join(shown)}"


def main() -> None:
    """Build (or reuse) the big ledger, run the small import to see the statements, plan each."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=4_000_000)
    ap.add_argument("--seed-lines", type=int, default=40_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pg-plans"))
    ap.add_argument("--rebuild", action="store_true", help="build the big ledger again")
    ap.add_argument("--rows", type=int, default=5_000, help="a Seq Scan on a table larger than this is one")
    args = ap.parse_args()
    admin = cluster(args.dir)
    built = args.dir / f"built-{args.events}"
    seen = run_seed(admin, args.dir, args.seed_lines)
    if args.rebuild or not built.exists() or not _exists(admin, BIG):
        build_big(admin, args.events)
        built.write_text("")
    lines, faults, whole = plans(admin, seen, args.rows)
    print("\n".join(lines))
    print(f"\n{faults} plan(s) with a sequential scan of a table over {args.rows:,} rows; {whole} by intent")
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()

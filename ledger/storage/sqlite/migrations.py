"""Schema migrations, applied in order and recorded in PRAGMA user_version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ledger.storage.derived.backfill import FILL_TABLE, fill_work_keys
from ledger.storage.sql import SQLITE

# Each step is applied once, in its own transaction; never edit a released step, add one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        event_id TEXT NOT NULL UNIQUE,
        stream TEXT NOT NULL,
        stream_version INTEGER NOT NULL CHECK (stream_version >= 1),
        type TEXT NOT NULL,
        observed_at TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        recorded_at TEXT NOT NULL,
        recorded_us INTEGER NOT NULL,
        data TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        -- derived by SQLite itself from the hashed data, so they cannot drift from it
        observation_id TEXT GENERATED ALWAYS AS (
            CASE WHEN type IN ('citation.observed', 'resolution.observed')
            THEN json_extract(data, '$.observation_id') END) VIRTUAL,
        cited_arxiv_id TEXT GENERATED ALWAYS AS (
            CASE WHEN type = 'resolution.observed'
            THEN json_extract(data, '$.cited_arxiv_id') END) VIRTUAL,
        UNIQUE (stream, stream_version)
    );
    CREATE INDEX events_stream_type_time ON events (stream, type, observed_us);
    CREATE INDEX events_observation ON events (observation_id) WHERE observation_id IS NOT NULL;
    CREATE INDEX events_cited ON events (cited_arxiv_id) WHERE cited_arxiv_id IS NOT NULL;

    -- one row per (work, standing check): that work's notices in the check, so a record
    -- reads only its works' rows instead of every check's full work list
    CREATE TABLE check_works (
        work_id TEXT NOT NULL,
        source TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        seq INTEGER NOT NULL REFERENCES events (seq),
        recorded_us INTEGER NOT NULL,
        notices TEXT NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    ) WITHOUT ROWID;

    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on events refused'); END;
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on events refused'); END;
    CREATE TRIGGER check_works_no_update BEFORE UPDATE ON check_works
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on check_works refused'); END;
    CREATE TRIGGER check_works_no_delete BEFORE DELETE ON check_works
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on check_works refused'); END;
    """,
    # REPLACE deletes the old row without firing DELETE triggers (recursive_triggers is off)
    """
    CREATE TRIGGER events_no_replace BEFORE INSERT ON events
    WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR event_id = NEW.event_id
                 OR (stream = NEW.stream AND stream_version = NEW.stream_version))
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on events refused'); END;
    CREATE TRIGGER check_works_no_replace BEFORE INSERT ON check_works
    WHEN EXISTS (SELECT 1 FROM check_works WHERE work_id = NEW.work_id AND source = NEW.source
                 AND observed_us = NEW.observed_us AND seq = NEW.seq)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on check_works refused'); END;
    """,
    # Verifiable integrity (ledger/merkle_store.py): complete-subtree hashes of the RFC 6962 tree over
    # the events, kept from level 4 (16 leaves) up; lower levels are recomputed from the events.
    """
    CREATE TABLE merkle_nodes (
        level INTEGER NOT NULL CHECK (level >= 0),
        idx INTEGER NOT NULL CHECK (idx >= 0),
        hash BLOB NOT NULL CHECK (length(hash) = 32),
        PRIMARY KEY (level, idx)
    ) WITHOUT ROWID;

    -- how many leaves the nodes cover and the chain hash of the last one, so that nodes built over
    -- events that were later cut off or rewritten are refused instead of used
    CREATE TABLE merkle_fill (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        leaves INTEGER NOT NULL,
        chain_hash TEXT NOT NULL
    );

    -- the last point `ledger verify` walked the chain to, for `ledger verify --resume`
    CREATE TABLE verified_point (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        peaks TEXT NOT NULL,
        verified_at TEXT NOT NULL
    );

    CREATE TRIGGER merkle_nodes_no_update BEFORE UPDATE ON merkle_nodes
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: UPDATE on merkle_nodes refused'); END;
    CREATE TRIGGER merkle_nodes_no_delete BEFORE DELETE ON merkle_nodes
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: DELETE on merkle_nodes refused'); END;
    CREATE TRIGGER merkle_nodes_no_replace BEFORE INSERT ON merkle_nodes
    WHEN EXISTS (SELECT 1 FROM merkle_nodes WHERE level = NEW.level AND idx = NEW.idx)
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: REPLACE on merkle_nodes refused'); END;
    """,
    # Scrubbing (service/scrub.py): one row per full walk of the chain from seq 1, so every server
    # process and the CLI see when the chain was last walked in full, by whom, and what it found.
    """
    CREATE TABLE scrub_passes (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('scrub', 'verify', 'integrity')),
        started_at TEXT NOT NULL,
        started_us INTEGER NOT NULL,
        finished_at TEXT NOT NULL,
        finished_us INTEGER NOT NULL,
        events INTEGER NOT NULL CHECK (events >= 0),
        head_seq INTEGER NOT NULL CHECK (head_seq >= 0),
        ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
        first_bad_seq INTEGER,
        reason TEXT
    );
    CREATE INDEX scrub_passes_finished ON scrub_passes (finished_us);
    """,
    # Appends at a log's cost (ledger/keys.py): the random keys (event_id, observation_id, cited_arxiv_id)
    # leave the events table for the levels of event_keys, and the check rows get levels too; the
    # events are copied verbatim into a table without those indexes (SQLite cannot drop a UNIQUE
    # constraint in place), so seq, hashes and every stored byte stay as they were.
    """
    CREATE TABLE events_v5 (
        seq INTEGER PRIMARY KEY,
        event_id TEXT NOT NULL,
        stream TEXT NOT NULL,
        stream_version INTEGER NOT NULL CHECK (stream_version >= 1),
        type TEXT NOT NULL,
        observed_at TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        recorded_at TEXT NOT NULL,
        recorded_us INTEGER NOT NULL,
        data TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        UNIQUE (stream, stream_version)
    );
    INSERT INTO events_v5 (seq, event_id, stream, stream_version, type, observed_at, observed_us,
        recorded_at, recorded_us, data, prev_hash, hash)
    SELECT seq, event_id, stream, stream_version, type, observed_at, observed_us,
        recorded_at, recorded_us, data, prev_hash, hash FROM events ORDER BY seq;

    CREATE TABLE event_keys (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (key, seq)
    ) WITHOUT ROWID;
    CREATE INDEX event_keys_seq ON event_keys (seq);
    CREATE TABLE event_keys_recent (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (key, seq)
    ) WITHOUT ROWID;
    CREATE INDEX event_keys_recent_seq ON event_keys_recent (seq);
    CREATE TABLE event_keys_middle (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (key, seq)
    ) WITHOUT ROWID;
    CREATE INDEX event_keys_middle_seq ON event_keys_middle (seq);
    CREATE VIEW event_keys_all AS
        SELECT key, seq FROM event_keys UNION ALL SELECT key, seq FROM event_keys_middle
        UNION ALL SELECT key, seq FROM event_keys_recent;
    -- the standing checks' per-work rows, keyed by random work ids, get the same levels
    CREATE TABLE check_works_recent (
        work_id TEXT NOT NULL,
        source TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        recorded_us INTEGER NOT NULL,
        notices TEXT NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    ) WITHOUT ROWID;
    CREATE INDEX check_works_recent_seq ON check_works_recent (seq);
    CREATE TABLE check_works_middle (
        work_id TEXT NOT NULL,
        source TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        recorded_us INTEGER NOT NULL,
        notices TEXT NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    ) WITHOUT ROWID;
    CREATE INDEX check_works_middle_seq ON check_works_middle (seq);
    CREATE INDEX check_works_seq ON check_works (seq);
    CREATE VIEW check_works_all AS
        SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_middle
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_recent;
    INSERT INTO event_keys (key, seq)
    SELECT key, seq FROM (
        SELECT 'e:' || event_id AS key, seq FROM events
        UNION ALL SELECT 'o:' || observation_id, seq FROM events WHERE observation_id IS NOT NULL
        UNION ALL SELECT 'c:' || cited_arxiv_id, seq FROM events WHERE cited_arxiv_id IS NOT NULL
    ) ORDER BY key, seq;

    DROP TABLE events;
    ALTER TABLE events_v5 RENAME TO events;
    CREATE INDEX events_stream_type_time ON events (stream, type, observed_us);
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on events refused'); END;
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on events refused'); END;
    CREATE TRIGGER events_no_replace BEFORE INSERT ON events
    WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq
                 OR (stream = NEW.stream AND stream_version = NEW.stream_version))
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on events refused'); END;
    -- the merged level only grows (its rows are all key: REPLACE cannot change one); the recent
    -- level is emptied into it by each merge
    CREATE TRIGGER event_keys_no_update BEFORE UPDATE ON event_keys
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on event_keys refused'); END;
    CREATE TRIGGER event_keys_no_delete BEFORE DELETE ON event_keys
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on event_keys refused'); END;
    -- the smaller levels' rows are never changed, only moved by a merge (which deletes them)
    CREATE TRIGGER event_keys_recent_no_update BEFORE UPDATE ON event_keys_recent
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on event_keys_recent refused'); END;
    CREATE TRIGGER event_keys_middle_no_update BEFORE UPDATE ON event_keys_middle
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on event_keys_middle refused'); END;
    CREATE TRIGGER check_works_recent_no_update BEFORE UPDATE ON check_works_recent
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on check_works_recent refused'); END;
    CREATE TRIGGER check_works_middle_no_update BEFORE UPDATE ON check_works_middle
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on check_works_middle refused'); END;
    CREATE TRIGGER check_works_recent_no_replace BEFORE INSERT ON check_works_recent
    WHEN EXISTS (SELECT 1 FROM check_works_recent WHERE work_id = NEW.work_id AND source = NEW.source
                 AND observed_us = NEW.observed_us AND seq = NEW.seq)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on check_works_recent refused'); END;
    CREATE TRIGGER check_works_middle_no_replace BEFORE INSERT ON check_works_middle
    WHEN EXISTS (SELECT 1 FROM check_works_middle WHERE work_id = NEW.work_id AND source = NEW.source
                 AND observed_us = NEW.observed_us AND seq = NEW.seq)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on check_works_middle refused'); END;
    """,
    # Records in O(caps) (ledger/spans.py): when each observation points at which paper, by observed
    # and by recorded time, and the spans known now counted per paper and bucket of observed time. Its
    # rows are computed in Python, so a ledger that already holds events is marked for the store to fill
    # both tables when it opens (SqlTables.fill_spans).
    """
    CREATE TABLE inbound_spans (
        cited TEXT NOT NULL,
        citing TEXT NOT NULL,
        reference_index INTEGER NOT NULL,
        observation_id TEXT NOT NULL,
        t_from INTEGER NOT NULL,
        t_to INTEGER NOT NULL,
        citation_seq INTEGER NOT NULL,
        resolution_seq INTEGER NOT NULL,
        k_from INTEGER NOT NULL,
        k_to INTEGER NOT NULL,
        PRIMARY KEY (cited, citing, reference_index, observation_id, t_from, k_from)
    ) WITHOUT ROWID;
    CREATE INDEX inbound_spans_observation ON inbound_spans (observation_id, t_from, k_from);
    CREATE INDEX inbound_spans_from ON inbound_spans (cited, k_to, t_from);
    -- only spans that end (an observation re-resolved away): most never do
    CREATE INDEX inbound_spans_to ON inbound_spans (cited, k_to, t_to) WHERE t_to < 9223372036854775807;
    CREATE TABLE inbound_counts (
        cited TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        starts INTEGER NOT NULL,
        ends INTEGER NOT NULL,
        PRIMARY KEY (cited, bucket)
    ) WITHOUT ROWID;
    CREATE TABLE derived_pending (name TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT INTO derived_pending (name) SELECT 'inbound_spans' WHERE EXISTS (SELECT 1 FROM events);
    """,
    # Step 7, the works index (ledger/keys.py): each citation and resolution keeps `w:` keys, the
    # DOI and arXiv keys of its cited work, so a source ingest looks up the works a file names
    # instead of reading every observation. The keys of the events already stored are derived by
    # Python (AFTER) into this table, then moved into the merged level in key order.
    f"""
    CREATE TEMP TABLE {FILL_TABLE} (key TEXT NOT NULL, seq INTEGER NOT NULL);
    """,
    # Step 8, four levels (ledger/keys.py): a `deep` level between the middle and the merged ones, so
    # that no append rewrites the merged level more than once every 500,000 events; the small levels
    # lose their index by seq and their REPLACE guards (each row cost every commit a probe and a
    # second tree), and the cited arXiv ids' keys go (no lookup reads them: records read the spans).
    # The spans lose their index by observation: an append closes a span by its key, and that index
    # was a third tree in random order that every resolution wrote a page of (a fifth of the pages
    # a commit wrote, measured at 1M events).
    """
    DROP INDEX inbound_spans_observation;
    DROP INDEX event_keys_recent_seq;
    DROP INDEX event_keys_middle_seq;
    DROP INDEX check_works_recent_seq;
    DROP INDEX check_works_middle_seq;
    DROP TRIGGER check_works_recent_no_replace;
    DROP TRIGGER check_works_middle_no_replace;
    CREATE TABLE event_keys_deep (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (key, seq)
    ) WITHOUT ROWID;
    CREATE INDEX event_keys_deep_seq ON event_keys_deep (seq);
    CREATE TABLE check_works_deep (
        work_id TEXT NOT NULL,
        source TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        recorded_us INTEGER NOT NULL,
        notices TEXT NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    ) WITHOUT ROWID;
    CREATE INDEX check_works_deep_seq ON check_works_deep (seq);
    CREATE TRIGGER event_keys_deep_no_update BEFORE UPDATE ON event_keys_deep
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on event_keys_deep refused'); END;
    CREATE TRIGGER check_works_deep_no_update BEFORE UPDATE ON check_works_deep
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: UPDATE on check_works_deep refused'); END;
    DROP VIEW event_keys_all;
    CREATE VIEW event_keys_all AS
        SELECT key, seq FROM event_keys UNION ALL SELECT key, seq FROM event_keys_deep
        UNION ALL SELECT key, seq FROM event_keys_middle UNION ALL SELECT key, seq FROM event_keys_recent;
    DROP VIEW check_works_all;
    CREATE VIEW check_works_all AS
        SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_deep
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_middle
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_recent;
    DROP TRIGGER event_keys_no_delete;
    DELETE FROM event_keys WHERE key >= 'c:' AND key < 'c;';
    DELETE FROM event_keys_middle WHERE key >= 'c:' AND key < 'c;';
    DELETE FROM event_keys_recent WHERE key >= 'c:' AND key < 'c;';
    CREATE TRIGGER event_keys_no_delete BEFORE DELETE ON event_keys
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on event_keys refused'); END;
    """,
    # Step 9, standing alerts (service/alerts.py): the watches, the works each covers, the alerts raised
    # from the events and the webhook outbox. The ledger's own state, not hashed events: these tables
    # change in place. The cursor starts at the head: before any watch, no event raises an alert.
    """
    CREATE TABLE watches (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('paper', 'works')),
        target TEXT NOT NULL,
        callback_url TEXT,
        secret TEXT,
        created_at TEXT NOT NULL,
        created_seq INTEGER NOT NULL,
        removed_at TEXT
    );
    CREATE TABLE watch_keys (
        key TEXT NOT NULL,
        watch_id TEXT NOT NULL,
        PRIMARY KEY (key, watch_id)
    ) WITHOUT ROWID;
    CREATE TABLE watch_works (
        work_id TEXT NOT NULL,
        watch_id TEXT NOT NULL,
        observation_id TEXT NOT NULL,
        PRIMARY KEY (work_id, watch_id, observation_id)
    ) WITHOUT ROWID;
    CREATE INDEX watch_works_by_watch ON watch_works (watch_id, work_id);
    CREATE TABLE alerts (
        n INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        watch_id TEXT NOT NULL,
        work_id TEXT NOT NULL,
        notice_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        held INTEGER NOT NULL CHECK (held IN (0, 1)),
        body TEXT NOT NULL,
        raised_at TEXT NOT NULL,
        raised_us INTEGER NOT NULL,
        UNIQUE (watch_id, work_id, notice_key)
    );
    CREATE INDEX alerts_by_watch ON alerts (watch_id, n);
    CREATE TABLE outbox (
        alert_n INTEGER PRIMARY KEY,
        watch_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'gave_up')),
        attempts INTEGER NOT NULL,
        next_us INTEGER NOT NULL,
        first_us INTEGER NOT NULL,
        lease_us INTEGER NOT NULL
    );
    CREATE INDEX outbox_due ON outbox (state, next_us);
    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        alert_n INTEGER NOT NULL,
        watch_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        at TEXT NOT NULL,
        address TEXT,
        status INTEGER,
        error TEXT,
        next_at TEXT
    );
    CREATE INDEX deliveries_by_watch ON deliveries (watch_id, id);
    CREATE TABLE alert_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
    INSERT INTO alert_cursor (id, seq) SELECT 1, coalesce(max(seq), 0) FROM events;
    """,
    # Step 10, title search (ledger/search.py): each distinct title of a paper (observation_id '') or of a
    # reference in its citing paper, with the first event that carried it, and an FTS5 index over them
    # in the shape sqlite-utils' enable_fts(create_triggers=True) gives (so `sqlite-utils search` and
    # Datasette find it). No append writes them: a search first indexes the events past the cursor.
    """
    CREATE TABLE search_titles (
        seq INTEGER NOT NULL,
        arxiv_id TEXT NOT NULL,
        observation_id TEXT NOT NULL,
        reference_index INTEGER,
        title TEXT NOT NULL,
        UNIQUE (arxiv_id, observation_id, title)
    );
    CREATE VIRTUAL TABLE search_titles_fts USING FTS5 (
        title,
        tokenize='unicode61 remove_diacritics 0',
        content="search_titles"
    );
    CREATE TRIGGER search_titles_ai AFTER INSERT ON search_titles BEGIN
        INSERT INTO search_titles_fts (rowid, title) VALUES (new.rowid, new.title);
    END;
    CREATE TABLE search_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
    INSERT INTO search_cursor (id, seq) VALUES (1, 0);
    """,
    # Step 11, ingest receipts (service/sources): one row per acknowledged ingest, written in the
    # transaction of its events, so a receipt exists iff the ingest was answered. A source whose file
    # is its whole database is compared with the last file of it accepted (sources-v1.md).
    """
    CREATE TABLE ingest_receipts (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        observed_at TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        accepted_at TEXT NOT NULL,
        accepted_us INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        bytes INTEGER NOT NULL CHECK (bytes >= 0),
        rows_read INTEGER NOT NULL CHECK (rows_read >= 0),
        rows_matched INTEGER NOT NULL CHECK (rows_matched >= 0),
        appended INTEGER NOT NULL CHECK (appended >= 0),
        seq INTEGER
    );
    CREATE INDEX ingest_receipts_source ON ingest_receipts (source, id);
    """,
    # Step 12, watch owners (service/alerts.py): the sha256 of the token that made a watch, as the token file
    # holds it, never the token. NULL is the operator's: watches made with the CLI or before this step.
    """
    ALTER TABLE watches ADD COLUMN owner TEXT;
    CREATE INDEX watches_by_owner ON watches (owner, id) WHERE removed_at IS NULL;
    """,
]
# Python a step runs after its SQL, in the same transaction: what SQL alone cannot derive
AFTER: dict[int, Callable[[sqlite3.Connection], object]] = {7: lambda conn: fill_work_keys(conn, SQLITE)}


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the schema version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-read under the write lock: another process may have migrated meanwhile
            if conn.execute("PRAGMA user_version").fetchone()[0] >= number:
                conn.execute("COMMIT")
                continue
            for statement in _split(script):
                conn.execute(statement)
            if number in AFTER:
                AFTER[number](conn)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)


def _split(script: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies whole."""
    out, buf = [], ""
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out

"""PostgreSQL schema migrations: the SQLite schema's twin, applied in order under an advisory lock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ledger.storage.derived.backfill import FILL_TABLE, fill_work_keys
from ledger.storage.sql import POSTGRESQL

# pg_advisory_xact_lock key held while migrating, so nodes starting together migrate once
MIGRATE_LOCK = 0x6C6564676572  # "ledger"

# Text columns compare byte-wise (COLLATE "C") as in SQLite; `data` holds the canonical bytes as UTF-8
# text, exactly as hashed (never jsonb); the derived columns are computed by PostgreSQL from it.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE events (
        seq bigint PRIMARY KEY CHECK (seq >= 1),
        event_id text COLLATE "C" NOT NULL UNIQUE,
        stream text COLLATE "C" NOT NULL,
        stream_version bigint NOT NULL CHECK (stream_version >= 1),
        type text COLLATE "C" NOT NULL,
        observed_at text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        recorded_at text COLLATE "C" NOT NULL,
        recorded_us bigint NOT NULL,
        data text COLLATE "C" NOT NULL,
        prev_hash text COLLATE "C" NOT NULL,
        hash text COLLATE "C" NOT NULL,
        observation_id text COLLATE "C" GENERATED ALWAYS AS (
            CASE WHEN type IN ('citation.observed', 'resolution.observed')
            THEN data::jsonb ->> 'observation_id' END) STORED,
        cited_arxiv_id text COLLATE "C" GENERATED ALWAYS AS (
            CASE WHEN type = 'resolution.observed' THEN data::jsonb ->> 'cited_arxiv_id' END) STORED,
        UNIQUE (stream, stream_version)
    );
    CREATE INDEX events_stream_type_time ON events (stream, type, observed_us);
    CREATE INDEX events_observation ON events (observation_id) WHERE observation_id IS NOT NULL;
    CREATE INDEX events_cited ON events (cited_arxiv_id) WHERE cited_arxiv_id IS NOT NULL;

    CREATE TABLE check_works (
        work_id text COLLATE "C" NOT NULL,
        source text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        seq bigint NOT NULL REFERENCES events (seq),
        recorded_us bigint NOT NULL,
        notices text COLLATE "C" NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    );

    CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END $$;
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER check_works_append_only BEFORE UPDATE OR DELETE ON check_works
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER check_works_no_truncate BEFORE TRUNCATE ON check_works
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
    -- the triggers stay on for sessions in replica mode too (a superuser cannot skip them that way)
    ALTER TABLE events ENABLE ALWAYS TRIGGER events_append_only;
    ALTER TABLE events ENABLE ALWAYS TRIGGER events_no_truncate;
    ALTER TABLE check_works ENABLE ALWAYS TRIGGER check_works_append_only;
    ALTER TABLE check_works ENABLE ALWAYS TRIGGER check_works_no_truncate;
    REVOKE UPDATE, DELETE, TRUNCATE ON events, check_works FROM PUBLIC;
    """,
    # Verifiable integrity (ledger/merkle_store.py), as SQLite's step 3; plus the last signed
    # checkpoint, kept here rather than in a file so every node signs after the same one.
    """
    CREATE TABLE merkle_nodes (
        level integer NOT NULL CHECK (level >= 0),
        idx bigint NOT NULL CHECK (idx >= 0),
        hash bytea NOT NULL CHECK (length(hash) = 32),
        PRIMARY KEY (level, idx)
    );
    CREATE TABLE merkle_fill (
        id integer PRIMARY KEY CHECK (id = 1),
        leaves bigint NOT NULL,
        chain_hash text COLLATE "C" NOT NULL
    );
    CREATE TABLE verified_point (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL,
        hash text COLLATE "C" NOT NULL,
        peaks text COLLATE "C" NOT NULL,
        verified_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE signed_checkpoint (
        id integer PRIMARY KEY CHECK (id = 1),
        note text COLLATE "C" NOT NULL
    );
    CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON merkle_nodes
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER merkle_nodes_no_truncate BEFORE TRUNCATE ON merkle_nodes
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
    ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_append_only;
    ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_no_truncate;
    REVOKE UPDATE, DELETE, TRUNCATE ON merkle_nodes FROM PUBLIC;
    """,
    # Scrubbing (service/scrub.py), as SQLite's step 4: one row per full walk of the chain from seq 1.
    """
    CREATE TABLE scrub_passes (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind text COLLATE "C" NOT NULL CHECK (kind IN ('scrub', 'verify', 'integrity')),
        started_at text COLLATE "C" NOT NULL,
        started_us bigint NOT NULL,
        finished_at text COLLATE "C" NOT NULL,
        finished_us bigint NOT NULL,
        events bigint NOT NULL CHECK (events >= 0),
        head_seq bigint NOT NULL CHECK (head_seq >= 0),
        ok boolean NOT NULL,
        first_bad_seq bigint,
        reason text COLLATE "C"
    );
    CREATE INDEX scrub_passes_finished ON scrub_passes (finished_us);
    """,
    # Appends at a log's cost, as SQLite's step 5 (ledger/keys.py): the random keys leave the events
    # table for the levels of event_keys, and the check rows get levels too; the events' rows are not
    # touched.
    """
    CREATE TABLE event_keys (
        key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (key, seq)
    );
    CREATE INDEX event_keys_seq ON event_keys (seq);
    CREATE TABLE event_keys_recent (
        key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (key, seq)
    );
    CREATE INDEX event_keys_recent_seq ON event_keys_recent (seq);
    CREATE TABLE event_keys_middle (
        key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (key, seq)
    );
    CREATE INDEX event_keys_middle_seq ON event_keys_middle (seq);
    CREATE VIEW event_keys_all AS
        SELECT key, seq FROM event_keys UNION ALL SELECT key, seq FROM event_keys_middle
        UNION ALL SELECT key, seq FROM event_keys_recent;
    CREATE TABLE check_works_recent (
        work_id text COLLATE "C" NOT NULL,
        source text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        seq bigint NOT NULL,
        recorded_us bigint NOT NULL,
        notices text COLLATE "C" NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    );
    CREATE INDEX check_works_recent_seq ON check_works_recent (seq);
    CREATE TABLE check_works_middle (
        work_id text COLLATE "C" NOT NULL,
        source text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        seq bigint NOT NULL,
        recorded_us bigint NOT NULL,
        notices text COLLATE "C" NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    );
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
    ) AS k ORDER BY key, seq;
    ALTER TABLE events DROP CONSTRAINT events_event_id_key;
    DROP INDEX events_observation;
    DROP INDEX events_cited;
    ALTER TABLE events DROP COLUMN observation_id;
    ALTER TABLE events DROP COLUMN cited_arxiv_id;

    CREATE TRIGGER event_keys_append_only BEFORE UPDATE OR DELETE ON event_keys
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER event_keys_no_truncate BEFORE TRUNCATE ON event_keys
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
    ALTER TABLE event_keys ENABLE ALWAYS TRIGGER event_keys_append_only;
    ALTER TABLE event_keys ENABLE ALWAYS TRIGGER event_keys_no_truncate;
    REVOKE UPDATE, DELETE, TRUNCATE ON event_keys FROM PUBLIC;
    -- the smaller levels' rows are never changed, only moved by a merge (which deletes them)
    CREATE TRIGGER event_keys_recent_no_update BEFORE UPDATE ON event_keys_recent
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER event_keys_middle_no_update BEFORE UPDATE ON event_keys_middle
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER check_works_recent_no_update BEFORE UPDATE ON check_works_recent
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER check_works_middle_no_update BEFORE UPDATE ON check_works_middle
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    ALTER TABLE event_keys_recent ENABLE ALWAYS TRIGGER event_keys_recent_no_update;
    ALTER TABLE event_keys_middle ENABLE ALWAYS TRIGGER event_keys_middle_no_update;
    ALTER TABLE check_works_recent ENABLE ALWAYS TRIGGER check_works_recent_no_update;
    ALTER TABLE check_works_middle ENABLE ALWAYS TRIGGER check_works_middle_no_update;
    """,
    # Records in O(caps), as SQLite's step 6 (ledger/spans.py); the store fills the table when it opens.
    """
    CREATE TABLE inbound_spans (
        cited text COLLATE "C" NOT NULL,
        citing text COLLATE "C" NOT NULL,
        reference_index bigint NOT NULL,
        observation_id text COLLATE "C" NOT NULL,
        t_from bigint NOT NULL,
        t_to bigint NOT NULL,
        citation_seq bigint NOT NULL,
        resolution_seq bigint NOT NULL,
        k_from bigint NOT NULL,
        k_to bigint NOT NULL,
        PRIMARY KEY (cited, citing, reference_index, observation_id, t_from, k_from)
    );
    CREATE INDEX inbound_spans_observation ON inbound_spans (observation_id, t_from, k_from);
    CREATE INDEX inbound_spans_from ON inbound_spans (cited, k_to, t_from);
    -- only spans that end (an observation re-resolved away): most never do
    CREATE INDEX inbound_spans_to ON inbound_spans (cited, k_to, t_to) WHERE t_to < 9223372036854775807;
    CREATE TABLE inbound_counts (
        cited text COLLATE "C" NOT NULL,
        bucket bigint NOT NULL,
        starts bigint NOT NULL,
        ends bigint NOT NULL,
        PRIMARY KEY (cited, bucket)
    );
    CREATE TABLE derived_pending (name text COLLATE "C" PRIMARY KEY);
    INSERT INTO derived_pending (name) SELECT 'inbound_spans' WHERE EXISTS (SELECT 1 FROM events);
    """,
    # Step 6, the works index, as SQLite's step 7: the `w:` keys of the events already stored are
    # derived by Python (AFTER) into this table, then moved into the merged level in key order.
    f"""
    CREATE TEMP TABLE {FILL_TABLE} (key text COLLATE "C" NOT NULL, seq bigint NOT NULL);
    """,
    # Step 7, four levels and spans without their index by observation, as SQLite's step 8.
    """
    DROP INDEX inbound_spans_observation;
    DROP INDEX event_keys_recent_seq;
    DROP INDEX event_keys_middle_seq;
    DROP INDEX check_works_recent_seq;
    DROP INDEX check_works_middle_seq;
    CREATE TABLE event_keys_deep (
        key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (key, seq)
    );
    CREATE INDEX event_keys_deep_seq ON event_keys_deep (seq);
    CREATE TABLE check_works_deep (
        work_id text COLLATE "C" NOT NULL,
        source text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        seq bigint NOT NULL,
        recorded_us bigint NOT NULL,
        notices text COLLATE "C" NOT NULL,
        PRIMARY KEY (work_id, source, observed_us, seq)
    );
    CREATE INDEX check_works_deep_seq ON check_works_deep (seq);
    CREATE TRIGGER event_keys_deep_no_update BEFORE UPDATE ON event_keys_deep
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER check_works_deep_no_update BEFORE UPDATE ON check_works_deep
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    ALTER TABLE event_keys_deep ENABLE ALWAYS TRIGGER event_keys_deep_no_update;
    ALTER TABLE check_works_deep ENABLE ALWAYS TRIGGER check_works_deep_no_update;
    CREATE OR REPLACE VIEW event_keys_all AS
        SELECT key, seq FROM event_keys UNION ALL SELECT key, seq FROM event_keys_deep
        UNION ALL SELECT key, seq FROM event_keys_middle UNION ALL SELECT key, seq FROM event_keys_recent;
    CREATE OR REPLACE VIEW check_works_all AS
        SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_deep
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_middle
        UNION ALL SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_recent;
    ALTER TABLE event_keys DISABLE TRIGGER event_keys_append_only;
    DELETE FROM event_keys WHERE key >= 'c:' AND key < 'c;';
    ALTER TABLE event_keys ENABLE ALWAYS TRIGGER event_keys_append_only;
    DELETE FROM event_keys_middle WHERE key >= 'c:' AND key < 'c;';
    DELETE FROM event_keys_recent WHERE key >= 'c:' AND key < 'c;';
    """,
    # Step 8, standing alerts, as SQLite's step 9.
    """
    CREATE TABLE watches (
        id text COLLATE "C" PRIMARY KEY,
        kind text COLLATE "C" NOT NULL CHECK (kind IN ('paper', 'works')),
        target text COLLATE "C" NOT NULL,
        callback_url text COLLATE "C",
        secret text COLLATE "C",
        created_at text COLLATE "C" NOT NULL,
        created_seq bigint NOT NULL,
        removed_at text COLLATE "C"
    );
    CREATE TABLE watch_keys (
        key text COLLATE "C" NOT NULL,
        watch_id text COLLATE "C" NOT NULL,
        PRIMARY KEY (key, watch_id)
    );
    CREATE TABLE watch_works (
        work_id text COLLATE "C" NOT NULL,
        watch_id text COLLATE "C" NOT NULL,
        observation_id text COLLATE "C" NOT NULL,
        PRIMARY KEY (work_id, watch_id, observation_id)
    );
    CREATE INDEX watch_works_by_watch ON watch_works (watch_id, work_id);
    CREATE TABLE alerts (
        n bigint PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        watch_id text COLLATE "C" NOT NULL,
        work_id text COLLATE "C" NOT NULL,
        notice_key text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        held integer NOT NULL CHECK (held IN (0, 1)),
        body text COLLATE "C" NOT NULL,
        raised_at text COLLATE "C" NOT NULL,
        raised_us bigint NOT NULL,
        UNIQUE (watch_id, work_id, notice_key)
    );
    CREATE INDEX alerts_by_watch ON alerts (watch_id, n);
    CREATE TABLE outbox (
        alert_n bigint PRIMARY KEY,
        watch_id text COLLATE "C" NOT NULL,
        state text COLLATE "C" NOT NULL CHECK (state IN ('pending', 'delivered', 'gave_up')),
        attempts integer NOT NULL,
        next_us bigint NOT NULL,
        first_us bigint NOT NULL,
        lease_us bigint NOT NULL
    );
    CREATE INDEX outbox_due ON outbox (state, next_us);
    CREATE TABLE deliveries (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        alert_n bigint NOT NULL,
        watch_id text COLLATE "C" NOT NULL,
        attempt integer NOT NULL,
        at text COLLATE "C" NOT NULL,
        address text COLLATE "C",
        status integer,
        error text COLLATE "C",
        next_at text COLLATE "C"
    );
    CREATE INDEX deliveries_by_watch ON deliveries (watch_id, id);
    CREATE TABLE alert_cursor (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);
    INSERT INTO alert_cursor (id, seq) SELECT 1, coalesce(max(seq), 0) FROM events;
    """,
    # Step 9, title search (ledger/search.py): each distinct title of a paper (observation_id '') or of a
    # reference in its citing paper, with the first event that carried it, and the GIN-indexed tsvector
    # of its words ('simple': no stemming, as SQLite's unicode61). Distinct by the title's md5, since a
    # B-tree entry holds some 2.7 kB and a title may hold 16,384 characters. No append writes them: a
    # search first indexes the events past the cursor.
    """
    CREATE TABLE search_titles (
        seq bigint NOT NULL,
        arxiv_id text COLLATE "C" NOT NULL,
        observation_id text COLLATE "C" NOT NULL,
        reference_index integer,
        title text COLLATE "C" NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', title)) STORED
    );
    CREATE UNIQUE INDEX search_titles_key ON search_titles (arxiv_id, observation_id, md5(title));
    CREATE INDEX search_titles_words ON search_titles USING GIN (words);
    CREATE TABLE search_cursor (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);
    INSERT INTO search_cursor (id, seq) VALUES (1, 0);
    """,
    # Step 10, ingest receipts, as SQLite's step 11: one row per acknowledged ingest, written in the
    # transaction of its events.
    """
    CREATE TABLE ingest_receipts (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source text COLLATE "C" NOT NULL,
        observed_at text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        accepted_at text COLLATE "C" NOT NULL,
        accepted_us bigint NOT NULL,
        sha256 text COLLATE "C" NOT NULL,
        bytes bigint NOT NULL CHECK (bytes >= 0),
        rows_read bigint NOT NULL CHECK (rows_read >= 0),
        rows_matched bigint NOT NULL CHECK (rows_matched >= 0),
        appended bigint NOT NULL CHECK (appended >= 0),
        seq bigint
    );
    CREATE INDEX ingest_receipts_source ON ingest_receipts (source, id);
    """,
    # Step 11, watch owners, as SQLite's step 12.
    """
    ALTER TABLE watches ADD COLUMN owner text COLLATE "C";
    CREATE INDEX watches_by_owner ON watches (owner, id) WHERE removed_at IS NULL;
    """,
]
# Python a step runs after its SQL, in the same transaction: what SQL alone cannot derive
AFTER: dict[int, Callable[[Any], object]] = {6: lambda conn: fill_work_keys(conn, POSTGRESQL)}


def migrate(conn: Any) -> int:
    """Bring the schema up to date in one transaction per step; returns the schema version."""
    if _version(conn) >= len(MIGRATIONS):
        return len(MIGRATIONS)  # the usual case: no DDL, no lock (a role without CREATE can open it)
    for number, script in enumerate(MIGRATIONS, start=1):
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS ledger_schema (version integer NOT NULL)")
            row = conn.execute("SELECT max(version) FROM ledger_schema").fetchone()
            if (row[0] or 0) >= number:
                conn.execute("COMMIT")
                continue
            conn.execute(script)
            if number in AFTER:
                AFTER[number](conn)
            conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (number,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)


def _version(conn: Any) -> int:
    """The applied version, 0 on an empty database."""
    if conn.execute("SELECT to_regclass('ledger_schema')").fetchone()[0] is None:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM ledger_schema").fetchone()[0])

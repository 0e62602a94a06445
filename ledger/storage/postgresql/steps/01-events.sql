-- The events and their standing checks' rows, append-only. Text columns compare byte-wise
-- (COLLATE "C") as in SQLite; `data` holds the canonical bytes as UTF-8 text, exactly as hashed
-- (never jsonb); the derived columns are computed by PostgreSQL from it.

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
    
-- The events and their standing checks' rows, append-only.

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
    
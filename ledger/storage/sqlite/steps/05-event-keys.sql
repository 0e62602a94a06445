-- Appends at a log's cost (ledger/keys.py): the random keys (event_id, observation_id, cited_arxiv_id)
-- leave the events table for the levels of event_keys, and the check rows get levels too; the
-- events are copied verbatim into a table without those indexes (SQLite cannot drop a UNIQUE
-- constraint in place), so seq, hashes and every stored byte stay as they were.

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
    
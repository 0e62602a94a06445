-- Appends at a log's cost, as SQLite's step 5 (ledger/keys.py): the random keys leave the events
-- table for the levels of event_keys, and the check rows get levels too; the events' rows are not
-- touched.

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
    
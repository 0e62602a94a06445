-- Step 7, four levels and spans without their index by observation, as SQLite's step 8.

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
    
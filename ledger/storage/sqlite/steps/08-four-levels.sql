-- Step 8, four levels (ledger/keys.py): a `deep` level between the middle and the merged ones, so
-- that no append rewrites the merged level more than once every 500,000 events; the small levels
-- lose their index by seq and their REPLACE guards (each row cost every commit a probe and a
-- second tree), and the cited arXiv ids' keys go (no lookup reads them: records read the spans).
-- The spans lose their index by observation: an append closes a span by its key, and that index
-- was a third tree in random order that every resolution wrote a page of (a fifth of the pages
-- a commit wrote, measured at 1M events).

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
    
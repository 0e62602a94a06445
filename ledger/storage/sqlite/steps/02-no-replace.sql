-- REPLACE deletes the old row without firing DELETE triggers (recursive_triggers is off)

    CREATE TRIGGER events_no_replace BEFORE INSERT ON events
    WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR event_id = NEW.event_id
                 OR (stream = NEW.stream AND stream_version = NEW.stream_version))
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on events refused'); END;
    CREATE TRIGGER check_works_no_replace BEFORE INSERT ON check_works
    WHEN EXISTS (SELECT 1 FROM check_works WHERE work_id = NEW.work_id AND source = NEW.source
                 AND observed_us = NEW.observed_us AND seq = NEW.seq)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: REPLACE on check_works refused'); END;
    
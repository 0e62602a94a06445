-- Scrubbing (service/scrub.py), as SQLite's step 4: one row per full walk of the chain from seq 1.

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
    
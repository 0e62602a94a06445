-- Step 10, ingest receipts, as SQLite's step 11: one row per acknowledged ingest, written in the
-- transaction of its events.

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
    
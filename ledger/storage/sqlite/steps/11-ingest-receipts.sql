-- Step 11, ingest receipts (service/sources): one row per acknowledged ingest, written in the
-- transaction of its events, so a receipt exists iff the ingest was answered. A source whose file
-- is its whole database is compared with the last file of it accepted (sources-v1.md).

    CREATE TABLE ingest_receipts (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        observed_at TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        accepted_at TEXT NOT NULL,
        accepted_us INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        bytes INTEGER NOT NULL CHECK (bytes >= 0),
        rows_read INTEGER NOT NULL CHECK (rows_read >= 0),
        rows_matched INTEGER NOT NULL CHECK (rows_matched >= 0),
        appended INTEGER NOT NULL CHECK (appended >= 0),
        seq INTEGER
    );
    CREATE INDEX ingest_receipts_source ON ingest_receipts (source, id);
    
-- Step 13, import progress (service/intake): how far `ledger import` has committed each file, written
-- in the transaction of each batch, so the same command after a stop resumes after the last batch.

    CREATE TABLE import_progress (
        file_key TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        bytes_done INTEGER NOT NULL CHECK (bytes_done >= 0),
        lines_done INTEGER NOT NULL CHECK (lines_done >= 0),
        prefix_sha256 TEXT NOT NULL,
        appended INTEGER NOT NULL CHECK (appended >= 0),
        duplicates INTEGER NOT NULL CHECK (duplicates >= 0),
        head_seq INTEGER NOT NULL CHECK (head_seq >= 0),
        updated_at TEXT NOT NULL,
        updated_us INTEGER NOT NULL
    );

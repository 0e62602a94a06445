-- Step 12, import progress, as SQLite's step 13: how far `ledger import` has committed each file,
-- written in the transaction of each batch.

    CREATE TABLE import_progress (
        file_key text COLLATE "C" PRIMARY KEY,
        name text COLLATE "C" NOT NULL,
        bytes_done bigint NOT NULL CHECK (bytes_done >= 0),
        lines_done bigint NOT NULL CHECK (lines_done >= 0),
        prefix_sha256 text COLLATE "C" NOT NULL,
        appended bigint NOT NULL CHECK (appended >= 0),
        duplicates bigint NOT NULL CHECK (duplicates >= 0),
        head_seq bigint NOT NULL CHECK (head_seq >= 0),
        updated_at text COLLATE "C" NOT NULL,
        updated_us bigint NOT NULL
    );

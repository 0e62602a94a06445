-- Step 11, watch owners, as SQLite's step 12.

    ALTER TABLE watches ADD COLUMN owner text COLLATE "C";
    CREATE INDEX watches_by_owner ON watches (owner, id) WHERE removed_at IS NULL;
    
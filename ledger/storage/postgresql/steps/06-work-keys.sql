-- Step 6, the works index, as SQLite's step 7: the `w:` keys of the events already stored are
-- derived by Python (AFTER) into this table, then moved into the merged level in key order.

    CREATE TEMP TABLE work_keys_fill (key text COLLATE "C" NOT NULL, seq bigint NOT NULL);
    
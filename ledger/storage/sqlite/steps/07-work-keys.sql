-- Step 7, the works index (ledger/keys.py): each citation and resolution keeps `w:` keys, the
-- DOI and arXiv keys of its cited work, so a source ingest looks up the works a file names
-- instead of reading every observation. The keys of the events already stored are derived by
-- Python (AFTER) into this table, then moved into the merged level in key order.

    CREATE TEMP TABLE work_keys_fill (key TEXT NOT NULL, seq INTEGER NOT NULL);
    
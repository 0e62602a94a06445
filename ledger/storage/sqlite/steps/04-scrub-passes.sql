-- Scrubbing (service/scrub.py): one row per full walk of the chain from seq 1, so every server
-- process and the CLI see when the chain was last walked in full, by whom, and what it found.

    CREATE TABLE scrub_passes (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('scrub', 'verify', 'integrity')),
        started_at TEXT NOT NULL,
        started_us INTEGER NOT NULL,
        finished_at TEXT NOT NULL,
        finished_us INTEGER NOT NULL,
        events INTEGER NOT NULL CHECK (events >= 0),
        head_seq INTEGER NOT NULL CHECK (head_seq >= 0),
        ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
        first_bad_seq INTEGER,
        reason TEXT
    );
    CREATE INDEX scrub_passes_finished ON scrub_passes (finished_us);
    
-- Step 9, standing alerts (service/alerts.py): the watches, the works each covers, the alerts raised
-- from the events and the webhook outbox. The ledger's own state, not hashed events: these tables
-- change in place. The cursor starts at the head: before any watch, no event raises an alert.

    CREATE TABLE watches (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('paper', 'works')),
        target TEXT NOT NULL,
        callback_url TEXT,
        secret TEXT,
        created_at TEXT NOT NULL,
        created_seq INTEGER NOT NULL,
        removed_at TEXT
    );
    CREATE TABLE watch_keys (
        key TEXT NOT NULL,
        watch_id TEXT NOT NULL,
        PRIMARY KEY (key, watch_id)
    ) WITHOUT ROWID;
    CREATE TABLE watch_works (
        work_id TEXT NOT NULL,
        watch_id TEXT NOT NULL,
        observation_id TEXT NOT NULL,
        PRIMARY KEY (work_id, watch_id, observation_id)
    ) WITHOUT ROWID;
    CREATE INDEX watch_works_by_watch ON watch_works (watch_id, work_id);
    CREATE TABLE alerts (
        n INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        watch_id TEXT NOT NULL,
        work_id TEXT NOT NULL,
        notice_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        held INTEGER NOT NULL CHECK (held IN (0, 1)),
        body TEXT NOT NULL,
        raised_at TEXT NOT NULL,
        raised_us INTEGER NOT NULL,
        UNIQUE (watch_id, work_id, notice_key)
    );
    CREATE INDEX alerts_by_watch ON alerts (watch_id, n);
    CREATE TABLE outbox (
        alert_n INTEGER PRIMARY KEY,
        watch_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'gave_up')),
        attempts INTEGER NOT NULL,
        next_us INTEGER NOT NULL,
        first_us INTEGER NOT NULL,
        lease_us INTEGER NOT NULL
    );
    CREATE INDEX outbox_due ON outbox (state, next_us);
    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        alert_n INTEGER NOT NULL,
        watch_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        at TEXT NOT NULL,
        address TEXT,
        status INTEGER,
        error TEXT,
        next_at TEXT
    );
    CREATE INDEX deliveries_by_watch ON deliveries (watch_id, id);
    CREATE TABLE alert_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
    INSERT INTO alert_cursor (id, seq) SELECT 1, coalesce(max(seq), 0) FROM events;
    
-- Verifiable integrity (ledger/merkle_store.py): complete-subtree hashes of the RFC 6962 tree over
-- the events, kept from level 4 (16 leaves) up; lower levels are recomputed from the events.

    CREATE TABLE merkle_nodes (
        level INTEGER NOT NULL CHECK (level >= 0),
        idx INTEGER NOT NULL CHECK (idx >= 0),
        hash BLOB NOT NULL CHECK (length(hash) = 32),
        PRIMARY KEY (level, idx)
    ) WITHOUT ROWID;

    -- how many leaves the nodes cover and the chain hash of the last one, so that nodes built over
    -- events that were later cut off or rewritten are refused instead of used
    CREATE TABLE merkle_fill (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        leaves INTEGER NOT NULL,
        chain_hash TEXT NOT NULL
    );

    -- the last point `ledger verify` walked the chain to, for `ledger verify --resume`
    CREATE TABLE verified_point (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        peaks TEXT NOT NULL,
        verified_at TEXT NOT NULL
    );

    CREATE TRIGGER merkle_nodes_no_update BEFORE UPDATE ON merkle_nodes
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: UPDATE on merkle_nodes refused'); END;
    CREATE TRIGGER merkle_nodes_no_delete BEFORE DELETE ON merkle_nodes
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: DELETE on merkle_nodes refused'); END;
    CREATE TRIGGER merkle_nodes_no_replace BEFORE INSERT ON merkle_nodes
    WHEN EXISTS (SELECT 1 FROM merkle_nodes WHERE level = NEW.level AND idx = NEW.idx)
    BEGIN SELECT RAISE(ABORT, 'Merkle nodes never change: REPLACE on merkle_nodes refused'); END;
    
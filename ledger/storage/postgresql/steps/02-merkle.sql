-- Verifiable integrity (ledger/merkle_store.py), as SQLite's step 3; plus the last signed
-- checkpoint, kept here rather than in a file so every node signs after the same one.

    CREATE TABLE merkle_nodes (
        level integer NOT NULL CHECK (level >= 0),
        idx bigint NOT NULL CHECK (idx >= 0),
        hash bytea NOT NULL CHECK (length(hash) = 32),
        PRIMARY KEY (level, idx)
    );
    CREATE TABLE merkle_fill (
        id integer PRIMARY KEY CHECK (id = 1),
        leaves bigint NOT NULL,
        chain_hash text COLLATE "C" NOT NULL
    );
    CREATE TABLE verified_point (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL,
        hash text COLLATE "C" NOT NULL,
        peaks text COLLATE "C" NOT NULL,
        verified_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE signed_checkpoint (
        id integer PRIMARY KEY CHECK (id = 1),
        note text COLLATE "C" NOT NULL
    );
    CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON merkle_nodes
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
    CREATE TRIGGER merkle_nodes_no_truncate BEFORE TRUNCATE ON merkle_nodes
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
    ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_append_only;
    ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_no_truncate;
    REVOKE UPDATE, DELETE, TRUNCATE ON merkle_nodes FROM PUBLIC;
    
-- Records in O(caps), as SQLite's step 6 (ledger/spans.py); the store fills the table when it opens.

    CREATE TABLE inbound_spans (
        cited text COLLATE "C" NOT NULL,
        citing text COLLATE "C" NOT NULL,
        reference_index bigint NOT NULL,
        observation_id text COLLATE "C" NOT NULL,
        t_from bigint NOT NULL,
        t_to bigint NOT NULL,
        citation_seq bigint NOT NULL,
        resolution_seq bigint NOT NULL,
        k_from bigint NOT NULL,
        k_to bigint NOT NULL,
        PRIMARY KEY (cited, citing, reference_index, observation_id, t_from, k_from)
    );
    CREATE INDEX inbound_spans_observation ON inbound_spans (observation_id, t_from, k_from);
    CREATE INDEX inbound_spans_from ON inbound_spans (cited, k_to, t_from);
    -- only spans that end (an observation re-resolved away): most never do
    CREATE INDEX inbound_spans_to ON inbound_spans (cited, k_to, t_to) WHERE t_to < 9223372036854775807;
    CREATE TABLE inbound_counts (
        cited text COLLATE "C" NOT NULL,
        bucket bigint NOT NULL,
        starts bigint NOT NULL,
        ends bigint NOT NULL,
        PRIMARY KEY (cited, bucket)
    );
    CREATE TABLE derived_pending (name text COLLATE "C" PRIMARY KEY);
    INSERT INTO derived_pending (name) SELECT 'inbound_spans' WHERE EXISTS (SELECT 1 FROM events);
    
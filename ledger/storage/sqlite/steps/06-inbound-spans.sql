-- Records in O(caps) (ledger/spans.py): when each observation points at which paper, by observed
-- and by recorded time, and the spans known now counted per paper and bucket of observed time. Its
-- rows are computed in Python, so a ledger that already holds events is marked for the store to fill
-- both tables when it opens (SqlTables.fill_spans).

    CREATE TABLE inbound_spans (
        cited TEXT NOT NULL,
        citing TEXT NOT NULL,
        reference_index INTEGER NOT NULL,
        observation_id TEXT NOT NULL,
        t_from INTEGER NOT NULL,
        t_to INTEGER NOT NULL,
        citation_seq INTEGER NOT NULL,
        resolution_seq INTEGER NOT NULL,
        k_from INTEGER NOT NULL,
        k_to INTEGER NOT NULL,
        PRIMARY KEY (cited, citing, reference_index, observation_id, t_from, k_from)
    ) WITHOUT ROWID;
    CREATE INDEX inbound_spans_observation ON inbound_spans (observation_id, t_from, k_from);
    CREATE INDEX inbound_spans_from ON inbound_spans (cited, k_to, t_from);
    -- only spans that end (an observation re-resolved away): most never do
    CREATE INDEX inbound_spans_to ON inbound_spans (cited, k_to, t_to) WHERE t_to < 9223372036854775807;
    CREATE TABLE inbound_counts (
        cited TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        starts INTEGER NOT NULL,
        ends INTEGER NOT NULL,
        PRIMARY KEY (cited, bucket)
    ) WITHOUT ROWID;
    CREATE TABLE derived_pending (name TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT INTO derived_pending (name) SELECT 'inbound_spans' WHERE EXISTS (SELECT 1 FROM events);
    
-- Step 9, title search (ledger/search.py): each distinct title of a paper (observation_id '') or of a
-- reference in its citing paper, with the first event that carried it, and the GIN-indexed tsvector
-- of its words ('simple': no stemming, as SQLite's unicode61). Distinct by the title's md5, since a
-- B-tree entry holds some 2.7 kB and a title may hold 16,384 characters. No append writes them: a
-- search first indexes the events past the cursor.

    CREATE TABLE search_titles (
        seq bigint NOT NULL,
        arxiv_id text COLLATE "C" NOT NULL,
        observation_id text COLLATE "C" NOT NULL,
        reference_index integer,
        title text COLLATE "C" NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', title)) STORED
    );
    CREATE UNIQUE INDEX search_titles_key ON search_titles (arxiv_id, observation_id, md5(title));
    CREATE INDEX search_titles_words ON search_titles USING GIN (words);
    CREATE TABLE search_cursor (id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);
    INSERT INTO search_cursor (id, seq) VALUES (1, 0);
    
-- Step 12, the resolver's catalogue (ledger/storage/derived/catalogue.py): one row per DOI (its latest
-- work.observed) and per arXiv paper (its latest paper.observed), replaced in place as later ones arrive,
-- with the GIN-indexed tsvector of title, authors and container. No append writes them: a reader first
-- extends them from the events past the cursor. catalogue_terms counts the works holding each word a
-- search may look for, so that a search looks for the rarest words of a text.

    CREATE TABLE catalogue_works (
        ident text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL,
        observed_at text COLLATE "C" NOT NULL,
        observed_us bigint NOT NULL,
        source text COLLATE "C" NOT NULL,
        doi text COLLATE "C",
        arxiv_id text COLLATE "C",
        doi_key text COLLATE "C",
        arxiv_key text COLLATE "C",
        title text COLLATE "C",
        authors text COLLATE "C" NOT NULL,
        container text COLLATE "C",
        year bigint,
        volume text COLLATE "C",
        issue text COLLATE "C",
        first_page text COLLATE "C",
        type text COLLATE "C",
        vol_key text COLLATE "C",
        page_key text COLLATE "C",
        search_text text COLLATE "C" NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED
    );
    CREATE INDEX catalogue_works_words ON catalogue_works USING GIN (words);
    CREATE INDEX catalogue_works_doi_key ON catalogue_works (doi_key);
    CREATE INDEX catalogue_works_arxiv_key ON catalogue_works (arxiv_key);
    CREATE INDEX catalogue_works_volume_page ON catalogue_works (vol_key, page_key);
    CREATE TABLE catalogue_terms (
        term text COLLATE "C" PRIMARY KEY,
        docs bigint NOT NULL
    );
    CREATE TABLE catalogue_cursor (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL
    );
    INSERT INTO catalogue_cursor (id, seq) VALUES (1, 0);

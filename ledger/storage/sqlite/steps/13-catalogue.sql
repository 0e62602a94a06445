-- Step 13, the resolver's catalogue (ledger/storage/derived/catalogue.py): one row per DOI (its latest
-- work.observed) and per arXiv paper (its latest paper.observed), replaced in place as later ones arrive,
-- with an FTS5 index over title, authors and container that follows updates. No append writes them: a
-- reader first extends them from the events past the cursor. catalogue_terms counts the works holding
-- each word a search may look for, so that a search looks for the rarest words of a text.

    CREATE TABLE catalogue_works (
        ident TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        observed_at TEXT NOT NULL,
        observed_us INTEGER NOT NULL,
        source TEXT NOT NULL,
        doi TEXT,
        arxiv_id TEXT,
        doi_key TEXT,
        arxiv_key TEXT,
        title TEXT,
        authors TEXT NOT NULL,
        container TEXT,
        year INTEGER,
        volume TEXT,
        issue TEXT,
        first_page TEXT,
        type TEXT,
        vol_key TEXT,
        page_key TEXT,
        search_text TEXT NOT NULL
    );
    CREATE INDEX catalogue_works_doi_key ON catalogue_works (doi_key);
    CREATE INDEX catalogue_works_arxiv_key ON catalogue_works (arxiv_key);
    CREATE INDEX catalogue_works_volume_page ON catalogue_works (vol_key, page_key);
    CREATE TABLE catalogue_terms (
        term TEXT PRIMARY KEY,
        docs INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE catalogue_cursor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL
    );
    CREATE VIRTUAL TABLE catalogue_works_fts USING FTS5 (
        search_text,
        tokenize='unicode61 remove_diacritics 0',
        content="catalogue_works"
    );
    CREATE TRIGGER catalogue_works_ai AFTER INSERT ON catalogue_works BEGIN
        INSERT INTO catalogue_works_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
    END;
    CREATE TRIGGER catalogue_works_ad AFTER DELETE ON catalogue_works BEGIN
        INSERT INTO catalogue_works_fts (catalogue_works_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
    END;
    CREATE TRIGGER catalogue_works_au AFTER UPDATE ON catalogue_works BEGIN
        INSERT INTO catalogue_works_fts (catalogue_works_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
        INSERT INTO catalogue_works_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
    END;
    INSERT INTO catalogue_cursor (id, seq) VALUES (1, 0);

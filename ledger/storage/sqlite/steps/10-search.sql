-- Step 10, title search (ledger/search.py): each distinct title of a paper (observation_id '') or of a
-- reference in its citing paper, with the first event that carried it, and an FTS5 index over them
-- in the shape sqlite-utils' enable_fts(create_triggers=True) gives (so `sqlite-utils search` and
-- Datasette find it). No append writes them: a search first indexes the events past the cursor.

    CREATE TABLE search_titles (
        seq INTEGER NOT NULL,
        arxiv_id TEXT NOT NULL,
        observation_id TEXT NOT NULL,
        reference_index INTEGER,
        title TEXT NOT NULL,
        UNIQUE (arxiv_id, observation_id, title)
    );
    CREATE VIRTUAL TABLE search_titles_fts USING FTS5 (
        title,
        tokenize='unicode61 remove_diacritics 0',
        content="search_titles"
    );
    CREATE TRIGGER search_titles_ai AFTER INSERT ON search_titles BEGIN
        INSERT INTO search_titles_fts (rowid, title) VALUES (new.rowid, new.title);
    END;
    CREATE TABLE search_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
    INSERT INTO search_cursor (id, seq) VALUES (1, 0);
    
"""The title index (ledger/storage/derived/search.py), extended from the events past its cursor."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ledger.storage.derived.keys import (
    OBSERVATION,
)
from ledger.storage.derived.search import INDEX_CHUNK, Found, Hit
from ledger.storage.sql import (
    Dialect,
)
from ledger.storage.tables.shared import (
    TableBase,
)


@functools.cache
def _index_sql(d: Dialect) -> str:
    """INSERT into search_titles the distinct titles that events seq > ? AND seq <= ? carry: a paper's
    own, and the cited work's of a citation or a resolution (whose reference index is its citation's),
    each under the paper of the event's stream; a title already there keeps its first seq."""
    paper = "type = 'paper.observed'"
    citation = (
        f"SELECT CAST({d.json_text('reference_index')} AS INTEGER) FROM events "
        "WHERE type = 'citation.observed' AND "
        f"seq IN (SELECT seq FROM event_keys_all WHERE key = '{OBSERVATION}' || t.observation_id) LIMIT 1"
    )
    return (
        "INSERT INTO search_titles (seq, arxiv_id, observation_id, reference_index, title) "
        "SELECT seq, arxiv_id, observation_id, "
        f"CASE WHEN type = 'resolution.observed' THEN ({citation}) ELSE reference_index END, title FROM ("
        "  SELECT seq, type, substr(stream, 7) AS arxiv_id,"
        f"  CASE WHEN {paper} THEN '' ELSE {d.json_text('observation_id')} END AS observation_id,"
        f"  CASE WHEN type = 'citation.observed' THEN CAST({d.json_text('reference_index')} AS INTEGER) END"
        "    AS reference_index,"
        f"  trim(CASE WHEN {paper} THEN {d.json_text('title')} ELSE {d.json_text('cited_work.title')} END)"
        "    AS title"
        "  FROM events WHERE seq > ? AND seq <= ?"
        "  AND type IN ('paper.observed', 'citation.observed', 'resolution.observed')"
        ") AS t WHERE title IS NOT NULL AND title <> '' ORDER BY seq "
        "ON CONFLICT DO NOTHING"
    )


class SqlSearch(TableBase):
    """The title index and its cursor."""

    def titles_indexed(self) -> int:
        """The last seq whose titles the search index holds."""
        return int(self._q("SELECT seq FROM search_cursor WHERE id = 1").fetchone()[0])

    def index_titles(self, upto: int) -> int:
        """Index the titles of the events after the cursor up to seq `upto` (a committed head), a chunk
        per transaction; returns the seq indexed through (where it stopped on a ledger that cannot be
        written: a read-only file or role). Appends are not held up on PostgreSQL; on SQLite each chunk
        holds the file's write lock for the one statement that fills it."""
        done = self.titles_indexed()
        while done < upto:
            try:
                with self.store.transaction(self.store.search_begin):
                    start = self.titles_indexed()  # another process may have gone further meanwhile
                    end = min(upto, start + INDEX_CHUNK)
                    if start < end:
                        self._q(_index_sql(self.store.dialect), (start, end))
                        self._q("UPDATE search_cursor SET seq = ? WHERE id = 1", (end,))
            except self.store.readonly_errors:
                return done
            done = max(start, end)
        return done

    def search_titles(self, words: Sequence[str], limit: int, offset: int) -> Found:
        """The titles holding every word (each as a prefix): papers first, then references by citing
        paper and reference index; the page `offset`..`offset+limit` of them, and how many in all."""
        d = self.store.dialect
        query = d.title_query(words)
        # one read, so the count and the page see the same index
        with self.store.reading() as conn:
            total = self.store.query(
                conn, f"SELECT count(*) FROM search_titles WHERE {d.title_match()}", (query,)
            ).fetchone()[0]
            rows = self.store.query(
                conn,
                "SELECT arxiv_id, observation_id, reference_index, title, seq FROM search_titles "
                f"WHERE {d.title_match()} ORDER BY observation_id <> '', arxiv_id, reference_index, "
                "observation_id, title LIMIT ? OFFSET ?",
                (query, limit, offset),
            ).fetchall()
            through = int(self.store.query(conn, "SELECT seq FROM search_cursor WHERE id = 1").fetchone()[0])
        return Found(int(total), [Hit(*r) for r in rows], through)

"""The works known as of T and the facts about them: what a source ingest and a diff match against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec

from ledger.model.events import GlanceWork
from ledger.model.facts import (
    CheckRow,
    Fact,
)
from ledger.storage.derived import spans
from ledger.storage.derived.keys import (
    OBSERVATION,
    WORK,
    WORK_KEYS,
    cited_keys,
)
from ledger.storage.derived.spans import (
    CITATION,
)
from ledger.storage.sql import (
    FACT_COLUMNS,
    FAR_FUTURE,
    Dialect,
    fact_row,
)
from ledger.storage.tables.reader import ReaderStore, SqlReader
from ledger.storage.tables.shared import (
    TableBase,
    TableStore,
)


def works_tail(d: Dialect) -> str:
    """The condition on events (one bound instant, T) of the citations and resolutions observed as of
    T past the works-index keys' position whose cited work has a work_id: the ones a reader folds in."""
    return (
        f"type IN ('{CITATION}', '{spans.RESOLUTION}') AND seq > coalesce("
        f"(SELECT seq FROM projections WHERE name = '{WORK_KEYS}'), 0) "
        "AND seq <= (SELECT max(seq) FROM events) "
        f"AND observed_us <= ? AND {d.json_text('cited_work.work_id')} IS NOT NULL"
    )


def fact_keys(f: Fact) -> list[str]:
    """The works-index keys of a citation's or resolution's cited work (none without a work_id)."""
    w = f.data.cited_work
    return [] if w is None or w.work_id is None else cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


_CITED_WORK = msgspec.json.Decoder(GlanceWork)


def work_keys_of(work: str) -> list[str]:
    """The works-index keys of a cited work given as JSON text (one with a work_id)."""
    w = _CITED_WORK.decode(work)
    return cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


class WorksStore(TableStore, ReaderStore, Protocol):
    """What the lookups use of their store: its statements, and a record's reader over them."""


class SqlWorks(TableBase):
    """Ledger-wide lookups over every observation (source adapters, diff, alerts)."""

    def __init__(self, store: WorksStore) -> None:
        super().__init__(store)
        self.store: WorksStore = store

    def current_checks(self, work_ids: Sequence[str]) -> list[CheckRow]:
        """Per work and source, the latest standing check covering it, known now (as a record shows),
        read in whatever transaction this thread is in."""
        reader = SqlReader(self.store, self.store.connection(), FAR_FUTURE, FAR_FUTURE)
        return reader.work_checks([(w, -FAR_FUTURE) for w in work_ids])

    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]:
        """(observation_id, type, cited_work JSON) of each observation's latest citation and resolution."""
        # greatest observed_us, ties to the later seq, with only cited_work extracted
        d = self.store.dialect
        oid = d.json_text("observation_id")
        rows = self._q(
            "SELECT observation_id, type, cited_work FROM ("
            f"  SELECT {oid} AS observation_id, type, {d.json_value('cited_work')} AS cited_work,"
            f"   row_number() OVER (PARTITION BY {oid}, type ORDER BY observed_us DESC, seq DESC) AS rn"
            "  FROM events WHERE type IN ('citation.observed', 'resolution.observed') AND observed_us <= ?"
            ") AS latest WHERE rn = 1",
            (as_of_us,),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def paper_ids(self, as_of_us: int) -> list[str]:
        """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
        rows = self._q(
            "SELECT DISTINCT substr(stream, 7) AS id FROM events "
            "WHERE type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
            (as_of_us,),
        )
        return [r[0] for r in rows]

    def work_facts(self, index_keys: Sequence[str], as_of_us: int) -> list[Fact]:
        """Citations and resolutions observed as of T of the observations with an event observed as
        of T under one of these works-index keys (derived/keys.py), in seq order. The keys are a
        projection: the observations of the events past its position that cite a work with a work_id
        are read too (flagged), and kept here if one of those events has one of these keys."""
        d = self.store.dialect
        oid = d.json_text("observation_id")
        # the observations found once (inlined, they were found again for each level of their keys)
        rows = self._q(
            "WITH found(key) AS MATERIALIZED ("
            f"  SELECT '{OBSERVATION}' || {oid} FROM event_keys_all AS w"
            "   JOIN events ON events.seq = w.seq"
            f"   WHERE {d.any_of('w.key')} AND events.observed_us <= ?), "
            f" tail(key) AS MATERIALIZED ("
            f"  SELECT '{OBSERVATION}' || {oid} FROM events WHERE {works_tail(d)}) "
            f"SELECT {FACT_COLUMNS}, '{OBSERVATION}' || {oid} IN (SELECT key FROM found) "
            "FROM events WHERE seq IN (SELECT o.seq FROM event_keys_all AS o "
            "  WHERE o.key IN (SELECT key FROM found UNION SELECT key FROM tail)) "
            "AND observed_us <= ? ORDER BY seq",
            (d.bind_list(index_keys), as_of_us, as_of_us, as_of_us),
        ).fetchall()
        facts = [(fact_row(r[:5]), bool(r[5])) for r in rows]
        if all(found for _, found in facts):
            return [f for f, _ in facts]
        wanted = set(index_keys)
        # an observation read only for its events past the position: kept if one of them has a key
        kept = {f.data.observation_id for f, found in facts if found or wanted.intersection(fact_keys(f))}
        return [f for f, _ in facts if f.data.observation_id in kept]

    def work_observations(self, as_of_us: int) -> list[str]:
        """Ids of the observations with an event observed as of T under any works-index key, sorted."""
        # a range of the keys' order on each level: only events whose cited work has a key are read;
        # the events past the keys' position that cite a work with a work_id come with their work
        d = self.store.dialect
        oid = d.json_text("observation_id")
        rows = self._q(
            f"SELECT DISTINCT {oid}, NULL FROM events WHERE seq IN ("
            f"  SELECT seq FROM event_keys_all WHERE key >= '{WORK}' AND key < '{WORK[0]};') "
            f"AND observed_us <= ? UNION ALL SELECT {oid}, {d.json_value('cited_work')} FROM events "
            f"WHERE {works_tail(d)} ORDER BY 1",
            (as_of_us, as_of_us),
        )
        out: list[str] = []
        for o, work in rows:
            if (work is None or work_keys_of(work)) and (not out or out[-1] != o):
                out.append(o)
        return out

    def papers_among(self, arxiv_ids: Sequence[str], as_of_us: int) -> list[str]:
        """Those of the given arXiv ids with a paper.observed snapshot as of T, sorted."""
        d = self.store.dialect
        rows = self._q(
            "SELECT DISTINCT substr(stream, 7) FROM events "
            f"WHERE {d.any_of('stream')} AND type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
            (d.bind_list([f"paper:{a}" for a in arxiv_ids]), as_of_us),
        )
        return [r[0] for r in rows]

    def observation_facts(self, observation_ids: Sequence[str], after_us: int, until_us: int) -> list[Fact]:
        """Citations and resolutions of the given observations observed in (after, until], in seq order."""
        d = self.store.dialect
        # sorted here: with ORDER BY seq PostgreSQL merge-joined the keys to the whole events index
        rows = self._q(
            f"SELECT {FACT_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')} "
            "AND observed_us > ? AND observed_us <= ?",
            (d.bind_list([OBSERVATION + o for o in observation_ids]), after_us, until_us),
        )
        return sorted(map(fact_row, rows), key=lambda f: f.seq)

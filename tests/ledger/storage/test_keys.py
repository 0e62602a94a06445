"""The lookup keys (ledger/storage/derived/keys.py): what each event implies, the two levels, and the
layout upgrade."""

from __future__ import annotations

import hashlib

import pytest

from ledger.model import events as ev
from ledger.model.codec import canonical
from ledger.model.instants import parse_ts
from ledger.storage.backend import is_pg_url
from ledger.storage.derived.keys import LONG_KEY, key_rows, link_keys, link_work_keys, work_index_key
from ledger.storage.projector import READ_BY_RECORDS
from service.ledger import Ledger
from service.sources import SourceFile, parse_source
from tests.conftest import NewDb
from tests.factories import check, citation, notice, paper, resolution, ts, work
from tests.ledger.storage.test_works_store import rebound_events
from tests.old_layout import build_old_ledger, version_before
from tests.raw import rows
from tests.service.sources.test_sources_support import SOURCES_DIR

OID = "0b7f3c9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
A, B = "2101.00001", "2101.00002"
DOI_WORK = ev.CitedWork(B, "https://doi.org/10.5555/X.1", "crossref", B, ts(2), None, None, "w-doi", None)


def _keys_of(ledger: Ledger, event: ev.Event) -> list[str]:
    """The keys `event` implies: those its append writes (its event id and observation id), then the
    works-index keys the projector writes after it (each as stored)."""
    ledger.append([event])
    seq = ledger.head().seq
    link = list(ledger.store.iter_chain(after=seq - 1))[0]
    stored = "SELECT key FROM event_keys_all WHERE seq = ? ORDER BY key"
    appended = [k for (k,) in rows(ledger.url, stored, (seq,))]
    assert sorted(link_keys(link)) == appended  # the append writes no works-index key
    ledger.ops.project(READ_BY_RECORDS)
    assert sorted(link_keys(link) + link_work_keys(link)) == [k for (k,) in rows(ledger.url, stored, (seq,))]
    return link_keys(link) + link_work_keys(link)


@pytest.mark.parametrize(
    ("events", "kinds"),
    [
        pytest.param([paper(A, ts(0))], ["e:"], id="paper"),
        pytest.param([citation(OID, A, ts(1))], ["e:", "o:"], id="citation"),
        pytest.param([citation(OID, A, ts(1)), resolution(OID, ts(2), cited_arxiv=B)], ["e:", "o:"],
                     id="resolution-to-an-arxiv-paper"),
        pytest.param([citation(OID, A, ts(1)), resolution(OID, ts(2), "unresolved")], ["e:", "o:"],
                     id="resolution-to-no-paper"),
        pytest.param([check("crossref", ts(3), ["w-1"])], ["e:"], id="standing-check"),
        pytest.param([citation(OID, A, ts(1), 0, work("w-1", ts(1), pith=B))], ["e:", "o:", "w:"],
                     id="citation-of-a-keyed-work"),
        pytest.param([citation(OID, A, ts(1), 0, work(None, ts(1), pith=B))], ["e:", "o:"],
                     id="citation-of-a-keyed-work-without-work-id"),
        pytest.param([citation(OID, A, ts(1)), resolution(OID, ts(2), cited_arxiv=B, cited=DOI_WORK)],
                     ["e:", "o:", "w:", "w:"], id="resolution-to-a-work-with-a-doi-and-arxiv-id"),
    ],
)  # fmt: skip
def test_each_event_implies_its_keys(fresh_ledger: Ledger, events: list[ev.Event], kinds: list[str]) -> None:
    fresh_ledger.append(events[:-1])
    keys = _keys_of(fresh_ledger, events[-1])
    assert [k[:2] for k in keys] == kinds
    appended = fresh_ledger.store.read_log()[-1]
    assert keys[0] == "e:" + appended.event_id
    if "o:" in kinds:
        assert keys[1] == "o:" + OID
    # the cited work's match keys, one each (its arXiv id and pith_arxiv_id give one key)
    want: dict[str | None, list[str]] = {
        "w-1": ["w:10.48550/arxiv.2101.00002"],
        "w-doi": ["w:10.48550/arxiv.2101.00002", "w:10.5555/x.1"],
    }
    assert [k for k in keys if k.startswith("w:")] == want.get(_work_id(events[-1]), [])


def _work_id(event: ev.Event) -> str | None:
    w = getattr(event.data, "cited_work", None)
    return None if w is None else w.work_id


def test_a_long_match_key_is_kept_as_its_digest(fresh_ledger: Ledger) -> None:
    long_doi = "10.5555/" + "Y" * LONG_KEY
    cited = ev.CitedWork(None, long_doi, "crossref", None, ts(1), None, None, "w-long", None)
    keys = _keys_of(fresh_ledger, citation(OID, A, ts(1), 0, cited))
    digest = hashlib.sha256(long_doi.lower().encode()).hexdigest()
    assert keys[2:] == ["w:#" + digest] == [work_index_key(long_doi.lower())]


def _levels(db: str) -> tuple[int, ...]:
    """Keys at the merged, deep, middle and recent levels."""
    levels = ("", "_deep", "_middle", "_recent")
    return tuple(int(rows(db, f"SELECT count(*) FROM event_keys{s}")[0][0]) for s in levels)


def _cite(i: int) -> list[ev.Event]:
    """Paper A's i-th citation of paper B, resolved to it (four keys: two event ids, the observation's
    twice)."""
    oid = f"0b7f3c9e-1c2d-4e5f-8a9b-{i:012d}"
    return [
        citation(oid, A, ts(10 + i), i, work(f"w-{i}", ts(10 + i))),
        resolution(oid, ts(10 + i, 1), cited_arxiv=B),
    ]


# (what is appended, the keys at each level after it: merged, deep, middle, recent), levels of 4, 8, 16
MOVED_DOWN = [
    ("papers A and B", (0, 0, 0, 2)),
    ("citation 0: seqs 3-4, the recent level covers 4 events and moves", (0, 0, 6, 0)),
    ("citation 1", (0, 0, 6, 4)),
    ("citation 2: seq 8 passes 4 and 8, recent into middle, middle into deep", (0, 14, 0, 0)),
    ("citation 3", (0, 14, 0, 4)),
    ("citation 4: seq 12", (0, 14, 8, 0)),
    ("citation 5", (0, 14, 8, 4)),
    ("citation 6: seq 16 passes 4, 8 and 16, every level into the merged one", (30, 0, 0, 0)),
    ("citation 7", (30, 0, 0, 4)),
    ("citation 8: seq 20", (30, 0, 8, 0)),
    ("citation 9", (30, 0, 8, 4)),
    ("citation 10: seq 24", (30, 16, 0, 0)),
    ("citation 11", (30, 16, 0, 4)),
    ("citation 12: seq 28", (30, 16, 8, 0)),
    ("citation 13", (30, 16, 8, 4)),
]


def test_keys_move_down_the_levels_and_lookups_read_all_four(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ledger.storage.sql_store.MOVES", (4, 8, 16))
    ledger, db = fresh_ledger, fresh_ledger.url
    batches = [[paper(A, ts(0)), paper(B, ts(1))]] + [_cite(i) for i in range(14)]
    for batch, (what, levels) in zip(batches, MOVED_DOWN, strict=True):
        ledger.append(batch)
        assert _levels(db) == levels, what
    # a duplicate is found at every level: citation 0 is merged, 9 deep, 12 middle, 13 recent
    again = ledger.append(_cite(0) + _cite(9) + _cite(12) + _cite(13))
    assert again.duplicates == 8 and ledger.head().seq == 30
    # a resolution whose citation's keys were merged still finds its citing paper
    oid = "0b7f3c9e-1c2d-4e5f-8a9b-000000000000"
    ledger.append([resolution(oid, ts(30), "unresolved")])
    record, _, _ = ledger.record(B, as_of_us=None)
    assert len(record.inbound) == 13  # citation 0 was re-resolved away from B; 1 to 13 remain
    assert ledger.verify().ok


def test_a_record_is_the_same_whichever_level_holds_its_keys(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    works = [f"w-{i}" for i in range(6)]
    # standing checks (their per-work rows a projection, folded in by the record's read): w-1's latest
    # check is the first, w-4's the second, each flagging its work
    events = [paper(A, ts(0)), paper(B, ts(1))] + [e for i in range(3) for e in _cite(i)]
    events += [check("crossref", ts(40), works, [notice("w-1")])] + [e for i in range(3, 6) for e in _cite(i)]
    events += [check("crossref", ts(41), works[3:], [notice("w-4")])]
    built = {}
    for merge in (6, 10**9):
        monkeypatch.setattr("ledger.storage.sql_store.MOVES", (merge, 2 * merge, 2 * merge))
        ledger = Ledger(new_db(f"m{merge}.db"))
        for i in range(0, len(events), 2):
            ledger.append(events[i : i + 2])
        merged, _, _, recent = _levels(ledger.url)
        assert (merged > 0) == (merge == 6) and recent > 0
        inbound, seqs, _ = ledger.record(B, as_of_us=None)
        outbound, _, _ = ledger.record(A, as_of_us=None)
        built[merge] = (
            [o.observation_id for o in inbound.inbound],
            seqs,
            canonical(outbound.outbound).decode(),
        )
        assert ledger.verify().ok
    assert built[6] == built[10**9] and len(built[6][0]) == 6
    assert built[6][2].count('"retraction"') == 2  # both notices reached the record


@pytest.mark.parametrize("layout", ["event_keys", "four_levels"], ids=["no-keys", "three-levels"])
def test_opening_a_ledger_of_the_older_layout_upgrades_it(
    imported_ledger: Ledger, new_db: NewDb, layout: str
) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, layout), imported_ledger)
    if layout == "four_levels":  # the three-level layout kept each cited arXiv id's key
        assert rows(old, "SELECT count(*) FROM event_keys WHERE key LIKE 'c:%'")[0][0] > 0
    assert rows(old, "SELECT count(*) FROM events")[0][0] == imported_ledger.head().seq
    upgraded = Ledger(old)  # migrates the stored layout
    assert upgraded.head() == imported_ledger.head()
    report = upgraded.verify()
    assert report.ok and report.events_checked == imported_ledger.head().seq
    want = sorted(key_rows(list(imported_ledger.store.iter_chain())))
    got = sorted(rows(old, "SELECT key, seq FROM event_keys_all"))
    assert got == [tuple(r) for r in want]
    t = parse_ts("2026-08-10T00:00:00Z")
    assert upgraded.record_bytes("2509.02480", t)[0] == imported_ledger.record_bytes("2509.02480", t)[0]


def test_opening_a_ledger_from_before_the_works_index_adds_its_keys(
    imported_ledger: Ledger, new_db: NewDb
) -> None:
    source = imported_ledger
    source.append(rebound_events())
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "work_keys"), source)
    assert rows(old, "SELECT count(*) FROM event_keys_all WHERE key LIKE 'w:%'")[0][0] == 0
    upgraded = Ledger(old)  # derives the works-index keys of the stored events
    want = sorted(key_rows(list(source.store.iter_chain())))
    got = sorted(rows(old, "SELECT key, seq FROM event_keys_all"))
    assert got == [tuple(r) for r in want] and sum(k.startswith("w:") for k, _ in got) > 10
    report = upgraded.verify()
    assert report.ok and report.events_checked == source.head().seq
    body = (SOURCES_DIR / "retraction_watch.csv").read_bytes()
    for at in (ts(2), ts(6)):
        a, b = (parse_source(x, SourceFile("retraction-watch", body, at)) for x in (upgraded, source))
        assert (a.events, a.summary.to_dict()) == (b.events, b.summary.to_dict())


def test_a_move_renews_the_statistics_postgresql_plans_by(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL plans lookups by table statistics: a level it last saw empty, and now holding the
    moved rows, would be scanned whole for each key (measured: 2 s a 1000-event batch instead of 0.15)."""
    if not is_pg_url(fresh_ledger.url):
        pytest.skip("SQLite keeps no statistics unless ANALYZE is run, and plans these by their indexes")
    monkeypatch.setattr("ledger.storage.sql_store.MOVES", (4, 8, 16))
    fresh_ledger.append([paper(A, ts(0)), paper(B, ts(1))] + _cite(0))
    analyzed = rows(
        fresh_ledger.url,
        "SELECT relname FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL ORDER BY relname",
    )
    assert {"event_keys_middle", "event_keys_recent", "check_works_middle"} <= {r[0] for r in analyzed}

"""A broken chain on the page: `ledger serve --workers 2` walks the whole chain once at start-up, and every
page that shows a record or a paper says at its top that the chain is broken and from which seq.

The edit is the tour's (docs/tour.md): the paper snapshot's stored bytes changed in place, its hash left
alone, after `ledger verify` moved the verified point past it, so no resumed verify re-hashes it again.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import msgspec
from click.testing import CliRunner

from api.records.render import render_error_page, render_index_page, render_paper_page, render_record_page
from cli.main import main
from ledger.model.facts import ScrubPass
from ledger.model.instants import SYSTEM_CLOCK
from ledger.model.record_types import Record
from ledger.storage.backend import is_pg_url, side_path
from service.ledger import Ledger
from service.ops import scrub
from service.ops.scrub import PassLog
from tests import raw
from tests.api_fixtures import Server, from_both_workers, running_server, worker_of
from tests.conftest import NewDb
from tests.paths import ROOT
from tests.waiting import wait_until

SAMPLE = ROOT / "ledger" / "samples" / "2509.02480.record.json"
PAPER = "2509.02480"
N = 132  # the sample's events
EDITED = 1  # the paper snapshot: its title is on every page of the paper
TITLE, ALTERED = "MLP-Offload", "LLP-Offload"
RECORD, PAPER_PAGE = f"/paper/{PAPER}/citation-record", f"/paper/{PAPER}"
BANNER = re.compile(r'<div id="chain-broken" class="box broken" role="alert">.*?</div>', re.S)
DEADLINE_S = 60.0


def _verified_ledger(db: str) -> None:
    """The sample, then `ledger verify`: a good full walk recorded and the verified point at the head."""
    ledger = Ledger(db)
    ledger.import_bytes(SAMPLE.read_bytes())
    ledger.close()
    result = CliRunner().invoke(main, ["verify", "--db", db])
    assert result.exit_code == 0, result.output


def _tamper(db: str) -> None:
    """The tour's edit, on either backend: the stored title changed, the hash not (triggers off)."""
    raw.edit(db, f"UPDATE events SET data = replace(data, '{TITLE}', '{ALTERED}') WHERE seq = {EDITED}")


def _passes(db: str) -> list[tuple[str, bool, int | None]]:
    rows = raw.rows(db, "SELECT kind, ok, first_bad_seq FROM scrub_passes ORDER BY id")
    return [(kind, bool(ok), bad) for kind, ok, bad in rows]


def _health(server: Server) -> httpx.Response:
    return httpx.get(f"{server.base}/healthz", timeout=10)


@contextmanager
def _two_workers(db: str, *extra: str) -> Iterator[Server]:
    env = {"LEDGER_LOG_FORMAT": "json"}
    with running_server(db, env=env, args=["--workers", "2", *extra], ready=(200, 503)) as server:
        yield server


def _assert_banner(page: httpx.Response, seq: int) -> None:
    assert page.status_code == 200, page.text
    found = BANNER.search(page.text)
    assert found is not None, page.text[:3000]
    assert f"The ledger's chain is broken at seq {seq}:" in found[0]
    assert "stored bytes do not match the stored hash" in found[0]
    # at the top: before the page's own heading
    assert found.start() < page.text.index("<h1")
    assert page.headers["Ledger-Chain"] == f"broken {seq}"


def test_a_broken_chain_is_named_at_the_top_of_every_page_by_both_workers_after_one_walk(
    new_db: NewDb,
) -> None:
    db = new_db()
    _verified_ledger(db)
    _tamper(db)
    with _two_workers(db) as server:
        # the walk runs in the background at start-up; the server answered /healthz meanwhile
        wait_until(lambda: _health(server).status_code == 503, "the start-up walk finds the edit")
        assert _health(server).json()["error"]["details"]["first_bad_seq"] == EDITED
        for path in (RECORD, PAPER_PAGE):
            for page in from_both_workers(server, path):
                _assert_banner(page, EDITED)
        record = httpx.get(server.base + RECORD)
        assert f"<h1>{ALTERED}" in record.text  # the altered title is served, under the banner
        for path in ("/", f"/search?q={ALTERED}"):
            _assert_banner(httpx.get(server.base + path), EDITED)
        # what changed and the integrity report, as a browser gets them
        browser = {"Accept": "text/html,*/*;q=0.8"}
        for path in (f"{PAPER_PAGE}/integrity", f"{PAPER_PAGE}/changes?from=2026-08-07"):
            _assert_banner(httpx.get(server.base + path, headers=browser), EDITED)
        # the record's JSON as of now, and as of an instant (twice: built, then from the cache)
        as_of = f"{RECORD}.json?as_of=2026-08-08T08:47:00Z"
        for path in (f"{RECORD}.json", as_of, as_of, f"{PAPER_PAGE}/integrity"):
            r = httpx.get(server.base + path)
            assert r.status_code == 200 and r.headers["Ledger-Chain"] == f"broken {EDITED}"
        snapshots = httpx.get(server.base + PAPER_PAGE, headers={"accept": "application/json"})
        assert snapshots.headers["Ledger-Chain"] == f"broken {EDITED}"
        # one walk for the whole server, recorded where every worker reads it
        assert _passes(db) == [("verify", True, None), ("scrub", False, EDITED)]


def test_an_untampered_ledger_is_walked_once_and_shows_no_banner(new_db: NewDb) -> None:
    db = new_db()
    _verified_ledger(db)
    with _two_workers(db) as server:
        wait_until(lambda: len(_passes(db)) == 2, "the start-up walk is recorded")
        walk = _health(server).json()["last_full_walk"]
        assert (walk["by"], walk["ok"], walk["walked"]) == ("scrub", True, {"from": 1, "to": N})
        for path in (RECORD, PAPER_PAGE):
            for page in from_both_workers(server, path):
                assert page.status_code == 200 and 'role="alert"' not in page.text
                assert "Ledger-Chain" not in page.headers and "chain-broken" not in page.text
        assert _passes(db) == [("verify", True, None), ("scrub", True, None)]


def _files(db: str) -> list[str]:
    """The files next to the ledger (SQLite's own -wal and -shm come and go with its connections)."""
    directory = side_path(db, ".key").parent
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(("-wal", "-shm")))


def test_a_read_only_server_walks_in_each_worker_in_memory_and_writes_nothing(new_db: NewDb) -> None:
    db = new_db()
    _verified_ledger(db)
    _tamper(db)
    before = (_passes(db), raw.rows(db, "SELECT seq, hash FROM verified_point"), _files(db))
    with _two_workers(db, "--read-only") as server:
        # each worker walks for itself, in memory: both show the break once their own walk is done
        showing: set[int] = set()

        def both_show_it() -> bool:
            page = httpx.get(server.base + RECORD, timeout=10)
            assert page.status_code == 200
            if BANNER.search(page.text) is not None:
                showing.add(worker_of(server, page))
            return len(showing) == 2

        wait_until(both_show_it, "both read-only workers show the break")
        health = _health(server)
        assert health.status_code == 503 and health.json()["error"]["details"]["first_bad_seq"] == EDITED
    if not is_pg_url(db):
        assert not side_path(db, ".scrub.lock").exists()
    assert (_passes(db), raw.rows(db, "SELECT seq, hash FROM verified_point"), _files(db)) == before


def test_a_break_found_by_ledger_verify_is_shown_from_the_first_page(new_db: NewDb) -> None:
    """The tour: `ledger verify` found the edit and recorded that walk; a server started afterwards
    shows it from its first page, whether or not its own walk has ended."""
    db = new_db()
    _verified_ledger(db)
    _tamper(db)
    result = CliRunner().invoke(main, ["verify", "--db", db])
    assert result.exit_code == 2, result.output
    with running_server(db, ready=(503,)) as server:
        _assert_banner(httpx.get(server.base + RECORD), EDITED)


# -- without a server process ------------------------------------------------------------------------


def test_a_pass_that_began_before_the_server_started_does_not_count(new_db: NewDb) -> None:
    db = new_db()
    _verified_ledger(db)  # a good pass, a moment ago: not due again for a day
    ledger = Ledger(db)
    store = ledger.store
    passes = PassLog(store, ledger.clock)
    assert scrub._scrub_if_due(store, passes, 86_400.0, threading.Event(), 1.0, scrub.BATCH) > 0
    assert [kind for kind, _, _ in _passes(db)] == ["verify"]
    started = SYSTEM_CLOCK.now_us()
    scrub._scrub_if_due(store, passes, 86_400.0, threading.Event(), 1.0, scrub.BATCH, since_us=started)
    walked = passes.last()
    assert walked is not None and walked.kind == "scrub" and walked.started_us >= started
    # the pass since the start counts: another worker's look, with the same start, walks nothing
    other = Ledger(db).store
    scrub._scrub_if_due(
        other, PassLog(other, ledger.clock), 86_400.0, threading.Event(), 1.0, scrub.BATCH, since_us=started
    )
    assert [kind for kind, _, _ in _passes(db)] == ["verify", "scrub"]


def test_the_banner_is_in_every_page_that_shows_a_record_and_in_no_other() -> None:
    broken = ScrubPass(
        "scrub", "2026-12-01T00:00:00Z", 1, "2026-12-01T00:00:01Z", 2, 0, N, False, 7, "bad hash"
    )
    record = msgspec.json.decode(SAMPLE.read_bytes(), type=Record)
    pages = [
        render_record_page(record, broken=broken),
        render_paper_page(PAPER, [], {}, broken=broken),
        render_index_page([], head="1 ab", broken=broken),
    ]
    for page in pages:
        found = BANNER.search(page)
        assert found is not None and "broken at seq 7:</strong>" in found[0] and "Bad hash." not in found[0]
        assert "bad hash." in found[0] and found.start() < page.index("<h1")
    for page in (render_record_page(record), render_paper_page(PAPER, [], {}), render_error_page(404, "x")):
        assert 'role="alert"' not in page

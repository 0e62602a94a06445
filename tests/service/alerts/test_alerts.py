"""Standing alerts (service/alerts.py): watches, what they cover, one alert per (watch, work, notice)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import pytest

from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import CitedWork
from ledger.model.instants import format_recorded, parse_ts
from service.alerts import alerts as al
from service.alerts.paper_notices import work_name
from service.alerts.watch_spec import parse_watch
from service.alerts.watches import watch_of
from service.ledger import Ledger
from service.sources import SourceFile, ingest
from tests.conftest import NewDb
from tests.factories import check, citation, notice, oid_of, resolution, ts
from tests.service.sources.test_sources_support import CITING, SOURCES_DIR, T_INGEST, cited, sample_ledger

RW = (SOURCES_DIR / "retraction_watch.csv").read_bytes()


def _alerts(ledger: Ledger, watch_id: str) -> list[dict[str, Any]]:
    return [json.loads(a.body) for a in ledger.store.alerts.alerts(watch_id, 0, 1000)]


def _kinds(alerts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((a["work"]["work_id"], a["notice"]["kind"]) for a in alerts)


@pytest.fixture
def sample(new_db: NewDb) -> Ledger:
    """One citing paper whose references cite works with DOIs and an arXiv id
    (tests/service/sources/test_sources_support.py)."""
    return sample_ledger(new_db("sample.db"))


# what the Retraction Watch fixture holds for the sample's works (its ingest summary counts 7 notices)
RW_NOTICES = [
    ("w-arxiv", "retraction"),
    ("w-cell", "expression_of_concern"),
    ("w-cell", "retraction"),
    ("w-hindawi", "retraction"),
    ("w-plos", "correction"),
    ("w-plos", "reinstatement"),
    ("w-plos", "retraction"),
]


def test_a_paper_watch_is_told_of_each_notice_its_references_get_once(sample: Ledger) -> None:
    watch, covered = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    assert {"w-cell", "w-plos", "w-arxiv", "w-old"} <= set(covered)
    assert _alerts(sample, watch.id) == []  # no notice held yet
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    got = _alerts(sample, watch.id)
    assert _kinds(got) == RW_NOTICES
    check_seq = sample.head().seq
    for a in got:
        assert a["event"]["seq"] == check_seq and a["event"]["type"] == "standing.checked"
        assert a["event"]["hash"] == sample.store.read_log(after=check_seq - 1)[0].hash
        assert a["held_before_watch"] is False and a["watch"] == {
            "id": watch.id,
            "kind": "paper",
            "target": CITING,
        }
        assert a["links"]["record"].startswith(f"/paper/{CITING}/citation-record?as_of=")
        assert a["citing"] and all(c["arxiv_id"] == CITING for c in a["citing"])
    # the same file again: the same notices, nothing new
    ingest(sample, SourceFile("retraction-watch", RW, "2026-09-02T12:00:00Z"))
    assert _kinds(_alerts(sample, watch.id)) == RW_NOTICES


def test_a_watch_made_later_gets_the_notices_already_held_marked_as_such(sample: Ledger) -> None:
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    watch, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    got = _alerts(sample, watch.id)
    assert _kinds(got) == RW_NOTICES and all(a["held_before_watch"] for a in got)
    assert al.raise_new(sample.store, sample.clock) == 0  # nothing new since


@pytest.mark.parametrize(
    ("works", "want"),
    [
        pytest.param(["doi:10.5555/J.CELL.2019.05.031"], RW_NOTICES[1:3], id="doi-any-case"),
        pytest.param(["https://doi.org/10.5555/journal.pone.0123456"], RW_NOTICES[4:], id="doi-url"),
        pytest.param(["arxiv:2310.04610"], RW_NOTICES[:1], id="arxiv-id"),
        pytest.param(["doi:10.5555/never.retracted"], [], id="never-noticed"),
    ],
)  # fmt: skip
def test_a_works_watch_is_told_of_the_works_its_keys_match(
    sample: Ledger, works: list[str], want: list[tuple[str, str]]
) -> None:
    watch, _ = al.add_watch(sample.store, sample.clock, parse_watch({"works": works}))
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    assert _kinds(_alerts(sample, watch.id)) == want


def test_each_watch_gets_its_own_alerts_and_a_removed_one_gets_none(sample: Ledger) -> None:
    a, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    b, _ = al.add_watch(sample.store, sample.clock, parse_watch({"works": ["arxiv:2310.04610"]}))
    gone, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    tables = sample.store.alerts
    with tables.updating():
        assert tables.remove_watch(gone.id, "2026-09-01T00:00:00Z")
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    assert len(_alerts(sample, a.id)) == 7 and len(_alerts(sample, b.id)) == 1
    assert _alerts(sample, gone.id) == []
    with pytest.raises(NotFound, match="no watch"):
        watch_of(sample.store, gone.id)
    ids = [json.loads(x.body)["id"] for w in (a, b) for x in tables.alerts(w.id)]
    assert len(set(ids)) == len(ids) == 8


def test_a_work_cited_later_brings_the_notice_it_already_holds(sample: Ledger) -> None:
    watch, covered = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    assert "w-new" not in covered
    sample.append([check("crossref", ts(20), ["w-new"], [notice("w-new", "correction")])])
    assert _alerts(sample, watch.id) == []  # not cited yet
    later = cited("w-new", ts(21), doi="10.5555/new")
    sample.append([citation(oid_of(40), CITING, ts(21), 40, later)])
    got = _alerts(sample, watch.id)
    assert _kinds(got) == [("w-new", "correction")] and got[0]["held_before_watch"] is False
    assert got[0]["citing"] == [{"arxiv_id": CITING, "observation_id": oid_of(40), "reference_index": 40}]
    # the work the notice is on, in its own field, named by its DOI and title
    assert got[0]["work"] == {
        "work_id": "w-new",
        "doi": "10.5555/new",
        "arxiv_id": None,
        "title": "Work w-new",
    }


def test_alerts_are_raised_whatever_appended_the_events(sample: Ledger) -> None:
    """A library append, an NDJSON import and a source ingest all go through Ledger.append: each raises."""
    watch, _ = al.add_watch(
        sample.store, sample.clock, parse_watch({"works": ["doi:10.5555/j.cell.2019.05.031"]})
    )
    sample.append([check("crossref", ts(30), ["w-cell"], [notice("w-cell", "correction")])])
    n: dict[str, Any] = {"work_id": "w-cell", "kind": "withdrawal", "notice_doi": None, "record_id": None,
                         "raw_type": None, "reasons": [], "notice_date": None, "url": None}  # fmt: skip
    line = {"type": "standing.checked", "observed_at": ts(31),
            "data": {"source": "crossref", "work_ids": ["w-cell"], "notices": [n]}}  # fmt: skip
    sample.import_bytes(json.dumps(line).encode() + b"\n")
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    assert _kinds(_alerts(sample, watch.id)) == [
        ("w-cell", "correction"), ("w-cell", "expression_of_concern"), ("w-cell", "retraction"),
        ("w-cell", "withdrawal"),
    ]  # fmt: skip


def test_with_no_watch_raising_reads_only_and_the_first_watch_starts_at_the_head(sample: Ledger) -> None:
    tables = sample.store.alerts
    before = tables.cursor()
    ingest(sample, SourceFile("retraction-watch", RW, T_INGEST))
    assert tables.cursor() == before  # nothing written while nobody watches
    al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    assert tables.cursor() == sample.head().seq


@pytest.mark.parametrize(
    "pasted", [CITING, f"arXiv:{CITING}", f"{CITING}v2", f"https://arxiv.org/abs/{CITING}v1"]
)
def test_a_watched_paper_is_read_as_pasted(pasted: str) -> None:
    spec = parse_watch({"arxiv_id": pasted})
    assert spec == parse_watch({"arxiv_id": CITING})


@pytest.mark.parametrize("pasted", ["arxiv:2310.04610", "arXiv:2310.04610v3", "ARXIV:2310.04610"])
def test_a_watched_work_is_read_as_pasted(pasted: str) -> None:
    assert parse_watch({"works": [pasted]}).keys == parse_watch({"works": ["arxiv:2310.04610"]}).keys


@pytest.mark.parametrize(
    ("body", "where", "why"),
    [
        pytest.param([], "$", "a JSON object", id="not-an-object"),
        pytest.param({}, "$", "exactly one of", id="neither"),
        pytest.param({"arxiv_id": CITING, "works": ["arxiv:2310.04610"]}, "$", "exactly one of", id="both"),
        pytest.param({"arxiv_id": "2509.02480x"}, "arxiv_id", "bad arXiv id", id="not-an-id"),
        pytest.param({"arxiv_id": 2509.02480}, "arxiv_id", "a string", id="a-number"),
        pytest.param({"works": []}, "works", "a list of 1 to", id="no-works"),
        pytest.param({"works": ["isbn:123"]}, "works[0]", "neither doi:", id="unknown-scheme"),
        pytest.param({"works": ["arxiv:nope"]}, "works[0]", "bad arXiv id", id="bad-arxiv"),
        pytest.param({"works": [7]}, "works[0]", "a work is a string", id="not-a-string"),
        pytest.param({"arxiv_id": CITING, "colour": "red"}, "colour", "unknown field", id="unknown-field"),
        pytest.param({"arxiv_id": CITING, "secret": "s"}, "secret", "give a callback_url", id="secret-alone"),
        pytest.param({"arxiv_id": CITING, "callback_url": "http://example.org/h"}, "callback_url",
                     "must be https", id="http"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://u:p@example.org/h"}, "callback_url",
                     "no user or password", id="credentials"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://127.0.0.1/h"}, "callback_url", "loopback",
                     id="loopback"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://169.254.169.254/latest"}, "callback_url",
                     "link-local", id="cloud-metadata"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://10.0.0.8/h"}, "callback_url", "private",
                     id="private"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://[::ffff:127.0.0.1]/h"}, "callback_url",
                     "loopback", id="mapped-loopback"),
        pytest.param({"arxiv_id": CITING, "callback_url": "https://x.org/" + "a" * 3000}, "callback_url",
                     "at most 2048", id="too-long"),
    ],
)  # fmt: skip
def test_a_bad_watch_is_refused_naming_the_field(body: Any, where: str, why: str) -> None:
    with pytest.raises(InvalidEvent, match=why) as info:
        parse_watch(body)
    assert info.value.where == where


@pytest.mark.parametrize(
    ("allow", "url"),
    [
        pytest.param(["127.0.0.1"], "http://127.0.0.1:9/hook", id="allowed-address-by-cidr"),
        pytest.param(["10.0.0.0/8"], "https://10.1.2.3/hook", id="allowed-network"),
        pytest.param(["hooks.internal"], "http://hooks.internal/hook", id="allowed-host-by-name"),
    ],
)
def test_the_operator_opens_exactly_what_it_names(allow: list[str], url: str) -> None:
    spec = parse_watch({"arxiv_id": CITING, "callback_url": url}, allow)
    assert spec.callback_url == url


def test_an_alerts_id_is_stable_and_distinct() -> None:
    key = al.notice_key("retraction_watch", {"kind": "retraction", "work_id": "w"})
    assert al.alert_id("a", "w", key) == al.alert_id("a", "w", key) != al.alert_id("b", "w", key)
    assert key != al.notice_key("crossref", {"kind": "retraction", "work_id": "w"})


def test_an_alert_names_the_work_as_its_observation_displays_it(sample: Ledger) -> None:
    """A reference parsed without a title and resolved to a titled work is named by the resolution's
    arXiv id and title, in the alert's `work`, never under `citing` (where it would read as the citing
    paper's)."""
    raw = CitedWork(None, None, "raw_reference", None, ts(22), None, None, "w-titled", None)
    known = CitedWork("2310.04610", None, "arxiv", None, ts(23), "A titled work", None, "w-titled", 2023)
    sample.append([citation(oid_of(50), CITING, ts(22), 50, raw)])
    sample.append([resolution(oid_of(50), ts(23), cited=known)])
    watch, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    sample.append([check("crossref", ts(24), ["w-titled"], [notice("w-titled", "correction")])])
    (got,) = _alerts(sample, watch.id)
    assert got["work"] == {
        "work_id": "w-titled",
        "doi": None,
        "arxiv_id": "2310.04610",
        "title": "A titled work",
    }
    assert got["citing"] == [{"arxiv_id": CITING, "observation_id": oid_of(50), "reference_index": 50}]
    assert "work_id" not in got
    assert work_name(got["work"]) == "arXiv:2310.04610 “A titled work”"


def _query(link: str) -> dict[str, str]:
    path, _, query = link.partition("?")
    return {k: v[0] for k, v in parse_qs(query, strict_parsing=True).items()}


@pytest.mark.parametrize("made_later", [False, True], ids=["watch-first", "watch-made-later"])
def test_an_alerts_changes_link_runs_forward_and_keeps_the_offset(sample: Ledger, made_later: bool) -> None:
    """`from` is the watch's making, or just before the check when the check is dated earlier (a source
    file observed before the watch was made, appended before or after it); an instant with an offset
    survives the query string (a bare `+` would be read as a space)."""
    at = "2026-09-01T14:00:00+02:00"
    if not made_later:
        watch, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    ingest(sample, SourceFile("retraction-watch", RW, at))
    if made_later:
        watch, _ = al.add_watch(sample.store, sample.clock, parse_watch({"arxiv_id": CITING}))
    alerts = _alerts(sample, watch.id)
    assert len(alerts) == len(RW_NOTICES)
    for a in alerts:
        changes, record = _query(a["links"]["changes"]), _query(a["links"]["record"])
        assert record == {"as_of": at} and changes["to"] == at
        assert parse_ts(watch.created_at) > parse_ts(at)  # the check is dated before the watch
        assert changes["from"] == format_recorded(parse_ts(at) - 1)

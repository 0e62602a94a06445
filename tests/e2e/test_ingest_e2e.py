"""End to end, as a new user would: import the record, ingest a Retraction Watch CSV and an OpenAlex
answer with one command each, then read the record and the diff, now and as of before the ingest."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from cli.main import main
from tests.conftest import FIXTURE_ID, FIXTURE_PATH, NewDb
from tests.service.sources.test_sources_support import SOURCES_DIR

T = "2026-09-01T12:00:00Z"
OID = "ce9ea7f7-381d-48ca-ab94-cb46c01aba5f"  # the fixture's only verified_exact observation
WORK_ID = "42ed2db3-bd24-44d5-b099-4e813676067d"


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def _observation(record: dict[str, Any]) -> dict[str, Any]:
    [o] = [o for o in record["outbound"] if o["observation_id"] == OID]
    return o


def test_retracted_cited_work_shows_in_record_and_diff(new_db: NewDb, fixture_bytes: bytes) -> None:
    db = new_db()
    _run("import", str(FIXTURE_PATH), "--db", db)
    before = json.loads(_run("record", FIXTURE_ID, "--as-of", "2026-08-08T08:47:00Z", "--db", db))
    cited = _observation(before)["citation"]["cited_work"]
    assert (cited["arxiv_id"], cited["pith_arxiv_id"], cited["work_id"]) == (
        "2310.04610",
        "2310.04610",
        WORK_ID,
    )

    out = _run(
        "ingest",
        "retraction-watch",
        str(SOURCES_DIR / "retraction_watch.csv"),
        "--observed-at",
        T,
        "--db",
        db,
    )
    assert "works checked: 1; notices: 1" in out and "1 appended" in out
    out = _run("ingest", "openalex", str(SOURCES_DIR / "openalex_works.json"), "--observed-at", T, "--db", db)
    assert "measurements: 2" in out

    # the record now: the notice on that observation, and what OpenAlex counts
    now = json.loads(_run("record", FIXTURE_ID, "--as-of", "2026-09-02", "--db", db))
    standing = _observation(now)["standing_notice"]
    assert standing["observation"] == f"1 event found in the named queried sources as of {T}."
    [event] = standing["events"]
    assert event == {
        "kind": "retraction",
        "notice_date": "2026-03-14",
        "notice_doi": None,
        "observed_at": T,
        "raw_type": "Retraction",
        "reasons": ["Concerns/Issues About Results and/or Conclusions", "Withdrawal"],
        "record_id": "48213",
        "source": "retraction_watch",
        "url": "https://example.org/rw/48213",
        "work_id": WORK_ID,
    }
    assert {"observed_at": T, "source": "retraction_watch"} in standing["source_receipts"]
    [m] = now["external_citation_measurements"]
    assert (m["source"], m["metric"], m["value"], m["observed_at"]) == ("openalex", "cited_by_count", 4, T)
    others = [o for o in now["outbound"] if o["observation_id"] != OID]
    assert all(not o["standing_notice"]["events"] for o in others)

    # the diff names the observation, the notice and the events responsible
    diff = json.loads(_run("diff", FIXTURE_ID, "2026-08-08T08:47:00Z", "2026-09-02", "--db", db))
    [o] = diff["observations"]
    assert o["observation_id"] == OID and o["cited_work"]["work_id"] == WORK_ID
    [appeared] = [c for c in o["changes"] if c["kind"] == "notice_appeared"]
    assert appeared["notice"]["kind"] == "retraction" and appeared["notice"]["record_id"] == "48213"
    [check] = o["events"]
    assert (check["type"], check["observed_at"]) == ("standing.checked", T)
    [measured] = diff["external_citation_measurements"]
    assert measured["change"] == "added" and [e["type"] for e in measured["events"]] == [
        "measurement.observed"
    ]
    text = _run("diff", FIXTURE_ID, "2026-08-08T08:47:00Z", "2026-09-02", "--text", "--db", db)
    assert "retraction notice appeared: reported by retraction_watch on 2026-03-14" in text
    assert "openalex cited_by_count: None -> 4 (added)" in text

    # and as of the fixture's own instant, nothing moved: the same bytes
    again = CliRunner().invoke(main, ["record", FIXTURE_ID, "--as-of", "2026-08-08T08:47:00Z", "--db", db])
    assert again.stdout_bytes.strip() == fixture_bytes.strip()
    # nor just before the ingest
    just_before = json.loads(_run("record", FIXTURE_ID, "--as-of", "2026-09-01T11:59:59Z", "--db", db))
    same = ("outbound", "standing_sources", "external_citation_measurements", "coverage")
    assert {k: just_before[k] for k in same} == {k: before[k] for k in same}

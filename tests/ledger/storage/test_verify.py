"""verify (ledger/verify.py, `ledger verify`): each kind of damage is named at its first bad seq."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from ledger.model.instants import to_datetime
from ledger.storage import verify
from ledger.storage.backend import is_pg_url
from ledger.storage.verify import CHAIN, DERIVED, TRUNCATION_NOTE
from ledger.tlog.chain import body_bytes, link_hash
from service.ledger import Ledger
from tests.chain_helpers import cut_sql, imported_fixture_db
from tests.raw import copy_db, edit, one, rows

TITLE = b"MLP-Offload"
N = 132  # events of the imported fixture; 131 and 132 are its two standing checks


@pytest.fixture(scope="module")
def base_db(db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The imported fixture; on SQLite checkpointed so the db FILE holds every event (the WAL is empty)."""
    return imported_fixture_db(db_factory, tmp_path_factory.mktemp("verify"))


@pytest.fixture
def copy(base_db: str, tmp_path: Path) -> str:
    """A copy of the imported fixture to damage: the file (SQLite) or a new database (PostgreSQL)."""
    return copy_db(base_db, tmp_path, "tampered.db")


def cli_verify(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["verify", "--db", db, *args])


# -- tamper vectors: each returns the seq verify must name first ----------------------------------


def flipped_bit_data(path: str) -> int:
    """Flip one bit of the title inside the db file's bytes (as ../shared/tools/conformance does)."""
    file = Path(path)
    blob = bytearray(file.read_bytes())
    at = blob.find(TITLE)
    while at >= 0:  # the first copy in the file may be a stale one in free space: flip a live one
        blob[at] ^= 0x01
        file.write_bytes(bytes(blob))
        seq = one(path, "SELECT min(seq) FROM events WHERE instr(data, 'LLP-Offload') > 0")
        if seq is not None:
            return int(seq)
        blob[at] ^= 0x01
        at = blob.find(TITLE, at + 1)
    raise AssertionError("the title is not in the db file")


def flipped_bit_data_column(db: str) -> int:
    """Flip one bit of the title in the stored `data` column, with SQL (any backend): M (0x4D) -> L (0x4C)."""
    seq = int(one(db, "SELECT min(seq) FROM events WHERE data LIKE ?", ("%MLP-Offload%",)))
    data = str(one(db, "SELECT data FROM events WHERE seq = ?", (seq,)))
    at = data.index(TITLE.decode())
    flipped = data[:at] + chr(ord(data[at]) ^ 0x01) + data[at + 1 :]
    edit(db, "UPDATE events SET data = ? WHERE seq = ?", params=(flipped, seq))
    assert one(db, "SELECT data FROM events WHERE seq = ?", (seq,)) == flipped != data
    return seq


def flipped_bit_hash(db: str) -> int:
    stored = str(one(db, "SELECT hash FROM events WHERE seq = 40"))
    raw = bytearray(bytes.fromhex(stored))
    raw[7] ^= 0x10
    edit(db, "UPDATE events SET hash = ? WHERE seq = 40", params=(raw.hex(),))
    return 40


def shifted_hash_boundary(db: str) -> int:
    """The hashes of seq 40 and 41 made 65 and 63 hex digits long, one digit moved across, with the
    prev_hash after each held to it: the stored hashes still join to the chain's, each one is wrong."""
    h40, h41 = (str(one(db, f"SELECT hash FROM events WHERE seq = {seq}")) for seq in (40, 41))
    moved40, moved41 = h40 + h41[0], h41[1:]
    edit(db, "UPDATE events SET hash = ? WHERE seq = 40", params=(moved40,))
    edit(db, "UPDATE events SET hash = ?, prev_hash = ? WHERE seq = 41", params=(moved41, moved40))
    edit(db, "UPDATE events SET prev_hash = ? WHERE seq = 42", params=(moved41,))
    return 40


def reordered(db: str) -> int:
    edit(
        db,
        "UPDATE events SET seq = 1000000 WHERE seq = 10",
        "UPDATE events SET seq = 10 WHERE seq = 11",
        "UPDATE events SET seq = 11 WHERE seq = 1000000",
    )
    return 10


def removed_middle(db: str) -> int:
    edit(db, "DELETE FROM events WHERE seq = 60")
    return 61  # the first stored seq that breaks the sequence: 61 follows 59


def edited_observed_us(db: str) -> int:
    edit(db, "UPDATE events SET observed_us = observed_us + 1 WHERE seq = 70")
    return 70


def edited_recorded_us(db: str) -> int:
    edit(db, "UPDATE events SET recorded_us = recorded_us - 1 WHERE seq = 90")
    return 90


def edited_stream_version(db: str) -> int:
    edit(db, "UPDATE events SET stream_version = 1000 WHERE seq = 80")
    return 80


def _levels(sql: str, table: str) -> list[str]:
    """`sql` on every level of a derived table (the fixture's rows are all still in the recent one)."""
    return [sql.format(t) for t in (table, f"{table}_deep", f"{table}_middle", f"{table}_recent")]


def edited_check_index(db: str) -> int:
    edit(
        db,
        *_levels(
            'UPDATE {0} SET notices = \'[{{"kind":"retraction"}}]\' WHERE seq = 131 '
            "AND work_id = (SELECT min(work_id) FROM {0} WHERE seq = 131)",
            "check_works",
        ),
    )
    return 131


def removed_check_index_row(db: str) -> int:
    edit(db, *_levels("DELETE FROM {0} WHERE seq = 132 AND work_id = "
                      "(SELECT max(work_id) FROM {0} WHERE seq = 132)", "check_works"))  # fmt: skip
    return 132


def added_check_index_row(db: str) -> int:
    edit(db, "INSERT INTO check_works (work_id, source, observed_us, seq, recorded_us, notices) "
             "VALUES ('w-forged', 'crossref', 0, 2, 0, '[]')")  # fmt: skip
    return 2


def truncated_leaving_check_rows(db: str) -> int:
    # PostgreSQL enforces check_works.seq REFERENCES events (seq): the attacker drops that first
    drop_fk = ["ALTER TABLE check_works DROP CONSTRAINT check_works_seq_fkey"] if is_pg_url(db) else []
    edit(db, *drop_fk, "DELETE FROM events WHERE seq > 130")  # the check_works rows of 131, 132 remain
    assert one(db, "SELECT count(*) FROM check_works_all WHERE seq > 130") > 0
    return 131


def removed_event_key(db: str) -> int:
    edit(db, *_levels("DELETE FROM {} WHERE seq = 50 AND key LIKE 'e:%'", "event_keys"))
    return 50


def forged_event_key(db: str) -> int:
    edit(db, "INSERT INTO event_keys_recent (key, seq) VALUES ('o:0b7f3c9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b', 20)")
    return 20


def removed_work_key(db: str) -> int:
    # the fixture's one cited work with a key to match on (its arXiv DOI) is at seq 76
    edit(db, *_levels("DELETE FROM {} WHERE seq = 76 AND key LIKE 'w:%'", "event_keys"))
    return 76


def forged_work_key(db: str) -> int:
    # a work a source file names, claimed for an observation that never cited it
    edit(db, "INSERT INTO event_keys_recent (key, seq) VALUES ('w:10.5555/forged', 30)")
    return 30


def repeated_event_id(db: str) -> int:
    """The last event re-made with the event_id of seq 5, re-chained, with its key: only the
    uniqueness of event ids is broken."""
    row = rows(db, f"SELECT {', '.join(_ENVELOPE)} FROM events WHERE seq = {N}")[0]
    e = dict(zip(_ENVELOPE, row, strict=True))
    taken = str(one(db, "SELECT event_id FROM events WHERE seq = 5"))
    body = body_bytes(e["data"].encode(), taken, e["observed_at"], e["recorded_at"], N, e["stream"],
                      e["stream_version"], e["type"])  # fmt: skip
    edit(
        db,
        *_levels(f"UPDATE {{}} SET key = 'e:{taken}' WHERE seq = {N} AND key LIKE 'e:%'", "event_keys"),
        "UPDATE events SET event_id = ?, hash = ? WHERE seq = ?",
        params=(taken, link_hash(e["prev_hash"], body), N),
    )
    return N


def _rechained_last(db: str, observed_at: str) -> None:
    """The last event's observed_at spelled `observed_at`, and its hash recomputed (as a writer
    with the chain's code would): its index column is left as it was."""
    row = rows(db, f"SELECT {', '.join(_ENVELOPE)} FROM events WHERE seq = {N}")[0]
    e = dict(zip(_ENVELOPE, row, strict=True))
    body = body_bytes(e["data"].encode(), e["event_id"], observed_at, e["recorded_at"], N, e["stream"],
                      e["stream_version"], e["type"])  # fmt: skip
    edit(
        db,
        "UPDATE events SET observed_at = ?, hash = ? WHERE seq = ?",
        params=(observed_at, link_hash(e["prev_hash"], body), N),
    )


def _last_observed(db: str) -> datetime:
    return to_datetime(int(one(db, f"SELECT observed_us FROM events WHERE seq = {N}")))


def observed_at_another_instant(db: str) -> int:
    """The last event's observed_at given an offset of an hour, its digits kept: another instant, in
    the spelling the ledger's writers use, re-chained; its index column no longer matches it."""
    _rechained_last(db, _last_observed(db).strftime("%Y-%m-%dT%H:%M:%S.%f+01:00"))
    return N


def _span(db: str) -> tuple[str, int]:
    """An inbound span of the fixture, and the last event of its observation."""
    oid, cit, res = rows(db, "SELECT observation_id, citation_seq, resolution_seq FROM inbound_spans "
                         "ORDER BY observation_id LIMIT 1")[0]  # fmt: skip
    return oid, max(cit, res)


def forged_inbound_span(db: str) -> int:
    """An observation made to point at another paper in the spans only (the record would count it)."""
    oid, last = _span(db)
    edit(db, "UPDATE inbound_spans SET cited = '2101.99999' WHERE observation_id = ?", params=(oid,))
    return last


def removed_inbound_span(db: str) -> int:
    oid, last = _span(db)
    edit(db, "DELETE FROM inbound_spans WHERE observation_id = ?", params=(oid,))
    return last


def added_inbound_span(db: str) -> int:
    """A span for an observation that has no event."""
    edit(db, "INSERT INTO inbound_spans SELECT cited, citing, reference_index, 'zz-forged', t_from, t_to, "
         "citation_seq, resolution_seq, k_from, k_to FROM inbound_spans LIMIT 1")  # fmt: skip
    return int(one(db, "SELECT resolution_seq FROM inbound_spans WHERE observation_id = 'zz-forged'"))


def forged_inbound_count(db: str) -> int:
    """One more observation counted for a paper, in the counts only: the walk's last seq is named."""
    edit(
        db,
        "UPDATE inbound_counts SET starts = starts + 1 "
        "WHERE bucket = (SELECT min(bucket) FROM inbound_counts)",
    )
    return N


def removed_screen_ref(db: str) -> int:
    """A reference gone from the screen's index: the screen would miss it; its event's seq is named."""
    seq = int(one(db, "SELECT min(seq) FROM screen_refs"))
    edit(db, "DELETE FROM screen_refs WHERE seq = ?", params=(seq,))
    return seq


def forged_screen_ref(db: str) -> int:
    """A reference filed under another work in the screen's index."""
    seq = int(one(db, "SELECT max(seq) FROM screen_refs"))
    edit(db, "UPDATE screen_refs SET work_id = 'forged' WHERE seq = ?", params=(seq,))
    return seq


def added_screen_notice(db: str) -> int:
    """A notice in the screen's index that no check lists: named at the check it claims."""
    edit(
        db,
        "INSERT INTO screen_notices (work_id, seq, ordinal, source, observed_us, recorded_us, notice) "
        "VALUES ('forged', 131, 0, 'crossref', 0, 0, '{}')",
    )
    return 131


def moved_event_key(db: str) -> int:
    """An event's id key filed under the next seq: every key is still there, under the wrong event."""
    edit(db, *_levels("UPDATE {} SET seq = 21 WHERE seq = 20 AND key LIKE 'e:%'", "event_keys"))
    return 20


def swapped_event_keys(db: str) -> int:
    """The id keys of seqs 20 and 21 traded: the same keys and seqs, each key under the other event
    (a plain sum of the rows' tuple hashes keeps its value about half the time)."""
    edit(db, *_levels("UPDATE {} SET seq = 41 - seq WHERE seq IN (20, 21) AND key LIKE 'e:%'", "event_keys"))
    return 20


def altered_screen_citing(db: str) -> int:
    """A reference's citing paper altered in the screen's index (its work and event kept)."""
    seq = int(one(db, "SELECT min(seq) FROM screen_refs"))
    edit(db, "UPDATE screen_refs SET citing = '2101.99999' WHERE seq = ?", params=(seq,))
    return seq


def screen_ref_past_the_head(db: str) -> int:
    """A reference in the screen's index for an event the ledger does not hold."""
    edit(
        db,
        "INSERT INTO screen_refs (work_id, seq, observation_id, citing) "
        f"SELECT work_id, {N + 10}, observation_id, citing FROM screen_refs WHERE seq = "
        "(SELECT min(seq) FROM screen_refs)",
    )
    return N + 10


_ENVELOPE = ["event_id", "stream", "stream_version", "type", "observed_at", "recorded_at", "data",
             "prev_hash"]  # fmt: skip


BROKEN: list[Any] = [
    pytest.param(
        flipped_bit_data,
        "stored bytes do not match the stored hash",
        id="flipped-bit-data",
        marks=pytest.mark.sqlite_only("flips a bit in the bytes of the SQLite db file"),
    ),
    pytest.param(
        flipped_bit_data_column,
        "stored bytes do not match the stored hash",
        id="flipped-bit-data-column",
    ),
    pytest.param(flipped_bit_hash, "stored bytes do not match the stored hash", id="flipped-bit-hash"),
    pytest.param(
        shifted_hash_boundary, "stored bytes do not match the stored hash", id="shifted-hash-boundary"
    ),
    pytest.param(reordered, "prev_hash does not match", id="reordered"),
    pytest.param(removed_middle, r"seq 61 follows 59: the sequence has a gap", id="removed-middle"),
    pytest.param(edited_observed_us, "observed_us index column does not match", id="edited-observed_us"),
    pytest.param(
        observed_at_another_instant,
        "observed_us index column does not match",
        id="observed-at-another-instant",
    ),
    pytest.param(
        edited_recorded_us, "recorded_at .* does not match its index column", id="edited-recorded_us"
    ),
    pytest.param(edited_stream_version, "stream_version 1000 of paper:", id="edited-stream_version"),
    pytest.param(edited_check_index, "derived index rows .* do not match", id="edited-check-index"),
    pytest.param(removed_check_index_row, "derived index rows .* do not match", id="removed-check-index-row"),
    pytest.param(added_check_index_row, "derived index rows .* do not match", id="added-check-index-row"),
    pytest.param(removed_event_key, "derived index rows .* do not match", id="removed-event-key"),
    pytest.param(forged_event_key, "derived index rows .* do not match", id="forged-event-key"),
    pytest.param(
        forged_inbound_span, "inbound spans of observation .* do not match", id="forged-inbound-span"
    ),
    pytest.param(
        removed_inbound_span, "inbound spans of observation .* do not match", id="removed-inbound-span"
    ),
    pytest.param(added_inbound_span, "inbound spans of observation zz-forged", id="added-inbound-span"),
    pytest.param(
        repeated_event_id, r"event_id .* is stored more than once \(seq 5 and 132\)", id="repeated-event-id"
    ),  # fmt: skip
    pytest.param(removed_work_key, "derived index rows .* do not match", id="removed-work-key"),
    pytest.param(forged_work_key, "derived index rows .* do not match", id="forged-work-key"),
    pytest.param(removed_screen_ref, "screen's index rows .* do not match", id="removed-screen-ref"),
    pytest.param(forged_screen_ref, "screen's index rows .* do not match", id="forged-screen-ref"),
    pytest.param(added_screen_notice, "screen's index rows .* do not match", id="added-screen-notice"),
    pytest.param(moved_event_key, "derived index rows .* do not match", id="moved-event-key"),
    pytest.param(swapped_event_keys, "derived index rows .* do not match", id="swapped-event-keys"),
    pytest.param(altered_screen_citing, "screen's index rows .* do not match", id="altered-screen-citing"),
    pytest.param(
        screen_ref_past_the_head, "screen's index rows .* do not match", id="screen-ref-past-the-head"
    ),
    pytest.param(
        truncated_leaving_check_rows,
        "derived index rows .* do not match",
        id="truncated-leaving-check-rows",
    ),
]


@pytest.mark.parametrize(("tamper", "reason"), BROKEN)
def test_verify_names_the_first_bad_seq(copy: str, tamper: Callable[[str], int], reason: str) -> None:
    bad = tamper(copy)
    report = Ledger(copy).verify()
    assert (report.ok, report.first_bad_seq) == (False, bad)
    assert report.reason is not None
    assert re.search(reason, report.reason), report.reason
    # the walk stops at the first break, a check_works mismatch included (the index is compared
    # event by event as the walk passes it)
    assert report.events_checked == one(copy, f"SELECT count(*) FROM events WHERE seq < {bad}")

    result = cli_verify(copy)
    assert result.exit_code == 2, result.output
    assert f"BROKEN at seq {bad}: " in result.output
    as_json = json.loads(cli_verify(copy, "--json").stdout)
    assert (as_json["ok"], as_json["first_bad_seq"]) == (False, bad)


@pytest.mark.sqlite_only("flips a bit in the SQLite db file and runs PRAGMA integrity_check on it")
def test_flipped_bit_is_invisible_to_sqlite_but_not_to_verify(copy: str) -> None:
    seq = flipped_bit_data(copy)
    assert one(copy, "PRAGMA integrity_check") == "ok"  # the file is a valid database...
    title = json.loads(str(one(copy, "SELECT data FROM events WHERE seq = ?", (seq,))))["title"]
    assert title.startswith("LLP-Offload")  # ...that now says something else
    assert Ledger(copy).verify().first_bad_seq == seq == 1


def test_flipped_bit_in_the_data_column_is_valid_json_but_not_to_verify(copy: str) -> None:
    seq = flipped_bit_data_column(copy)
    # the database took it as a valid row (and its JSON still parses)...
    assert one(copy, "SELECT count(*) FROM events") == N
    title = json.loads(str(one(copy, "SELECT data FROM events WHERE seq = ?", (seq,))))["title"]
    assert title.startswith("LLP-Offload")  # ...that now says something else
    assert Ledger(copy).verify().first_bad_seq == seq == 1


@pytest.mark.parametrize("keep", [131, 120, 1], ids=["truncated", "truncated-12", "truncated-to-1"])
def test_truncated_chain_still_verifies_but_the_note_says_so(copy: str, keep: int) -> None:
    # the index rows first: PostgreSQL refuses to delete events they still reference
    edit(copy, *cut_sql(keep))
    report = Ledger(copy).verify()
    assert (report.ok, report.first_bad_seq, report.events_checked) == (True, None, keep)
    assert report.head.seq == keep < N
    note = report.to_dict()["note"]
    assert isinstance(note, str) and "truncation" in note and "checkpoint" in note

    result = cli_verify(copy)
    assert result.exit_code == 0, result.output
    assert f"OK: {keep} events verified; head seq {keep} " in result.output
    assert "Note: " + TRUNCATION_NOTE in result.output
    assert json.loads(cli_verify(copy, "--json").stdout)["note"] == TRUNCATION_NOTE


def test_truncation_shows_against_a_held_checkpoint(copy: str) -> None:
    checkpoint = Ledger(copy).head()
    edit(copy, *cut_sql(100))
    report = Ledger(copy).verify()
    assert report.ok and report.head != checkpoint and report.head.seq < checkpoint.seq


def test_untouched_ledger_verifies(copy: str) -> None:
    report = Ledger(copy).verify()
    assert report.ok and (report.events_checked, report.head.seq) == (N, N)
    assert report.to_dict()["first_bad_seq"] is None and report.reason is None
    result = cli_verify(copy)
    assert result.exit_code == 0 and f"OK: {N} events verified; head seq {N} hash {report.head.hash}" in (
        result.output
    )


@pytest.mark.parametrize(
    "spell",
    [
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
        lambda d: d.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat(),
        lambda d: d.strftime("%Y-%m-%dt%H:%M:%S.%fz"),  # lower case: RFC 3339 allows it
    ],
    ids=["+00:00", "+05:30", "lower-case"],
)
def test_the_same_instant_spelled_otherwise_still_verifies(
    copy: str, spell: Callable[[datetime], str]
) -> None:
    """observed_at is kept as written: another spelling of the same instant, re-chained, is a good event."""
    _rechained_last(copy, spell(_last_observed(copy)))
    report = Ledger(copy).verify()
    assert report.ok and report.events_checked == N, report.reason


def test_empty_ledger_verifies(new_db: Callable[[str], str]) -> None:
    report = Ledger(new_db("empty.db")).verify()
    assert (report.ok, report.events_checked, report.head.seq) == (True, 0, 0)


def test_a_later_break_does_not_hide_an_earlier_one(copy: str) -> None:
    edit(
        copy, "UPDATE events SET observed_us = 0 WHERE seq IN (100, 30)", "DELETE FROM events WHERE seq = 50"
    )
    assert Ledger(copy).verify().first_bad_seq == 30


def test_an_index_break_before_a_chain_break_is_named_first(copy: str) -> None:
    edited_check_index(copy)  # seq 131
    edit(copy, "UPDATE events SET observed_us = 0 WHERE seq = 132")
    assert Ledger(copy).verify().first_bad_seq == 131


# -- the walk's two steps: the chain, then the derived rows ---------------------------------------

# the reasons of breaks in the rows the events imply (the derived step); every other is the chain's
_DERIVED_REASONS = (
    "derived index rows",
    "inbound spans",
    "is stored more than once",
    "inbound_counts",
    "screen's index rows",
)


@pytest.mark.parametrize("page", [10_000, 7], ids=["one-page", "pages-of-7"])
@pytest.mark.parametrize(("tamper", "reason"), BROKEN)
def test_verify_names_the_step_the_first_bad_seq_is_in(
    copy: str, tamper: Callable[[str], int], reason: str, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read a page at a time (pages of 7: the break inside a page of several), the walk still names
    the first bad seq, and says which of its two steps it broke."""
    monkeypatch.setattr(verify, "_PAGE", page)
    bad = tamper(copy)
    report = Ledger(copy).verify()
    assert (report.ok, report.first_bad_seq) == (False, bad)
    broken = DERIVED if reason.startswith(_DERIVED_REASONS) or "stored more than once" in reason else CHAIN
    assert [(s.name, s.ok) for s in report.steps] == [(CHAIN, broken != CHAIN), (DERIVED, broken != DERIVED)]
    said = {CHAIN: "OK", DERIVED: "OK"} | {broken: "BROKEN"}
    output = cli_verify(copy).output
    assert re.search(
        rf"^Steps: chain {said[CHAIN]} \(\d+\.\d\d s\); derived rows {said[DERIVED]} \(", output, re.M
    )


def test_an_untouched_ledger_reports_both_steps_ok(copy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "_PAGE", 5)
    report = Ledger(copy).verify()
    assert report.ok and report.events_checked == N
    assert [(s.name, s.ok) for s in report.steps] == [(CHAIN, True), (DERIVED, True)]
    assert all(s.seconds >= 0 for s in report.steps)
    as_json = json.loads(cli_verify(copy, "--json").stdout)
    assert [(s["name"], s["ok"]) for s in as_json["steps"]] == [(CHAIN, True), (DERIVED, True)]
    assert (
        "the Merkle tree" in as_json["steps"][0]["checks"]
        and "inbound spans" in as_json["steps"][1]["checks"]
    )
    assert re.search(r"^Steps: chain OK \(\d+\.\d\d s\); derived rows OK \(", cli_verify(copy).output, re.M)

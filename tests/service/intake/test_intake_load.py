"""service/intake/load.py: an NDJSON file checked whole (one refused line writes nothing, named), then
appended in batches that build what single appends build, resumed after the last committed batch, and
walked as it commits so the first integrity report walks nothing."""

from __future__ import annotations

import gzip
import hashlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.codec import derived_event_id, event_to_dict
from ledger.model.errors import Conflict, InvalidEvent, LedgerError
from service.intake import check, load
from service.intake.load import CHECKING, file_key, import_file
from service.ledger import Ledger
from service.ops.scrub import PassLog, chain_status
from tests import factories as fx
from tests.conftest import NewDb, examples

A = fx.PAPERS[0]


def line(e: ev.Event | dict[str, Any]) -> bytes:
    """One NDJSON line of an envelope (an event, or its JSON as a dict)."""
    return msgspec.json.encode(e if isinstance(e, dict) else event_to_dict(e)) + b"\n"


def history(n: int) -> list[ev.Event]:
    """n papers, each citing the one before it and resolved to it: 3 events a paper past the first."""
    out: list[ev.Event] = []
    for i in range(n):
        pid = f"2101.{i + 1:05d}"
        out.append(fx.paper(pid, fx.ts(i), title=f"Paper {i}"))
        if i:
            oid = fx.oid_of(i)
            out.append(fx.citation(oid, pid, fx.ts(i, 1), cited=fx.work(f"w-{i}", fx.ts(i, 1))))
            out.append(fx.resolution(oid, fx.ts(i, 2), cited_arxiv=f"2101.{i:05d}"))
    return out


def write(path: Path, events: Sequence[ev.Event | dict[str, Any]], blank: bool = False) -> Path:
    path.write_bytes(b"".join(line(e) + (b"\n" if blank else b"") for e in events))
    return path


def state(ledger: Ledger) -> dict[str, Any]:
    """Everything an append derives: the log, every key and check row, spans, counts, titles indexed."""
    stored, counted = ledger.store.spans.count_rows()
    return {
        "log": ledger.store.read_log(),
        "index": sorted(ledger.store.keys.index_rows()),
        "spans": sorted(ledger.store.spans.span_rows(ordered=False)),
        "counts": (list(stored), list(counted)),
        "titles": ledger.store.search.index_titles(ledger.head().seq),
    }


@contextmanager
def twins(new_db: NewDb, events: Sequence[ev.Event], tag: str = "") -> Iterator[tuple[Ledger, Ledger]]:
    """A ledger of `events` appended one at a time, and an empty one to import them into, at one
    instant for both (the same recorded_at, so the same hashes); both closed at the end."""
    clock = fx.Clock()
    single, batched = Ledger(new_db(f"s{tag}.db"), clock=clock), Ledger(new_db(f"b{tag}.db"), clock=clock)
    try:
        for e in events:
            single.append([e])
        yield single, batched
    finally:
        single.close()
        batched.close()


# -- batches build what single appends build -------------------------------------------------------

_EXAMPLE = itertools.count()


@settings(
    max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=fx.ledgers(max_obs=5), batch=st.integers(1, 7), blank=st.booleans())
def test_batches_build_what_single_appends_build(
    new_db: NewDb, tmp_path: Path, events: list[ev.Event], batch: int, blank: bool
) -> None:
    assume(events)
    n = next(_EXAMPLE)
    with twins(new_db, events, str(n)) as (single, batched):
        path = write(tmp_path / f"h{n}.ndjson", events, blank)
        got = import_file(batched, path, batch_size=batch)
        # a file of one line is one unit; blank lines after the last full batch are committed as one more
        batches = 1 if len(events) == 1 else -(-len(events) // batch) + (blank and len(events) % batch == 0)
        assert (got.appended, got.batches) == (len(single.store.read_log()), batches)
        assert state(batched) == state(single)
        assert batched.verify().ok


def test_big_batches_build_what_single_appends_build(new_db: NewDb, tmp_path: Path) -> None:
    """Batches past PostgreSQL's COPY_FROM rows (COPY, not one INSERT a row) store the same rows."""
    events = history(60) + [fx.check("crossref", fx.ts(90), [f"w-{i}" for i in range(1, 60)])]
    with twins(new_db, events) as (single, batched):
        got = import_file(batched, write(tmp_path / "big.ndjson", events), batch_size=150)
        assert (got.appended, got.batches) == (len(events), 2)
        assert state(batched) == state(single)
        assert batched.verify().ok


@pytest.mark.parametrize("compress", [False, True])
def test_a_file_is_appended_a_batch_at_a_time_with_its_progress(
    fresh_ledger: Ledger, tmp_path: Path, compress: bool
) -> None:
    events = history(10)  # 28 events
    path = write(tmp_path / "h.ndjson", events)
    if compress:
        path = tmp_path / "h.ndjson.gz"
        path.write_bytes(gzip.compress((tmp_path / "h.ndjson").read_bytes()))
    commits: list[int] = []
    fresh_ledger.intake.on_commit(lambda: commits.append(fresh_ledger.head().seq))
    got = import_file(fresh_ledger, path, batch_size=10)
    assert commits == [10, 20, 28] and (got.appended, got.duplicates, got.batches) == (28, 0, 3)
    p = fresh_ledger.store.imports.import_progress(file_key(path))
    assert p is not None and (p.lines_done, p.appended, p.head_seq) == (28, 28, 28)


# -- one refused line writes nothing, and is named ------------------------------------------------


def _refusals() -> list[Any]:
    good = history(12)  # 34 events: a refusal past the first batch of 10
    oid = fx.oid_of(99)
    future = {**event_to_dict(fx.measurement(A, fx.ts(1), 1)), "observed_at": "2999-01-01T00:00:00Z"}
    unknown = {"type": "paper.noticed", "observed_at": fx.ts(0), "data": {}}
    earlier = {**event_to_dict(good[3]), "event_id": fx.oid_of(7), "observed_at": fx.ts(60)}
    cases = [
        ("json", b'{"type": "paper.observed", "observed_at": \n', InvalidEvent, r"line 25\b"),
        ("type", line(unknown), InvalidEvent, r"line 25\.type: unknown event type"),
        ("orphan-resolution", line(fx.resolution(oid, fx.ts(50))), InvalidEvent,
         r"line 25\.data\.observation_id: no citation\.observed"),
        ("other-paper", line(fx.citation(fx.oid_of(1), A, fx.ts(50))), InvalidEvent,
         r"line 25\.data\.citing_arxiv_id: observation .* belongs to paper"),
        ("id-earlier-in-file", line(earlier), Conflict,
         r"line 25\.event_id: .* appears earlier in the file \(line 24\)"),
        ("future", line(future), InvalidEvent, r"line 25\.observed_at: more than 5 minutes in the future"),
    ]  # fmt: skip
    return [pytest.param(25, bad, error, match, id=name) for name, bad, error, match in cases]


@pytest.mark.parametrize(("at", "bad", "error", "match"), _refusals())
def test_one_refused_line_refuses_the_file_and_writes_nothing(
    fresh_ledger: Ledger, tmp_path: Path, at: int, bad: bytes, error: type[LedgerError], match: str
) -> None:
    refused_whole(fresh_ledger, tmp_path, at, bad, error, match)


def refused_whole(
    ledger: Ledger, tmp_path: Path, at: int, bad: bytes, error: type[LedgerError], match: str
) -> None:
    """A file with `bad` as its line `at` is refused with `error` matching `match`, and nothing of it is
    written, not even its progress."""
    lines = [line(e) for e in history(12)]
    # the line before the refused one names the id it repeats (its own content)
    lines[at - 2] = line({**event_to_dict(history(12)[at - 2]), "event_id": fx.oid_of(7)})
    lines.insert(at - 1, bad)
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(lines))
    with pytest.raises(error, match=match):
        import_file(ledger, path, batch_size=10)
    assert ledger.head().seq == 0
    assert ledger.store.imports.import_progress(file_key(path)) is None


def test_an_id_stored_with_other_content_is_named(imported_ledger: Ledger, tmp_path: Path) -> None:
    stored = imported_ledger.store.read_log(limit=1)[0]
    other = {**event_to_dict(fx.measurement(A, fx.ts(1), 1)), "event_id": stored.event_id}
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(line(e) for e in history(3)) + line(other))
    head = imported_ledger.head()
    with pytest.raises(Conflict, match=rf"line 8\.event_id: {stored.event_id} is already stored \(seq 1\)"):
        import_file(imported_ledger, path, batch_size=2)
    assert imported_ledger.head() == head


@pytest.mark.parametrize("named_first", [True, False])
def test_one_content_under_its_derived_id_given_and_left_out_is_one_event(
    fresh_ledger: Ledger, tmp_path: Path, named_first: bool
) -> None:
    """A line naming the id its content derives to and a line leaving it out are the same event, in
    either order, in the check as in the append."""
    e = fx.measurement(A, fx.ts(1), 1)
    named = {**event_to_dict(e), "event_id": derived_event_id(e)}
    pair = [line(named), line(e)] if named_first else [line(e), line(named)]
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(line(x) for x in history(3)) + b"".join(pair))
    got = import_file(fresh_ledger, path, batch_size=2)
    assert (got.appended, got.duplicates) == (len(history(3)) + 1, 1)


def test_another_content_under_a_derived_id_is_refused_before_anything_is_written(
    fresh_ledger: Ledger, tmp_path: Path
) -> None:
    """A line naming the id another line's content derives to, with other content, is refused by the
    check, naming both lines, even when the two are in different batches."""
    e = fx.measurement(A, fx.ts(1), 1)
    other = {**event_to_dict(fx.measurement(A, fx.ts(1), 2)), "event_id": derived_event_id(e)}
    path = tmp_path / "f.ndjson"
    path.write_bytes(line(e) + b"".join(line(x) for x in history(3)) + line(other))
    with pytest.raises(Conflict, match=r"line 9\.event_id: .* appears earlier in the file \(line 1\)"):
        import_file(fresh_ledger, path, batch_size=2)
    assert fresh_ledger.head().seq == 0


def test_lines_already_stored_are_duplicates(fresh_ledger: Ledger, tmp_path: Path) -> None:
    events = history(4)
    fresh_ledger.append(events[:5])
    got = import_file(fresh_ledger, write(tmp_path / "f.ndjson", events), batch_size=3)
    assert (got.appended, got.duplicates) == (len(events) - 5, 5)


# -- resumed after the last committed batch -------------------------------------------------------


class _Stop(Exception):
    """Stands for a kill: raised from the progress callback once `after` batches are committed."""


def _stop_after(after: int) -> Callable[[str, int, int, int], None]:
    seen = {"appending": 0}

    def progress(phase: str, lines: int, read: int, size: int) -> None:
        if phase == "appending" and lines % 10 == 0 and lines:
            seen["appending"] += 1
            if seen["appending"] == after:
                raise _Stop

    return progress


def test_a_stopped_import_resumes_after_its_last_committed_batch(
    fresh_ledger: Ledger, tmp_path: Path
) -> None:
    events = history(12)  # 34 events
    path = write(tmp_path / "f.ndjson", events)
    with pytest.raises(_Stop):
        import_file(fresh_ledger, path, batch_size=10, progress=_stop_after(2))
    assert fresh_ledger.head().seq == 20
    checked: list[int] = []

    def progress(phase: str, lines: int, read: int, size: int) -> None:
        if phase == CHECKING:
            checked.append(lines)

    got = import_file(fresh_ledger, path, batch_size=10, progress=progress)
    assert (got.resumed_at_line, got.appended, got.duplicates, got.batches) == (20, 14, 0, 2)
    assert max(checked) == 14  # only the lines not committed were checked again
    log = fresh_ledger.store.read_log()
    assert len(log) == len(events) and len({e.event_id for e in log}) == len(events)
    assert fresh_ledger.verify().ok
    again = import_file(fresh_ledger, path, batch_size=10)
    assert (again.resumed_at_line, again.appended, again.lines) == (34, 0, 0)


def test_a_file_that_no_longer_begins_with_the_committed_bytes_is_refused_naming_both_hashes(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another file of the same size and first bytes (the identity) after a stop: resuming would mix
    the two files' events, so it is refused, both hashes named; --restart imports it from line 1."""
    monkeypatch.setattr(load, "HEAD_BYTES", 8)  # the identity covers the first 8 bytes only
    events = history(12)
    path = write(tmp_path / "f.ndjson", events)
    with pytest.raises(_Stop):
        import_file(fresh_ledger, path, batch_size=10, progress=_stop_after(1))
    raw = path.read_bytes()
    progress = fresh_ledger.store.imports.import_progress(file_key(path))
    assert progress is not None and progress.lines_done == 10
    path.write_bytes(raw.replace(b'"Paper 1"', b'"Paper X"'))  # same size, same first bytes
    assert file_key(path) == progress.file_key
    found = hashlib.sha256(path.read_bytes()[: progress.bytes_done]).hexdigest()
    with pytest.raises(
        load.Differs, match=rf"up to line 10 .*sha256 {found}, .*sha256 {progress.prefix_sha256};"
    ):
        import_file(fresh_ledger, path, batch_size=10)
    assert fresh_ledger.head().seq == 10  # nothing more written
    got = import_file(fresh_ledger, path, batch_size=10, restart=True)
    assert got.resumed_at_line == 0
    assert (got.appended, got.duplicates) == (len(events) - 10 + 1, 10 - 1)


def test_a_file_changed_between_its_check_and_its_append_is_never_read_again(
    fresh_ledger: Ledger, tmp_path: Path
) -> None:
    """The append appends the events the check proved, from its spill: bytes written to the file after
    its check are not read, and the progress names the bytes that were checked."""
    events = history(12)
    path = write(tmp_path / "f.ndjson", events)
    checked = path.read_bytes()

    def change(phase: str, lines: int, read: int, size: int) -> None:
        if phase == CHECKING and read == size:
            path.write_bytes(checked.replace(b'"Paper 9"', b'"Paper Z"'))

    got = import_file(fresh_ledger, path, batch_size=10, progress=change)
    assert (got.appended, got.batches) == (34, 4)
    titles = [msgspec.json.decode(e.data).get("title") for e in fresh_ledger.store.read_log()]
    assert "Paper 9" in titles and "Paper Z" not in titles
    progress = fresh_ledger.store.imports.import_progress(
        f"{len(checked)}:{hashlib.sha256(checked).hexdigest()}"
    )
    assert progress is not None and progress.prefix_sha256 == hashlib.sha256(checked).hexdigest()


# -- the walk as it commits -----------------------------------------------------------------------


def test_the_first_integrity_report_after_an_import_walks_nothing(
    fresh_ledger: Ledger, tmp_path: Path
) -> None:
    got = import_file(fresh_ledger, write(tmp_path / "f.ndjson", history(12)), batch_size=10)
    assert got.walk is not None and got.walk.ok
    point = fresh_ledger.store.verifying.verified_point()
    assert point is not None and point.seq == fresh_ledger.head().seq == 34
    chain = chain_status(fresh_ledger.store, PassLog(fresh_ledger.store, fresh_ledger.clock))
    assert chain["ok"] and chain["events_checked"] == 0 and chain["walked"] is None
    assert chain["trusted"]["to"] == 34 and chain["last_full_walk"]["by"] == "verify"


def test_the_walk_reads_back_what_was_stored(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that wrote other bytes than the append computed (a fault below it) is caught by the
    walk after the commit, not vouched for."""
    insert = _write_tx_class(fresh_ledger).insert

    def faulty(self: Any, rows: Any) -> None:
        first = list(rows.events[0])
        first[9] = first[9].replace("Paper", "Pxper")  # the data column, its hash unchanged
        rows.events[0] = tuple(first)
        insert(self, rows)

    monkeypatch.setattr(_write_tx_class(fresh_ledger), "insert", faulty)
    got = import_file(fresh_ledger, write(tmp_path / "f.ndjson", history(6)), batch_size=10)
    assert got.walk is not None and not got.walk.ok and got.walk.first_bad_seq == 1
    assert fresh_ledger.store.verifying.verified_point() is None


def _write_tx_class(ledger: Ledger) -> type[Any]:
    with ledger.store.write() as tx:
        return type(tx)


# -- a file is decoded once -------------------------------------------------------------------


@pytest.mark.parametrize(("lines", "batch"), [(9, 10), (10, 10), (11, 10), (88, 10), (88, 7)])
def test_each_line_is_decoded_once_and_the_append_reads_no_line(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: int, batch: int
) -> None:
    """The check decodes each line once and spills its event; the append takes the events from the
    spill: no line is decoded again, the file is opened for the check only (and for the sniff of its
    first line), and the batches build what single appends build."""
    decoded: list[bytes] = []
    quick = check.quick_event

    def counted(raw: bytes) -> ev.Event | None:
        decoded.append(raw)
        return quick(raw)

    monkeypatch.setattr(check, "quick_event", counted)
    opened: list[str] = []
    open_stream = load.open_stream

    def counted_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return open_stream(path, *args, **kwargs)

    monkeypatch.setattr(load, "open_stream", counted_open)
    events = history(30)[:lines]
    path = write(tmp_path / "f.ndjson", events, blank=True)
    with twins(new_db, events) as (single, batched):
        got = import_file(batched, path, batch_size=batch)
        assert sorted(decoded) == sorted(line(e) for e in events)
        assert opened == [str(path), str(path)]  # the first line's sniff, then the check
        # a blank line after a last full batch is committed as a batch of its own, as its bytes
        assert (got.appended, got.batches) == (lines, -(-lines // batch) + (lines % batch == 0))
        assert state(batched) == state(single)

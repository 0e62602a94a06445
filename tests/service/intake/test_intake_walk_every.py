"""service/intake/load.py: the chain is walked after every WALK_EVERY events committed and after the
last commit (also of an import stopped by a refused batch), so that the first integrity report after
an import walks nothing, however its commits were grouped into walks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.model.errors import Conflict
from service.intake import load
from service.intake.load import Stopped, import_file
from service.ledger import Ledger
from service.ops.scrub import PassLog, chain_status
from tests.service.intake.test_intake_load import history, write

# on two cores or more the walks run in a walker process (service/intake/beside.py)
pytestmark = pytest.mark.process


def _walks(monkeypatch: pytest.MonkeyPatch, ledger: Ledger) -> list[int]:
    """The head seq at each walk of an import."""
    heads: list[int] = []
    after = load._Walker.after_commit

    def counted(self: load._Walker) -> object:
        heads.append(ledger.head().seq)
        return after(self)

    monkeypatch.setattr(load._Walker, "after_commit", counted)
    return heads


@pytest.mark.parametrize(("every", "heads"), [(1, [10, 20, 30, 34]), (15, [20, 34]), (100, [34])])
def test_the_chain_is_walked_every_so_many_events_and_at_the_end(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: int, heads: list[int]
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", every)
    walks = _walks(monkeypatch, fresh_ledger)
    got = import_file(fresh_ledger, write(tmp_path / "f.ndjson", history(12)), batch_size=10)  # 34 events
    assert walks == heads and got.walk is not None and got.walk.ok
    chain = chain_status(fresh_ledger.store, PassLog(fresh_ledger.store, fresh_ledger.clock))
    assert chain["ok"] and chain["events_checked"] == 0 and chain["trusted"]["to"] == 34


def test_an_import_stopped_by_a_refused_batch_walks_what_it_committed(
    fresh_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "WALK_EVERY", 100)
    walks = _walks(monkeypatch, fresh_ledger)
    path = write(tmp_path / "f.ndjson", history(12))
    append = Ledger.append

    def refuse_third(self: Ledger, events: object, *a: object, **k: object) -> object:
        if self.head().seq >= 20:
            raise Conflict("refused by the test")
        return append(self, events, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Ledger, "append", refuse_third)
    with pytest.raises(Stopped, match=r"after 2 committed batch\(es\).*refused by the test"):
        import_file(fresh_ledger, path, batch_size=10)
    point = fresh_ledger.store.verifying.verified_point()
    assert walks == [20] and point is not None and point.seq == 20

"""The projector behind `ledger serve --workers 2`: one worker holds the lease and follows the log for
both, what is appended over HTTP is projected with no CLI and no append past the allowed lag, and a
record served while the spans are behind is the record served once they caught up."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ledger.model.codec import event_to_dict
from ledger.storage.derived.spans import NAME
from ledger.storage.projector import lease_holder
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.waiting import wait_until

TOKEN = "projector-workers-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
P = "2101.00001"
AS_OF = {"as_of": ts(9)}


def _events(n: int) -> list[dict[str, Any]]:
    events: list[Any] = [paper(P, ts(0))]
    for i in range(n):
        citing = f"2201.{i:05d}"
        events += [
            paper(citing, ts(1, i)),
            citation(oid_of(i), citing, ts(2, i), 0),
            resolution(oid_of(i), ts(3, i), cited_arxiv=P),
        ]
    return [event_to_dict(e) for e in events]


def _ancestors(pid: int) -> list[int]:
    """The processes above `pid`, from /proc."""
    out = []
    while pid > 1:
        status = open(f"/proc/{pid}/status").read()  # noqa: SIM115 - read at once
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        out.append(pid)
    return out


@pytest.mark.process
def test_one_worker_projects_what_is_appended_over_http_for_both(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    # a lag no append reaches: only the server's projector can bring the spans up
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_PROJECTOR_MAX_LAG": "1000000", "LEDGER_LOG_FORMAT": "json"}
    with running_server(db, env=env, args=["--workers", "2"]) as server:
        reader = Ledger(db, project_on_read=False)
        try:
            answer = httpx.post(
                f"{server.base}/events", json={"events": _events(30)}, headers=AUTH, timeout=60
            )
            assert answer.status_code in (200, 201), answer.text
            head = reader.head().seq
            record = httpx.get(f"{server.base}/paper/{P}/citation-record.json", params=AS_OF, timeout=30)

            def projected() -> bool:
                return reader.store.spans.projection_position(NAME) == head

            wait_until(projected, lambda: f"the spans projected to {head}:\n{server.log()}", 60.0)
            holder = lease_holder(reader.store, 0)
            assert holder is not None
            # a worker of this server holds it (its pid, before the lease's random part)
            assert server.proc.pid in _ancestors(int(holder.split("-")[0]))
            again = httpx.get(f"{server.base}/paper/{P}/citation-record.json", params=AS_OF, timeout=30)
            assert record.status_code == again.status_code == 200, record.text
            assert record.content == again.content
            assert len(again.json()["inbound"]) == 30
        finally:
            reader.close()

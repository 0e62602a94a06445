"""The page `ledger serve` points at in its `Serving ...` line: the sample as it was only when this start
loaded it into an empty ledger; otherwise the ledger as it is now, so nothing added since is hidden."""

from __future__ import annotations

import httpx
import pytest

from service.ledger import Ledger
from tests.api.test_api import AUTH, TOKEN
from tests.api_fixtures import measurement_event, running_server
from tests.conftest import NewDb

PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"


@pytest.mark.process
def test_a_ledger_holding_more_than_the_sample_is_served_as_it_is_now(
    new_db: NewDb, fixture_bytes: bytes
) -> None:
    db = new_db()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}) as first:
        # an empty ledger: the sample is loaded, and shown as it was
        assert first.page_url == f"{first.base}/paper/{PAPER}/citation-record?as_of={AS_OF}"
        later = measurement_event(PAPER, 4242)
        assert httpx.post(f"{first.base}/events", json={"events": [later]}, headers=AUTH).status_code == 201
    for args in (["--no-samples"], []):
        with running_server(db, args=args) as again:
            assert "Loaded the sample" not in again.log()
            # the ledger now: the measurement added after the sample's date is on the page it points at
            assert again.page_url == f"{again.base}/paper/{PAPER}/citation-record"
            page = httpx.get(again.page_url)
            assert page.status_code == 200 and "opencitations: 4242 (citation_count)" in page.text


@pytest.mark.process
def test_a_ledger_without_the_sample_points_at_its_paper_now(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.close()
    with running_server(db, args=["--no-samples"]) as empty:
        assert empty.page_url == f"{empty.base}/"

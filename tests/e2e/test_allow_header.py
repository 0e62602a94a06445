"""A 405 names every method the resource takes (RFC 9110 section 15.5.6), though the API declares one
route a method: found by Schemathesis' Allow check against a real `ledger serve`."""

from __future__ import annotations

import httpx
import pytest

from tests.api_fixtures import running_server
from tests.conftest import NewDb

TOKEN = "allow-token"
CASES = [
    ("OPTIONS", "/watches", {"GET", "POST"}),
    ("PUT", "/watches", {"GET", "POST"}),
    ("OPTIONS", "/watches/1", {"GET", "DELETE"}),
    ("PATCH", "/watches/1", {"GET", "DELETE"}),
]


@pytest.mark.process
def test_a_405_allows_every_method_of_the_path(new_db: NewDb) -> None:
    with running_server(new_db(), env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        for method, path, allowed in CASES:
            r = httpx.request(method, server.base + path, headers={"Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 405, (method, path, r.text)
            assert r.json()["error"]["code"] == "method_not_allowed"
            named = {m.strip() for m in r.headers["allow"].split(",")}
            assert allowed <= named and method not in named, (method, path, named)

"""Poisoned references over real sockets, against a real `ledger serve` on the backend under test: a
reference of 4,400 digits (Python's int() refuses it) and one the matcher raises on (a bug, injected by
tests/api/resolve/faults/sitecustomize.py) sit among references that resolve. `POST /resolve` answers 200, the
good references are resolved, the poisoned ones are `unresolved` (the one that raised with the reason in
its evidence), an `all` job ends `done`, and later runs do not try the one that raised again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.model.events import CitationData, CitationObserved
from ledger.model.works import Reference
from service.ledger import Ledger
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works
from tests.api.resolve.faults.sitecustomize import MARKER
from tests.api.test_api import AUTH, TOKEN
from tests.api_fixtures import free_port, ledger_command, running_server
from tests.conftest import NewDb
from tests.factories import oid_of, paper
from tests.paths import DATA
from tests.waiting import wait_until

FAULTS = Path(__file__).parent / "faults"
CITING = "2506.06472"
AT = "2026-08-07T06:00:33.427109Z"
# reference lines of the real record 2506.06472 and the works they are (tests/data/works)
GOOD = {
    "Swapadvisor: Pushingdeeplearningbeyondthegpu memory limit via smart swapping.": (
        "10.5555/3373376.3378530"
    ),
    "Zero- infinity: Breaking the gpu memory wall for extreme scale deep learning.": (
        "10.5555/3458817.3476205"
    ),
    "Gpipe: Efficient training of giant neural networks using pipeline parallelism.Advances in neural "
    "information processing systems, 32, 2019.": "10.5555/neurips.2019.gpipe",
}
DIGITS = "pp. " + "7" * 4400 + "-8"
RAISES = f"{MARKER}: Smith J. A study of things. J. Tests 1, 3 (2020)."
LINES = [*GOOD, DIGITS, RAISES]
OIDS = {line: oid_of(700 + n) for n, line in enumerate(LINES)}


def _seed(db: str) -> None:
    ledger = Ledger(db)
    events: list[Any] = [paper(CITING, AT, title="Cost-Efficient LLM Training")]
    for n, line in enumerate(LINES):
        data = CitationData(OIDS[line], CITING, n + 1, "pdf_text", None, Reference(unstructured=line))
        events.append(CitationObserved(observed_at=AT, data=data))
    ledger.append(events)
    works = (DATA / "works" / "fixture-cited-works.ndjson").read_bytes()
    ingest_works(ledger, SourceFile(NAME, works, "2026-11-01T00:00:00Z"))


def _resolution(base: str, oid: str) -> dict[str, Any]:
    r = httpx.get(
        f"{base}/paper/{CITING}/observations/{oid}/resolution", headers={"Accept": "application/json"}
    )
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _job(base: str) -> dict[str, Any]:
    r = httpx.post(f"{base}/resolve", json={"all": True}, headers=AUTH, timeout=120)
    assert r.status_code == 202, r.text
    url = f"{base}/resolve/jobs/{r.json()['id']}"

    def finished() -> dict[str, Any] | None:
        job: dict[str, Any] = httpx.get(url, headers=AUTH).json()
        return None if job["state"] == "running" else job

    return wait_until(finished, "the resolve job to finish", timeout=120)


@pytest.mark.process
def test_poisoned_references_are_their_own_outcome_never_the_runs(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    _seed(db)
    tries = tmp_path / "tries"
    env = {
        "LEDGER_TOKENS": TOKEN,
        "PYTHONPATH": os.pathsep.join(p for p in (str(FAULTS), os.environ.get("PYTHONPATH")) if p),
        "RESOLVER_POISON_COUNT": str(tries),
    }
    with running_server(db, env=env, args=["--no-samples"]) as server:
        r = httpx.post(f"{server.base}/resolve", json={"papers": [CITING]}, headers=AUTH, timeout=120)
        assert r.status_code == 200, r.text
        changes = {c["observation_id"]: c for c in r.json()["changes"]}
        for line, doi in GOOD.items():
            assert (changes[OIDS[line]]["after"], changes[OIDS[line]]["doi"]) == ("verified_fuzzy", doi)
        assert changes[OIDS[DIGITS]]["after"] == changes[OIDS[RAISES]]["after"] == "unresolved"
        raised = _resolution(server.base, OIDS[RAISES])
        assert raised["evidence"]["error"] == "RuntimeError: the matcher cannot read this reference"
        assert "error" not in _resolution(server.base, OIDS[DIGITS])["evidence"]
        page = httpx.get(
            f"{server.base}/paper/{CITING}/observations/{OIDS[RAISES]}/resolution",
            headers={"Accept": "text/html"},
        ).text
        assert "could not read this reference" in page and "the matcher cannot read this reference" in page
        assert tries.read_text().splitlines() == [OIDS[RAISES]]
        # a whole-ledger job ends done, and neither it nor a later run tries the failed reference again
        job = _job(server.base)
        assert (job["state"], job["summary"]["examined"], job["summary"]["appended"]) == ("done", 1, 0)
        again = httpx.post(f"{server.base}/resolve", json={"papers": [CITING]}, headers=AUTH, timeout=120)
        assert again.status_code == 200 and again.json()["examined"] == 1
        assert tries.read_text().splitlines() == [OIDS[RAISES]]


@pytest.mark.process
def test_serve_says_a_bad_text_cap_in_one_line_before_serving(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env |= {"LEDGER_RESOLVER_MAX_TEXT": "12", "LEDGER_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [*ledger_command(), "serve", "--db", db, "--port", str(free_port())],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: LEDGER_RESOLVER_MAX_TEXT must be a whole number of characters, at least 256, got '12'"
    ]

"""A resolution explained in words (service/resolver/explain.py): each method the resolver has in a
phrase, the score on its scale, who decided, and evidence keys this code does not know shown as they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import main
from ledger.model.jsonvalue import JsonObject
from service.ledger import Ledger
from service.resolver import match
from service.resolver.explain import (
    SCALE,
    explain_lines,
    explanation,
    method_words,
    resolved_by,
    runner_up_words,
    score_words,
)
from service.resolver.run import resolve
from service.resolver.shown import resolution_view
from tests.conftest import NewDb
from tests.resolver_doubles import CITING, OIDS, live_resolver, seed_world

SAMPLE = Path(__file__).parents[3] / "ledger" / "samples" / "2509.02480.record.json"


@pytest.mark.parametrize(
    ("method", "status", "ident", "words"),
    [
        ("identifier", "verified_exact", "doi", "the DOI in the reference, and"),
        ("identifier", "verified_exact", "arxiv", "the arXiv id in the reference, and"),
        (
            "identifier",
            "metadata_mismatch",
            "doi",
            "names a work of the catalogue, but",
        ),
        ("title-author-year", "verified_exact", None, "title, first author and year agree"),
        ("search-validate", "verified_fuzzy", None, "the best candidate's fields were checked one by one"),
        ("search-validate", "unresolved", None, "no candidate was accepted"),
        ("sbmv", "verified_fuzzy", None, "SBMV: the catalogue searched"),
        ("person", "verified_exact", None, "a person's decision"),
        ("error", "unresolved", None, "the resolver could not read this reference"),
        ("a-new-method", "verified_fuzzy", None, "a method this page does not describe (a-new-method)"),
    ],
)
def test_each_method_in_words(method: str, status: str, ident: str | None, words: str) -> None:
    assert words in method_words(method, status, ident)


def test_the_score_names_its_scale_and_the_thresholds() -> None:
    said = score_words("search-validate", 61, True)
    assert said is not None and said.startswith(f"61 of {SCALE} points")
    assert f"needs {match.THRESHOLD}, {match.TITLE_NEEDED} of them from the title" in said
    assert f"{match.NUMBERS_THRESHOLD} with its first page" in said
    assert score_words("search-validate", 40, False) == (
        said.replace("61", "the best candidate scored 40", 1)
    )
    assert (
        score_words("sbmv", 73, True) == "73 of 100 (similarity in per cent); SBMV keeps a candidate from 50"
    )
    assert score_words("person", 0, True) is None


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("person:Ada Lovelace", "a person, Ada Lovelace, on 2026-09-01"),
        ("citation-ledger/sbmv+guards/1", "this ledger's resolver (method sbmv+guards, version 1)"),
        ("local_arxiv", "another source, local_arxiv"),
        (None, "no resolver named"),
    ],
)
def test_who_resolved_it_in_words(source: str | None, said: str) -> None:
    assert resolved_by(source, "2026-09-01T10:00:00Z").startswith(said)


def test_evidence_keys_it_does_not_know_are_shown_as_they_are(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    seed_world(ledger)
    resolver = live_resolver(ledger.store.read_log(type="paper.observed", limit=1)[0])
    resolve(
        ledger, [CITING], decide=resolver.decide, catalogue=resolver.catalogue(ledger), method=resolver.method
    )
    view: dict[str, Any] = resolution_view(ledger, CITING, OIDS[1])
    view["evidence"] = {**view["evidence"], "failure_reason": "no_title", "feature_points": {"title": 450}}
    view["evidence"]["runner_up"] = {"catalogue_seq": 1, "doi": None, "arxiv_id": None, "score": 3,
                                     "other_work_agreed_equally": True}  # fmt: skip
    x = explanation(ledger, view)
    assert "failure reason: no_title" in x["other"] and "feature points: {'title': 450}" in x["other"]
    runner_up = x["runner_up"]
    assert runner_up is not None and runner_up["other"] == ["other work agreed equally: True"]
    lines = explain_lines(view, x)
    assert "Also recorded: failure reason: no_title" in lines and "  other work agreed equally: True" in lines


def test_a_records_reference_is_shown_as_the_record_displayed_it(new_db: NewDb) -> None:
    """The shipped sample's references arrive with another source's resolution: its displayed work is
    the reference as given (a year alone, or nothing), not an empty reference."""
    db = new_db()
    assert CliRunner().invoke(main, ["import", str(SAMPLE), "--db", db]).exit_code == 0
    ledger = Ledger(db)
    record = json.loads(SAMPLE.read_bytes())
    shown: dict[str, list[list[str]]] = {}
    for o in record["outbound"]:
        x = explanation(ledger, resolution_view(ledger, record["paper"]["arxiv_id"], o["observation_id"]))
        shown[o["observation_id"]] = x["reference"]["fields"]
    only_year = [f for f in shown.values() if [k for k, _ in f] == ["year"]]
    nothing = [f for f in shown.values() if not f]
    assert (len(only_year), len(nothing)) == (26, 5)
    # a reference Pith linked to an arXiv paper the ledger holds: that id decides, and is marked agreed
    resolve(ledger, [record["paper"]["arxiv_id"]], decide=match.resolve_many, catalogue=ledger.catalogue,
            method="sbmv+guards/1")  # fmt: skip
    oid = "b2f3e50e-429e-49c5-a34f-2335320523e8"
    x = explanation(ledger, resolution_view(ledger, record["paper"]["arxiv_id"], oid))
    assert (x["method"] or "").startswith("the arXiv id in the reference")
    [arxiv] = [f for f in x["fields"] if f["field"] == "arXiv id"]
    assert (arxiv["reference"], arxiv["work"], arxiv["mark"]) == ("2407.20018", "2407.20018", "agreed")


@pytest.mark.parametrize(
    ("gap", "words"),
    [
        (0, "of two works that agree equally, the one the catalogue held first is taken"),
        (3, "a field the chosen work agreed on and it did not told them apart"),
        (40, "a lead of"),
    ],
)
def test_why_the_runner_up_lost(new_db: NewDb, gap: int, words: str) -> None:
    ledger = Ledger(new_db())
    evidence: JsonObject = {
        "score": 60,
        "runner_up": {"catalogue_seq": 1, "doi": "10.1/x", "arxiv_id": None, "score": 60 - gap},
    }
    said = runner_up_words(ledger, evidence, chosen=True)
    assert said is not None and words in said["why"]

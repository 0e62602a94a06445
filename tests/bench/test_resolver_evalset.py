"""The resolver's evaluation set (bench/resolver): the committed data keeps its promises, and the
scores count as the README says."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from bench.resolver.evaluate import score
from bench.resolver.make_catalogue import DATA, gz_lines
from ledger.model.doi import normalize_doi


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    catalogued = {normalize_doi(i["DOI"]) for i in gz_lines(DATA / "catalogue.ndjson.gz")}
    held = {normalize_doi(i["DOI"]) for i in gz_lines(DATA / "held_out.ndjson.gz")}
    return {"catalogued": catalogued, "held": held, "refs": list(gz_lines(DATA / "references.jsonl.gz"))}


def test_held_out_works_are_not_catalogued_and_are_a_fifth(data: dict[str, Any]) -> None:
    assert not data["catalogued"] & data["held"]
    assert len(data["catalogued"]) >= 15000
    assert len(data["held"]) / (len(data["held"]) + len(data["catalogued"])) == pytest.approx(0.2, abs=0.01)


def test_every_reference_expects_a_catalogued_work_or_none(data: dict[str, Any]) -> None:
    for r in data["refs"]:
        if r["held_out"]:
            assert r["expected_doi"] is None and r["work_doi"] in data["held"], r["id"]
        else:
            assert r["expected_doi"] == r["work_doi"] and r["expected_doi"] in data["catalogued"], r["id"]


def test_no_work_is_in_both_splits(data: dict[str, Any]) -> None:
    splits: dict[str, set[str]] = defaultdict(set)
    for r in data["refs"]:
        splits[r["work_doi"]].add(r["split"])
    assert all(len(s) == 1 for s in splits.values())


def test_strings_carry_no_doi_or_url(data: dict[str, Any]) -> None:
    for r in data["refs"]:
        text = r["unstructured"] or ""
        assert "doi.org" not in text and "http" not in text and "10." + "48550" not in text, r["id"]


def _row(i: int, expected: str | None) -> dict[str, Any]:
    return {"id": f"r{i}", "expected_doi": expected}


@pytest.mark.parametrize(
    ("answers", "precision", "recall", "held_unresolved", "wrong_exact"),
    [
        # right, right, held out left unresolved
        (
            [("10.1/a", "verified_exact"), ("10.1/b", "verified_fuzzy"), (None, "unresolved")],
            1.0,
            1.0,
            1.0,
            0,
        ),
        # an answer to a held-out reference counts against precision, not recall
        (
            [("10.1/a", "verified_fuzzy"), ("10.1/b", "verified_fuzzy"), ("10.1/a", "verified_fuzzy")],
            0.6667,
            1.0,
            0.0,
            0,
        ),
        # a wrong exact answer is counted; a missing answer costs recall only
        ([("10.1/b", "verified_exact"), (None, "unresolved"), (None, "unresolved")], 0.0, 0.0, 1.0, 1),
    ],
)
def test_score_counts_as_documented(
    answers: list[tuple[str | None, str]],
    precision: float,
    recall: float,
    held_unresolved: float,
    wrong_exact: int,
) -> None:
    rows = [_row(0, "10.1/A"), _row(1, "10.1/b"), _row(2, None)]
    got = score(rows, {f"r{i}": (k, s, 0) for i, (k, s) in enumerate(answers)})
    assert (got["precision"], got["recall"], got["held_out_unresolved"], got["wrong_verified_exact"]) == (
        precision,
        recall,
        held_unresolved,
        wrong_exact,
    )

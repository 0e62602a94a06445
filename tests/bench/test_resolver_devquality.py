"""The development split's quality benchmark (bench/resolver/devquality.py) counts as score-resolver
does; the rate benchmark (bench/resolver/devrate.py) turns each query into the reference it reads and
takes each ratio from runs of one round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.resolver.devquality import counts, norm, scores
from bench.resolver.devrate import dev_rows, summarise

QUERIES: list[dict[str, Any]] = [
    {"id": "a", "style": "apa", "expected_doi": "10.1/A"},
    {"id": "b", "style": "apa", "expected_doi": ["10.1/b", "10.1/b2"]},
    {"id": "c", "style": "apa", "expected_doi": None},
    {"id": "d", "style": "ieee", "expected_doi": "10.1/d"},
    {"id": "e", "style": "ieee", "expected_doi": None},
]


@pytest.mark.parametrize(
    "given,normed",
    [
        ("10.1/A", "10.1/a"),
        ("https://doi.org/10.1/A ", "10.1/a"),
        ("http://dx.doi.org/10.1/a", "10.1/a"),
        ("doi:10.1/a", "10.1/a"),
        ("  ", None),
        (None, None),
    ],
)
def test_a_doi_is_compared_as_score_resolver_compares_it(given: str | None, normed: str | None) -> None:
    assert norm(given) == normed


def test_precision_recall_and_null_per_style() -> None:
    # a right (its DOI in another case), b right (the second of its two), c wrongly answered,
    # d left null, e rightly null
    answers = ["10.1/a", "10.1/b2", "10.1/x", None, None]
    per = {k: scores(c) for k, c in counts(QUERIES, answers).items()}
    assert per["overall"] == {
        "n": 5, "pos": 3, "neg": 2, "ans": 3, "ok": 2, "abst": 1,
        "precision": 0.6667, "recall": 0.6667, "null": 0.5, "wrong": 1,
    }  # fmt: skip
    assert (per["apa"]["precision"], per["apa"]["recall"], per["apa"]["null"]) == (0.6667, 1.0, 0.0)
    # nothing answered: no precision to give, not a precision of 0 or 1
    assert (per["ieee"]["precision"], per["ieee"]["recall"], per["ieee"]["null"]) == (None, 0.0, 1.0)


def test_each_query_becomes_its_reference_object_or_its_string(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    lines = [
        {"id": "s", "style": "apa", "unstructured": "Doe, J. (2001). A title.", "expected_doi": None},
        {
            "id": "r",
            "style": "structured",
            "reference": {"author": "Doe", "year": "2001"},
            "expected_doi": None,
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + "\n")
    assert dev_rows(path) == [
        {"id": "s", "reference": {"unstructured": "Doe, J. (2001). A title."}},
        {"id": "r", "reference": {"author": "Doe", "year": "2001"}},
    ]


def _run(rate: float) -> dict[str, Any]:
    return {"references_per_s": rate, "cpu_s": 1.0}


def test_each_ratio_is_the_median_of_the_rounds_ratios() -> None:
    # the load moves between rounds: each round's ratio is of runs side by side
    runs = {
        "working tree": {
            "sqlite": [_run(100), _run(300), _run(200)],
            "postgresql": [_run(60), _run(150), _run(50)],
        },
        "baseline": {
            "sqlite": [_run(100), _run(100), _run(400)],
            "postgresql": [_run(30), _run(100), _run(100)],
        },
    }
    s = summarise(runs, ["working tree", "baseline"])
    assert s["tree_over_baseline"] == {"sqlite": 1.0, "postgresql": 1.5}
    assert s["postgresql_over_sqlite"] == {"working tree": 0.5, "baseline": 0.3}
    assert s["rates"]["working tree"]["sqlite"]["references_per_s"] == 200
